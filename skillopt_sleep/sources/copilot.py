"""GitHub Copilot CLI sessions: ``$COPILOT_HOME/session-state/<session id>/events.jsonl`` (``COPILOT_HOME``
defaults to ``~/.copilot``), one JSON event per line, appended as the session goes (``docs/agents/copilot.md``).

Every event is ``{"type", "data", "id", "timestamp", "parentId"}``, and ``agentId`` when a sub-agent
wrote it. The ones read here:

- ``session.start`` (``data.context.cwd`` / ``.branch``) and ``session.resume``, which every later
  run of the session (``--resume``, ``--continue``, interactive or headless) appends to the same file.
- ``user.message``: ``data.content`` is the text as the person typed it; the date and the instruction
  files the CLI adds are in ``transformedContent`` and ``system.message``, never read. A message with
  a ``source`` (``agent-…`` from another agent, ``skill-…`` injected by a skill) or an autopilot
  continuation was not typed.
- ``system.message``: the system prompt, written after the first user message of a run whenever it
  differs from the last one. Its wording is the only mark of a headless run (``copilot -p``): "You
  are running in non-interactive mode" instead of "You are an interactive tool". A prompt is therefore
  held until the run's ``system.message`` (or its first model turn) shows which it was — a read that
  ends first is checkpointed before it (``base.HOLD``) —; a headless prompt is not counted, and a
  session that starts headless is left out until a prompt is typed.
- ``assistant.message`` (``content``; each model call writes one, the last of a turn is its reply),
  ``tool.execution_start`` (``toolName``, ``arguments``), ``tool.execution_complete``
  (``fileEdits``), ``skill.invoked``.
- Sub-agents (the ``task`` tool) write into the same file: each of their events carries ``agentId``
  (and ``data.parentToolCallId``) and is skipped; their prompt is a ``user.message`` with
  ``source: "agent-<session id>"``.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any, TypedDict
from collections.abc import Iterator

import msgspec

from .. import paths
from .base import HELD, HOLD, IGNORED, USED, TranscriptParser, as_str, clip, open_regular
from .decode import decode_json_line

NAME = "copilot"
# The system prompt of ``copilot -p`` says this; the TUI's says "You are an interactive tool".
HEADLESS_PHRASE = "running in non-interactive mode"
INTERACTIVE_PHRASE = "You are an interactive tool"
FILE_TOOLS = {"create": "path", "edit": "path"}
HEAD_BYTES = 512 * 1024  # ``head_cwds`` reads this much: the start event and the first system prompt
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# A prompt waits for its run's mode until one of these (the model is about to answer or the run ended).
_SETTLING = {
    "assistant.turn_start",
    "assistant.message",
    "tool.execution_start",
    "session.shutdown",
    "session.resume",
    "system.notification",
}
INTERACTIVE = "interactive"
HEADLESS = "headless"

# The fields ``record`` reads, at every depth (``TranscriptParser.fields``): system prompts, tool
# output and usage numbers are checked but never built.
Scalar = str | int | float | bool | None


class _Opaque(TypedDict, total=False):
    """An object where ``record`` expects a string or a list: nothing in it is read."""


class _Context(TypedDict, total=False):
    cwd: Any
    branch: Any


class _Arguments(TypedDict, total=False):
    path: Any
    skill: Any


class _Edit(TypedDict, total=False):
    path: Any


class _Data(TypedDict, total=False):
    context: _Context | list | Scalar  # session.start, session.resume
    cwd: Any  # session.context_changed
    branch: Any
    content: Any  # user.message, assistant.message, system.message
    source: Any
    isAutopilotContinuation: Any
    agentMode: Any
    role: Any
    parentToolCallId: Any
    toolName: Any  # tool.execution_start
    arguments: _Arguments | list | Scalar
    fileEdits: list[_Edit | list | Scalar] | _Opaque | Scalar  # tool.execution_complete
    name: Any  # skill.invoked


class _Record(TypedDict, total=False):
    type: Any
    timestamp: Any
    agentId: Any
    data: _Data | list | Scalar


def session_id_for(path: str) -> str:
    return Path(path).parent.name


def _mode_of(system_prompt: str) -> str | None:
    if HEADLESS_PHRASE in system_prompt:
        return HEADLESS
    if INTERACTIVE_PHRASE in system_prompt:
        return INTERACTIVE
    return None


class CopilotParser(TranscriptParser):
    source = NAME
    fields = msgspec.json.Decoder(_Record)

    def __init__(self, path: str, state: dict[str, Any]) -> None:
        super().__init__(path, state, session_id_for(path))
        mode = state.get("mode")
        self.mode: str | None = mode if mode in (INTERACTIVE, HEADLESS) else None  # of the current run
        self.headless = state.get("headless") is True  # a headless prompt was seen
        # A prompt read but not yet known to be typed or headless: (text, timestamp). It holds the
        # checkpoint (``base.HOLD``) until settled: a checkpoint keeps no text, so a read that ends
        # first leaves it out, and the next harvest reads it again.
        self.pending: tuple[str, Any] | None = None

    def feed(self, line: bytes) -> str:
        before = self.pending
        outcome = super().feed(line)
        if self.pending is None:
            return outcome
        return HELD if self.pending is before else HOLD

    def exclude(self, reason: str) -> str:
        self.pending = None  # nothing of a left-out session waits to be read again
        return super().exclude(reason)

    def record(self, record: dict[str, Any]) -> str:
        kind = record.get("type")
        data = record.get("data")
        if not isinstance(kind, str) or not isinstance(data, dict):
            return "wrong_field_type"
        agent = record.get("agentId")
        if (isinstance(agent, str) and agent) or data.get("parentToolCallId"):
            # a sub-agent's own events; its prompt counts once as the sub-agent's trace
            return "subagent_event" if kind == "user.message" else IGNORED
        settled = self.settle_pending() if kind in _SETTLING else None
        timestamp = record.get("timestamp")
        if kind == "user.message":
            return self._user(data, timestamp)
        if kind == "system.message":
            if data.get("role") == "system" and isinstance(data.get("content"), str):
                self.mode = _mode_of(data["content"]) or self.mode
            return self.settle_pending() or USED
        if kind in ("session.start", "session.resume"):
            context = data.get("context")
            if isinstance(context, dict):
                branch = as_str(context.get("branch"))
                if branch:
                    self.builder.branch = clip(branch, 300)
                status = self.project_cwd(context.get("cwd"), first=kind == "session.start")
                if status != USED:
                    return status
            return settled or USED  # not a time of the session's work: a digest spans prompts and replies
        if kind == "session.context_changed":
            return self.project_cwd(data.get("cwd"))
        if kind == "assistant.message":
            text = data.get("content")
            if not isinstance(text, str):
                return "wrong_field_type"
            if not self.builder.in_turn:
                return settled or IGNORED  # a headless turn, or an answer to a notification
            self.builder.touch(timestamp)
            self.builder.new_reply(text.strip())
            return USED
        if kind == "tool.execution_start":
            return settled or self._tool(data, timestamp)
        if kind == "tool.execution_complete":
            return self._edits(data)
        if kind == "skill.invoked":
            name = as_str(data.get("name"))
            if name and self.builder.in_turn:
                self.builder.add_skill(name)
                return USED
            return IGNORED
        if kind == "system.notification":
            self.builder.close_turn()  # a background task reporting: what answers it is no reply to the person
            return settled or IGNORED
        return settled or IGNORED  # usage records, turn markers, model changes, compaction, ...

    def _user(self, data: dict[str, Any], timestamp: Any) -> str:
        text = data.get("content")
        if not isinstance(text, str):
            return "wrong_field_type"
        settled = self.settle_pending()
        source = data.get("source")
        if source is not None and not isinstance(source, str):
            return settled or "wrong_field_type"
        if (isinstance(source, str) and source and source != "user") or data.get("isAutopilotContinuation") is True:
            self.builder.close_turn()  # another agent, a skill or autopilot speaking
            return settled or IGNORED
        if data.get("agentMode") == "shell":
            return settled or IGNORED  # a shell command run from the prompt: nothing asked of the agent
        text = text.strip()
        if not text:
            return settled or IGNORED
        self.pending = (text, timestamp)
        return settled or USED

    def settle_pending(self) -> str | None:
        """Count the held prompt as typed, or as headless (the outcome then returned)."""
        if self.pending is None:
            return None
        text, timestamp = self.pending
        self.pending = None
        self.builder.touch(timestamp)
        if self.mode == HEADLESS:
            self.builder.close_turn()
            first = not self.headless and not (self.builder.prompt_base or self.builder.n_user_turns)
            self.headless = True
            return "headless_session" if first else "headless_turn"
        self.builder.add_prompt(text)
        return None

    def _tool(self, data: dict[str, Any], timestamp: Any) -> str:
        name = as_str(data.get("toolName"))
        if not name:
            return "wrong_field_type"
        if not self.builder.in_turn:
            return IGNORED
        self.builder.touch(timestamp)
        self.builder.add_tool(name)
        arguments = data.get("arguments")
        if isinstance(arguments, dict):
            field = FILE_TOOLS.get(name)
            target = as_str(arguments.get(field)) if field else None
            if target:
                self.builder.add_file(target)
            skill = as_str(arguments.get("skill")) if name == "skill" else None
            if skill:
                self.builder.add_skill(skill)
        return USED

    def _edits(self, data: dict[str, Any]) -> str:
        edits = data.get("fileEdits")
        if not isinstance(edits, list) or not self.builder.in_turn:
            return IGNORED
        for edit in edits:
            target = as_str(edit.get("path")) if isinstance(edit, dict) else None
            if target:
                self.builder.add_file(target)
        return USED

    def extra_state(self) -> dict[str, Any]:
        return {"mode": self.mode, "headless": self.headless}

    def left_out(self) -> bool:
        started_headless = self.headless and not (self.builder.prompt_base or self.builder.n_user_turns)
        return self.excluded is not None or started_headless


def _scan(path: Path, skipped: Counter[str]) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as entries:
            return sorted(entries, key=lambda e: e.name)
    except FileNotFoundError:
        return []
    except OSError:
        skipped["unreadable_dir"] += 1
        return []


class CopilotSource:
    name = NAME
    whole_file = False

    def default_home(self) -> Path:
        return paths.copilot_home()

    def discover(self, home: Path, skipped: Counter[str]) -> Iterator[Path]:
        for entry in _scan(home / "session-state", skipped):
            if not _UUID.match(entry.name):
                continue  # .session-operation-locks and the like
            events = Path(entry.path) / "events.jsonl"
            if os.path.lexists(events):
                yield events  # the harvest checks that it is a regular file

    def parser(self, path: str, state: dict[str, Any]) -> CopilotParser:
        return CopilotParser(path, state)

    def head_cwds(self, path: Path) -> set[str]:
        """The cwd of ``session.start``, unless the session's first run was headless."""
        try:
            with open_regular(path) as handle:
                head = handle.read(HEAD_BYTES)
        except OSError:
            return set()
        cwd = ""
        for line in head.split(b"\n")[:50]:
            if not line.startswith(b"{") or b'"agentId"' in line:
                continue
            if b'"session.start"' not in line and b'"system.message"' not in line:
                continue
            status, record = decode_json_line(line)
            data = record.get("data") if status == "ok" else None
            if not isinstance(data, dict):
                continue
            if record.get("type") == "session.start":
                context = data.get("context")
                found = context.get("cwd") if isinstance(context, dict) else None
                cwd = found if isinstance(found, str) else ""
            elif record.get("type") == "system.message" and isinstance(data.get("content"), str):
                if _mode_of(data["content"]) == HEADLESS:
                    return set()
                break
        return {cwd} if cwd else set()
