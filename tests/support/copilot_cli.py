"""The real GitHub Copilot CLI against a local fake model, for the recorder and the real_clis test.

The CLI takes a "bring your own key" provider from the environment (``copilot help environment``):
``COPILOT_PROVIDER_TYPE=anthropic`` + ``COPILOT_PROVIDER_BASE_URL`` points it at a
``FakeAnthropic``, and ``COPILOT_OFFLINE=true`` keeps it from every other network call (GitHub
login, telemetry, updates). No GitHub account is involved.

The npm package is a loader for a platform binary that unpacks its JavaScript into a package cache
on first run; ``COPILOT_PKG_CACHE_HOME`` keeps that cache beside the install, so a throwaway HOME
does not unpack 200 MB again.

``scripts/agent_clis.versions`` names the version; ``tests.support.agent_clis`` finds the install
(skips, or fails under ``SKILLOPT_REQUIRE_REAL_CLIS=1``, when it is missing).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.support.agent_clis import install_dir, installed_bin, pinned, real_agent_cli
from tests.support.anthropic_server import FakeAnthropic
from tests.support.http_base import Reply, ToolCall

NAME = "copilot"
MODEL = "claude-sonnet-4-5"


def version() -> str:
    return pinned()[NAME][1]


def find_cli() -> str | None:
    path = installed_bin(NAME)
    return str(path) if path else None


def copilot_cli() -> str:
    """The ``copilot`` executable, or skip (fail under SKILLOPT_REQUIRE_REAL_CLIS=1)."""
    return real_agent_cli(NAME)


def copilot_env(root: Path, fake: FakeAnthropic, *, trust: tuple[Path, ...] = ()) -> dict[str, str]:
    """A throwaway HOME whose ``~/.copilot`` trusts ``trust`` (no folder-trust dialog) and an
    environment that sends every model call to ``fake``."""
    from tests.support.real_clients import client_env

    cache = install_dir(NAME)
    env = client_env(
        root,
        COPILOT_OFFLINE="true",
        COPILOT_AUTO_UPDATE="false",
        COPILOT_PROVIDER_TYPE="anthropic",
        COPILOT_PROVIDER_BASE_URL=fake.root,
        COPILOT_PROVIDER_API_KEY=fake.key,
        COPILOT_MODEL=MODEL,
        COPILOT_PKG_CACHE_HOME=str(cache / "unpacked"),
        XDG_STATE_HOME=str(root / "home" / ".local" / "state"),
    )
    state = Path(env["HOME"]) / ".copilot"
    state.mkdir(parents=True, exist_ok=True)
    (state / "config.json").write_text(json.dumps({"trustedFolders": [str(p) for p in trust]}), encoding="utf-8")
    return env


# -- the scripted model ---------------------------------------------------------------------------

_LEADING_TAGS = re.compile(r"^\s*<([a-z_]+)>.*?</\1>\s*", re.S)
SUBAGENT_PROMPT = "Count the TODO markers under src/ and report the number."


def typed_text(body: dict[str, Any]) -> str:
    """The last user text of a Messages request without the tags the CLI puts before it
    (``<current_datetime>``, reminders)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        texts = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        for text in reversed(texts):
            while True:
                stripped = _LEADING_TAGS.sub("", text, count=1)
                if stripped == text:
                    break
                text = stripped
            if text.strip():
                return text.strip()
        if texts or any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks):
            return ""
    return ""


def _last_tool(body: dict[str, Any]) -> str | None:
    """The name of the tool whose result ends the request, if it ends with one."""
    messages = body.get("messages") or []
    if not messages or not isinstance(messages[-1].get("content"), list):
        return None
    results = [b for b in messages[-1]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    if not results:
        return None
    wanted = results[-1].get("tool_use_id")
    for message in reversed(messages[:-1]):
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id") == wanted:
                return str(block.get("name"))
    return "?"


def copilot_model(project: Path):
    """A responder: reads a file, writes one, delegates to a sub-agent when asked; echoes the rest."""

    def respond(body: dict[str, Any]) -> str | Reply:
        tool = _last_tool(body)
        if tool == "task":
            return "The helper counted 3 TODO markers."
        if tool is not None:
            return f"Done with {tool}."
        text = typed_text(body)
        if text.startswith(SUBAGENT_PROMPT[:20]):
            return "3 TODO markers."
        if text.startswith("read "):
            return Reply("Reading it.", [ToolCall("view", {"path": str(project / "src" / "app.py")})])
        if text.startswith("write "):
            notes = "# v1.2\n- retry on timeout\n"
            return Reply("Writing it.", [ToolCall("create", {"path": str(project / "NOTES.md"), "file_text": notes})])
        if "delegate" in text:
            call = {
                "description": "Count TODO markers",
                "prompt": SUBAGENT_PROMPT,
                "agent_type": "explore",
                "name": "todo-counter",
                "mode": "sync",
            }
            return Reply("Delegating that.", [ToolCall("task", call)])
        return "Done: " + " ".join(text.split())[:80]

    return respond
