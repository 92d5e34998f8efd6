"""Importing a provider SDK is the machine's time, not the provider's: on a busy machine the
import alone can outlast the preflight's time limit. It happens when the backend is built, before
any call's clock starts, and a slow one is named as a local stall in the night's report."""

from __future__ import annotations

import importlib
import time
from pathlib import Path

import pytest

from skillopt_sleep.backends import client as client_module
from skillopt_sleep.backends import sdk_base
from skillopt_sleep.config import Config
from skillopt_sleep.night import NightOptions, run_night

from tests.support.tasks import make_tasks, write_tasks_file

PREFLIGHT_LIMIT = 2.0  # the preflight's time limit in this test (60 s in the product)
IMPORT_TAKES = PREFLIGHT_LIMIT + 1.5  # an import that outlasts it


@pytest.fixture
def slow_sdk_import(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``import_module("anthropic")`` (what the backend uses to load its SDK) takes longer than the
    preflight's time limit, as on a machine under heavy load; returns the threads it ran on."""
    real = importlib.import_module
    threads: list[str] = []

    def slow(name: str, *args, **kwargs):
        if name == "anthropic":
            import threading

            threads.append(threading.current_thread().name)
            time.sleep(IMPORT_TAKES)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", slow)
    monkeypatch.setattr(client_module, "PREFLIGHT_TIMEOUT", PREFLIGHT_LIMIT)
    return threads


def test_a_slow_sdk_import_is_a_local_stall_not_a_provider_timeout(
    anthropic_server, slow_sdk_import, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sdk_base, "SLOW_IMPORT", 1.0)  # name stalls from 1 s (the product: longer)
    project = tmp_path / "proj"
    project.mkdir()
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks(), reviewed=True)
    config = Config(
        backend=f"anthropic:base_url={anthropic_server.base_url},api_key={anthropic_server.key}",
        model="claude-haiku-4-5",
        agent="claude",
    )
    lines: list[str] = []
    report = run_night(
        NightOptions(project=project, config=config, mode="dry-run", tasks_file=tasks_file, progress=lines.append)
    )
    assert report.status != "running"
    # the preflight reached the provider: the import did not use up its time
    assert anthropic_server.seen("/v1/messages")
    # the SDK was imported once, before any call (not on a call's thread)
    assert slow_sdk_import and not any(t.startswith("skillopt-call") for t in slow_sdk_import)
    stall = [n for n in report.notes if n.startswith("importing the anthropic SDK took")]
    assert stall and "local" in stall[0], report.notes
    assert any(line.startswith("importing the anthropic SDK took") for line in lines)


def test_an_sdk_that_cannot_be_imported_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, home: Path
) -> None:
    from skillopt_sleep.backends.assembly import build_models
    from skillopt_sleep.errors import UserError

    real = importlib.import_module

    def missing(name: str, *args, **kwargs):
        if name == "openai":
            raise ModuleNotFoundError("No module named 'openai'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", missing)
    with pytest.raises(UserError) as info:
        build_models(Config(backend="openai:api_key=none,base_url=http://127.0.0.1:9", agent="claude"))
    assert "\n" not in info.value.message and "the openai SDK cannot be imported" in info.value.message
