"""Shared fixtures: every test runs with its own skillopt-sleep home."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private SKILLOPT_SLEEP_HOME (config, state, cache) for each test, and the offline ``sim``
    backend unless a test chooses another: the product default (``auto``) depends on what is on
    PATH and which keys are set, and no test may silently depend on that."""
    path = tmp_path_factory.mktemp("skillopt-home")
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(path))
    for key in ("SKILLOPT_SLEEP_MODEL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("SKILLOPT_SLEEP_BACKEND", "sim")
    return path
