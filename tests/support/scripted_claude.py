"""A real ``claude -p`` session driven by a scripted model (tests/support/anthropic_server.py).

``ScriptedModel`` plays the model the way the plugin's ``/skillopt-sleep`` skill asks: it reads the
expanded skill text and the user's arguments from the request, picks the table row for the action,
and answers with exactly the Bash ``tool_use`` that row prescribes (the n-th command of the row
after n tool results, so a row that asks first and acts after the user agrees takes two sessions);
once the tool result arrives it answers with text. Nothing is hard-coded about the command: a skill
that prescribes something Claude Code does not permit fails the test that drives it.

``run_session`` runs one session and returns what happened: each Bash call with its tool result,
and the permission denials Claude Code reported.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.anthropic_server import FakeAnthropic
from tests.support.http_base import Reply, ToolCall

ARGUMENTS = re.compile(r"with these arguments: `([^`]*)`")


def user_texts(body: dict[str, Any]) -> list[str]:
    texts = []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        texts += [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    return texts


def skill_text(body: dict[str, Any]) -> str:
    """The expanded skill (or command) text in the conversation, or ""."""
    return next((t for t in user_texts(body) if ARGUMENTS.search(t)), "")


def prescribed(text: str) -> list[str]:
    """The commands the skill's table prescribes for the arguments it was invoked with."""
    words = ARGUMENTS.search(text).group(1).split()
    action, rest = (words[0] if words else ""), " ".join(words[1:])
    for line in text.splitlines():
        if not line.startswith("| "):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 2:
            continue
        names = re.findall(r"`([^`]*)`", cells[0])
        if (action and action in names) or (not action and cells[0].startswith("(none)")):
            commands = [c for c in re.findall(r"`([^`]*)`", cells[1]) if not c.startswith("/")]  # not a slash command
            return [" ".join(c.replace("<remaining arguments>", rest).split()) for c in commands]
    raise AssertionError(f"the skill prescribes no command for {action!r}")


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        block
        for message in body.get("messages", [])
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


class ScriptedModel:
    def __call__(self, body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            return Reply("ok")  # a side request (a title, a summary): no tools to call
        last = (body.get("messages") or [{}])[-1]
        content = last.get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return Reply("That is what skillopt-sleep printed.")
        text = skill_text(body)
        if not text:
            return Reply("There is no skillopt-sleep request here.")
        commands = prescribed(text)
        done = len(_tool_results(body))
        if done >= len(commands):
            return Reply("Nothing more to run.")
        call = {"command": commands[done], "description": "Run skillopt-sleep"}
        timeout = re.search(r"timeout of (\d+) ms", text)
        if timeout:
            call["timeout"] = int(timeout.group(1))
        return Reply("", [ToolCall("Bash", call)])


@dataclass
class Session:
    calls: list[tuple[str, str, bool]] = field(default_factory=list)  # (command, tool result text, is_error)
    denials: list[Any] = field(default_factory=list)
    skill: str = ""  # the expanded skill text the model received
    stdout: str = ""
    stderr: str = ""


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


def run_session(claude: str, prompt: str, env: dict[str, str], cwd: Path, *extra: str, timeout: float = 900) -> Session:
    with FakeAnthropic(key="k") as server:
        server.responder = ScriptedModel()
        env = dict(env, ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="k")
        out = subprocess.run(
            [claude, "-p", prompt, "--output-format", "stream-json", "--verbose", "--max-turns", "4", *extra],
            capture_output=True,
            text=True,
            env=env,
            cwd=str(cwd),
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        bodies = [seen.body for seen in server.seen("/v1/messages") if isinstance(seen.body, dict)]
    session = Session(stdout=out.stdout, stderr=out.stderr)
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    for event in events:
        if event.get("type") == "result":
            session.denials += event.get("permission_denials") or []
    final = max(bodies, key=lambda b: len(b.get("messages", [])), default={})
    session.skill = skill_text(final)
    uses = {
        block["id"]: block["input"].get("command", "")
        for message in final.get("messages", [])
        if message.get("role") == "assistant" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use"
    }
    for block in _tool_results(final):
        session.calls.append(
            (uses.get(block.get("tool_use_id"), "?"), _result_text(block), bool(block.get("is_error")))
        )
    return session
