"""Fixtures for the backend tests: fake provider servers, fake CLIs, an injectable sleep."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.support import fake_cli
from tests.support.anthropic_server import FakeAnthropic
from tests.support.openai_server import FakeOpenAI

from skillopt_sleep.backends.retry import RetryPolicy


class FakeSleep:
    """Records requested sleeps instead of sleeping."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def sleep() -> FakeSleep:
    return FakeSleep()


@pytest.fixture
def retry(sleep: FakeSleep) -> RetryPolicy:
    return RetryPolicy(attempts=4, base_delay=1.0, max_delay=8.0, max_total_wait=60.0, sleep=sleep)


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def anthropic_server():
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def openai_server():
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def fake_clis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Fake ``claude`` and ``codex`` first on PATH, with the test's own TMPDIR and CODEX_HOME;
    returns the run log path."""
    bin_dir = tmp_path / "bin"
    fake_cli.install(bin_dir)
    log = tmp_path / "cli-runs.jsonl"
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    (tmp_path / "user-codex-home").mkdir()
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "user-codex-home"))
    monkeypatch.setenv("PATH", bin_dir.as_posix() + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("FAKE_CLI_LOG", str(log))
    monkeypatch.setenv("FAKE_CLI_MODE", "ok")
    return log
