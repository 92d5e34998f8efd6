"""The agent CLIs of ``scripts/agent_clis.versions`` (one line per agent: name, npm package,
version), for the tests that record a session with the real CLI.

Each is installed, by its ordinary client, into the CI cache as
``${SKILLOPT_CI_CACHE:-~/.cache/skillopt-sleep-ci}/npm-<agent>-<version>``:

    npm install --prefix ~/.cache/skillopt-sleep-ci/npm-gemini-0.61.0 @google/gemini-cli@0.61.0

``real_agent_cli("gemini")`` returns the executable's path, or skips with that command as the
reason — unless ``SKILLOPT_REQUIRE_REAL_CLIS=1`` (as in ``tests.support.real_clients``), which
turns the skip into a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VERSIONS_FILE = REPO / "scripts" / "agent_clis.versions"


def pinned() -> dict[str, tuple[str, str]]:
    """agent -> (npm package, version)."""
    found: dict[str, tuple[str, str]] = {}
    for line in VERSIONS_FILE.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) == 3 and not fields[0].startswith("#"):
            found[fields[0]] = (fields[1], fields[2])
    return found


def install_dir(agent: str) -> Path:
    cache = Path(os.environ.get("SKILLOPT_CI_CACHE") or Path.home() / ".cache" / "skillopt-sleep-ci")
    return cache / f"npm-{agent}-{pinned()[agent][1]}"


def installed_bin(agent: str) -> Path | None:
    path = install_dir(agent) / "node_modules" / ".bin" / agent
    return path if path.exists() and os.access(path, os.X_OK) else None


def install_command(agent: str) -> str:
    package, version = pinned()[agent]
    return f"npm install --prefix {install_dir(agent)} {package}@{version}"


def real_agent_cli(agent: str) -> str:
    """Path of the pinned ``agent`` CLI, or skip (fail under SKILLOPT_REQUIRE_REAL_CLIS=1)."""
    path = installed_bin(agent)
    if path is not None:
        return str(path)
    reason = f"the real {agent} CLI is not installed ({install_command(agent)})"
    if os.environ.get("SKILLOPT_REQUIRE_REAL_CLIS") == "1":
        pytest.fail(reason + "; SKILLOPT_REQUIRE_REAL_CLIS=1 makes this a failure")
    pytest.skip(reason)
