"""The real ``pi`` CLI (``@mariozechner/pi-coding-agent``) pointed at a ``FakeAnthropic``.

``pi_cli()`` finds the release pinned in ``scripts/agent_clis.versions`` (a line ``pi <package>
<version>``), installed by npm into ``${SKILLOPT_CI_CACHE:-~/.cache/skillopt-sleep-ci}/npm-pi-<version>``;
missing, the test skips with the install command as the reason — unless
``SKILLOPT_REQUIRE_REAL_CLIS=1``, which turns the skip into a failure (as ``real_clients`` does).

``pi_env(root, fake)`` is a throwaway environment (``real_clients.client_env``) whose
``~/.pi/agent/models.json`` declares a provider ``fake`` speaking ``anthropic-messages`` to the fake,
and whose ``settings.json`` makes its model the default. ``PI_OFFLINE`` skips pi's startup network
calls (version check, tool downloads) and ``PI_TELEMETRY=0`` its install telemetry.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.anthropic_server import FakeAnthropic

REPO = Path(__file__).resolve().parents[2]
VERSIONS_FILE = REPO / "scripts" / "agent_clis.versions"
MODEL = "claude-sonnet-4-5"


def pinned(agent: str = "pi") -> tuple[str, str]:
    """(npm package, version) of ``agent``; ``KeyError`` when the file does not name it."""
    for line in VERSIONS_FILE.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0] == agent:
            return fields[1], fields[2]
    raise KeyError(f"{agent} is not in {VERSIONS_FILE}")


def install_dir(agent: str = "pi") -> Path:
    cache = os.environ.get("SKILLOPT_CI_CACHE")
    root = Path(cache) if cache else Path.home() / ".cache" / "skillopt-sleep-ci"
    return root / f"npm-{agent}-{pinned(agent)[1]}"


def installed_cli(agent: str = "pi") -> str | None:
    path = install_dir(agent) / "node_modules" / ".bin" / agent
    return str(path) if path.exists() and os.access(path, os.X_OK) else None


def pi_cli() -> str:
    """Path of the pinned ``pi``, or skip (fail under ``SKILLOPT_REQUIRE_REAL_CLIS=1``)."""
    path = installed_cli("pi")
    if path:
        return path
    package, version = pinned("pi")
    reason = f"the real pi CLI is not installed (npm install --prefix {install_dir('pi')} {package}@{version})"
    if os.environ.get("SKILLOPT_REQUIRE_REAL_CLIS") == "1":
        pytest.fail(reason + "; SKILLOPT_REQUIRE_REAL_CLIS=1 makes this a failure")
    pytest.skip(reason)


def pi_version(pi: str) -> str:
    out = subprocess.run([pi, "--version"], capture_output=True, text=True, timeout=60, env=pi_env_base())
    return out.stdout.strip() or out.stderr.strip()


def pi_env_base() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}


def pi_env(root: Path, fake: FakeAnthropic, **extra: str) -> dict[str, str]:
    from tests.support.real_clients import client_env

    env = client_env(root, PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1", PI_TELEMETRY="0", **extra)
    agent = Path(env["HOME"]) / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    provider = {"baseUrl": fake.root, "api": "anthropic-messages", "apiKey": fake.key, "models": [{"id": MODEL}]}
    (agent / "models.json").write_text(json.dumps({"providers": {"fake": provider}}, indent=2), encoding="utf-8")
    settings = {
        "defaultProvider": "fake",
        "defaultModel": MODEL,
        "enableInstallTelemetry": False,
        "quietStartup": True,
    }
    (agent / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    return env
