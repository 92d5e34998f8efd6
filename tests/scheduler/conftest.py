import os

import pytest

from tests.support.scheduler_tools import FakeTools, fake_tools  # noqa: F401  (a fixture)


@pytest.fixture(autouse=True)
def restore_environ():
    """A scheduled job rewrites os.environ (locations, env file, PATH): give each test its own."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def cron(fake_tools: FakeTools, monkeypatch: pytest.MonkeyPatch) -> FakeTools:  # noqa: F811
    """The fake scheduler tools with no systemd user manager: `schedule` picks cron."""
    monkeypatch.setenv("SKILLOPT_FAKE_NO_USER_MANAGER", "1")
    return fake_tools
