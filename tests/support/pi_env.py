"""The real ``pi`` CLI (``@mariozechner/pi-coding-agent``) pointed at a ``FakeAnthropic``.

``pi_cli()`` finds the release pinned in ``scripts/agent_clis.versions`` through
``tests.support.agent_clis`` (skip, or failure under ``SKILLOPT_REQUIRE_REAL_CLIS=1``, when absent).

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

from tests.support.agent_clis import installed_bin, real_agent_cli
from tests.support.anthropic_server import FakeAnthropic

MODEL = "claude-sonnet-4-5"


def installed_cli() -> str | None:
    """The pinned ``pi`` when installed (``tests.support.agent_clis``)."""
    path = installed_bin("pi")
    return str(path) if path else None


def pi_cli() -> str:
    """Path of the pinned ``pi``, or skip (fail under ``SKILLOPT_REQUIRE_REAL_CLIS=1``)."""
    return real_agent_cli("pi")


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
