"""Coding-agent CLIs other than Claude Code and Codex, for tests that drive them.

``scripts/agent_clis.versions`` names each one (a line ``<agent> <npm package> <version>``); it is
installed with ``npm install --prefix <cache>/npm-<agent>-<version> <package>@<version>``, the
cache being ``$SKILLOPT_CLI_CACHE`` or ``~/.cache/skillopt-sleep-ci``. ``agent_cli("opencode")``
returns the executable's path, or skips the test with the reason — unless
``SKILLOPT_REQUIRE_REAL_CLIS=1``, which turns the skip into a failure (as ``real_clients`` does).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VERSIONS_FILE = REPO / "scripts" / "agent_clis.versions"


def pinned(agent: str) -> tuple[str, str]:
    """(npm package, version) of ``agent``; ``KeyError`` when the file does not name it."""
    for line in VERSIONS_FILE.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0] == agent:
            return fields[1], fields[2]
    raise KeyError(f"{agent} is not in {VERSIONS_FILE}")


def cache_root() -> Path:
    configured = os.environ.get("SKILLOPT_CLI_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "skillopt-sleep-ci"


def install_command(agent: str) -> str:
    package, version = pinned(agent)
    return f"npm install --prefix {cache_root()}/npm-{agent}-{version} {package}@{version}"


def installed(agent: str, executable: str | None = None) -> Path:
    """Where the pinned release's executable is once installed (it may not be)."""
    _, version = pinned(agent)
    return cache_root() / f"npm-{agent}-{version}" / "node_modules" / ".bin" / (executable or agent)


def agent_cli(agent: str, executable: str | None = None) -> str:
    """Path of the pinned ``agent`` CLI, or skip (fail under ``SKILLOPT_REQUIRE_REAL_CLIS=1``)."""
    path = installed(agent, executable)
    if path.exists() and os.access(path, os.X_OK):
        return str(path)
    reason = f"the real {agent} CLI is not installed ({install_command(agent)})"
    if os.environ.get("SKILLOPT_REQUIRE_REAL_CLIS") == "1":
        pytest.fail(reason + "; SKILLOPT_REQUIRE_REAL_CLIS=1 makes this a failure")
    pytest.skip(reason)
