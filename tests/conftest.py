"""Shared fixtures: every test runs with its own skillopt-sleep home. The run's summary ends with
the live tests' wall time, so CI's log shows what the local model server costs.

Tests run in the order CI checks the house: the formatter, the linter and mypy
(``test_house.py``), then the default suite, then the tests that drive the real CLIs, the slow
ones and the live ones (their markers), each group in its collected order."""

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
    # CLAUDECODE / CODEX_THREAD_ID: set when the suite itself runs inside an agent's tool, where
    # the engine would name the agent's commands instead of the terminal's
    for key in ("SKILLOPT_SLEEP_MODEL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CLAUDECODE", "CODEX_THREAD_ID"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("SKILLOPT_SLEEP_BACKEND", "sim")
    # the data dirs of the agents whose default lies in the machine's home: an empty one per test
    monkeypatch.setenv("GEMINI_CLI_HOME", str(path / "gemini-cli-home"))
    monkeypatch.setenv("COPILOT_HOME", str(path / "copilot-home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(path / "xdg-data"))  # OpenCode's database lies under it
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(path / "pi-agent"))
    # Cursor's and VS Code's User dirs lie under it on Linux; a portable VS Code names its own
    monkeypatch.setenv("XDG_CONFIG_HOME", str(path / "xdg-config"))
    monkeypatch.delenv("VSCODE_PORTABLE", raising=False)
    return path


_LIVE: dict[str, list] = {"seconds": [], "ran": []}

HOUSE = ("test_the_tree_is_formatted", "test_ruff_check_finds_nothing", "test_mypy_finds_nothing")
GROUPS = ("house checks", "default suite", "real_clis", "slow", "live")
# per group: the tests that ran and the seconds their setup, call and teardown took
_GROUP_SECONDS: dict[str, float] = dict.fromkeys(GROUPS, 0.0)
_GROUP_TESTS: dict[str, int] = dict.fromkeys(GROUPS, 0)
_GROUP_OF: dict[str, str] = {}


def rank(item: pytest.Item) -> tuple[int, int]:
    """Where ``item`` runs (module docstring): the house checks first, in CI's order, then the
    default suite, then each marked group."""
    if item.path.name == "test_house.py" and item.name in HOUSE:
        return 0, HOUSE.index(item.name)
    for place, marker in enumerate(("real_clis", "slow", "live"), start=2):
        if item.get_closest_marker(marker) is not None:
            return place, 0
    return 1, 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=rank)  # stable: each group keeps its collected order
    _GROUP_OF.update({item.nodeid: GROUPS[rank(item)[0]] for item in items})


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    group = _GROUP_OF.get(report.nodeid)
    if group is not None:
        _GROUP_SECONDS[group] += report.duration
        _GROUP_TESTS[group] += report.when == "call" or (report.when == "setup" and report.skipped)
    if "live" in report.keywords:
        _LIVE["seconds"].append(report.duration)  # setup, call and teardown (server start and stop)
        if report.when == "call" and not report.skipped:
            _LIVE["ran"].append(report.nodeid)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    ran = [f"{g} {_GROUP_TESTS[g]} in {_GROUP_SECONDS[g]:.0f} s" for g in GROUPS if _GROUP_TESTS[g]]
    if ran:
        terminalreporter.write_line("time per group (setup, call and teardown): " + "; ".join(ran))
    if _LIVE["seconds"]:
        terminalreporter.write_line(
            f"live tests: {len(_LIVE['ran'])} ran in {sum(_LIVE['seconds']):.1f} s wall "
            "(with the model server's start and stop)"
        )
