"""pi (``@mariozechner/pi-coding-agent``) sessions: ``$PI_CODING_AGENT_DIR/sessions/--<cwd>--/
<timestamp>_<uuid>.jsonl`` (``~/.pi/agent`` by default; ``docs/agents/pi.md``).

One JSON entry per line, appended: a ``session`` header (id, timestamp, cwd, ``parentSession`` for
a fork), then ``message`` entries whose ``message.role`` is ``user`` / ``assistant`` /
``toolResult`` (and ``bashExecution``, ``custom``, ...), ``compaction``, ``branch_summary``,
``custom_message``, ``model_change``, ... Entries form a tree through ``parentId`` (``/tree``
branches in place); every typed prompt on every branch is counted, in file order.

Injected context never reaches the file: AGENTS.md and the system prompt are sent, not stored.
A ``/skill:name args`` prompt is stored expanded (``<skill name=… location=…>…</skill>`` then the
args): the skill is noted and the prompt is what was typed, ``/skill:name args``. A prompt
template (``/name args``) is stored expanded with no trace of the template, so its expansion is
taken as the prompt.

Headless runs (``pi -p``) write the same entries as the TUI: no field tells them apart. What does:
a print-mode run sends its prompt right after starting, so the first prompt of its file follows
the header within ``HEADLESS_GAP`` — a person at the TUI has not typed one by then. Such a
session is left out. A headless turn appended to an older session (``pi -p --continue``) cannot
be told from a typed one and is counted.

A fork (``--fork``, ``/fork``) copies the entries it was forked from into the new file, before
anything new: copied entries are older than the new header and are skipped, so the original
session's prompts are counted once, in their own file. pi has no sub-agents of its own.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypedDict

import msgspec

from .. import paths
from ..types import parse_time
from .base import IGNORED, USED, TranscriptParser, as_str, open_regular, session_id_for

NAME = "pi"
# A print-mode run's first prompt follows its header by about a tenth of a second; a typed one
# waits for the TUI to start and for the person to type.
HEADLESS_GAP = timedelta(seconds=2)
HEAD_LINES = 16  # lines ``head_cwds`` reads at most, looking for the first prompt
_SKILL_HEAD = re.compile(r"<skill name=\"([^\"\n]{1,200})\" location=\"[^\"\n]*\">\n")
_SKILL_END = "\n</skill>"
_FILE_TOOLS = {"read", "write", "edit"}


class _Block(TypedDict, total=False):
    type: Any
    text: Any
    name: Any
    arguments: Any


class _Opaque(TypedDict, total=False):
    """An object where a string or a list is expected: nothing in it is read."""


Scalar = str | int | float | bool | None


class _Message(TypedDict, total=False):
    role: Any
    content: str | list[_Block | list | Scalar] | _Opaque | int | float | bool | None


class _Entry(TypedDict, total=False):
    type: Any
    timestamp: Any
    cwd: Any
    parentSession: Any
    message: _Message | list | Scalar


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    return "\n".join(
        block["text"]
        for block in content
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    )


def skill_prompt(text: str) -> tuple[str, str] | None:
    """``(skill, what was typed)`` for a ``/skill:name args`` prompt pi stored expanded, as pi
    parses it back (``parseSkillBlock``): the block ends at the first ``</skill>`` line followed by
    the end or by a blank line and the args. Found with ``str.find``, never a backtracking scan."""
    head = _SKILL_HEAD.match(text)
    if not head:
        return None
    at = text.find(_SKILL_END, head.end())
    while at != -1:
        end = at + len(_SKILL_END)
        if end == len(text) or (text.startswith("\n\n", end) and len(text) > end + 2):
            args = text[end + 2 :].strip()
            return head.group(1), f"/skill:{head.group(1)}" + (f" {args}" if args else "")
        at = text.find(_SKILL_END, at + 1)
    return None


class PiParser(TranscriptParser):
    source = NAME
    fields = msgspec.json.Decoder(_Entry)

    def __init__(self, path: str, state: dict[str, Any]) -> None:
        super().__init__(path, state, session_id_for(path))
        started = state.get("started")
        self.started: str | None = started if isinstance(started, str) else None  # the header's time
        self.forked = state.get("forked") is True
        self.prompted = state.get("prompted") is True  # the first prompt was judged

    def record(self, record: dict[str, Any]) -> str:
        kind = record.get("type")
        if not isinstance(kind, str):
            return "wrong_field_type"
        timestamp = record.get("timestamp")
        if kind == "session":
            return self._header(record)
        if self.forked and self._copied(timestamp):
            return IGNORED  # an entry a fork copied from its parent session
        if kind == "message":
            message = record.get("message")
            if not isinstance(message, dict):
                return "wrong_field_type"
            return self._message(message, timestamp)
        if kind in ("compaction", "branch_summary"):
            self.builder.close_turn()
            return USED
        return IGNORED  # model/thinking changes, labels, names, extension entries

    def _header(self, record: dict[str, Any]) -> str:
        timestamp = as_str(record.get("timestamp"))
        if timestamp and self.started is None:
            self.started = timestamp
        if record.get("parentSession"):
            self.forked = True
        return self.project_cwd(record.get("cwd"), first=True)

    def _copied(self, timestamp: Any) -> bool:
        when = parse_time(timestamp) if isinstance(timestamp, str) else None
        start = parse_time(self.started) if self.started else None
        return when is not None and start is not None and when < start

    def _message(self, message: dict[str, Any], timestamp: Any) -> str:
        role = message.get("role")
        if role == "user":
            text = _text_of(message.get("content"))
            if text is None:
                return "wrong_field_type"
            return self._prompt(text.strip(), timestamp)
        if role == "assistant":
            return self._reply(message.get("content"), timestamp)
        if role in ("toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary"):
            return IGNORED
        return "wrong_field_type" if not isinstance(role, str) else IGNORED

    def _prompt(self, text: str, timestamp: Any) -> str:
        if not text:
            return IGNORED
        if not self.prompted:
            self.prompted = True
            if self._headless(timestamp):
                return self.exclude("headless_session")
        skill = skill_prompt(text)
        if skill:
            name, text = skill
            self.builder.add_skill(name)
        self.builder.touch(timestamp)
        self.builder.add_prompt(text)
        return USED

    def _headless(self, timestamp: Any) -> bool:
        when = parse_time(timestamp) if isinstance(timestamp, str) else None
        start = parse_time(self.started) if self.started else None
        return when is not None and start is not None and timedelta(0) <= when - start < HEADLESS_GAP

    def _reply(self, content: Any, timestamp: Any) -> str:
        if not isinstance(content, list):
            return "wrong_field_type"
        if not self.builder.new_reply(_text_of(content) or ""):
            return IGNORED
        self.builder.touch(timestamp)
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "toolCall":
                continue
            name = as_str(block.get("name"))
            if not name:
                continue
            self.builder.add_tool(name)
            arguments = block.get("arguments")
            if name in _FILE_TOOLS and isinstance(arguments, dict):
                path = as_str(arguments.get("path")) or as_str(arguments.get("file_path"))
                if path:
                    self.builder.add_file(path)
        return USED

    def extra_state(self) -> dict[str, Any]:
        return {"started": self.started, "forked": self.forked, "prompted": self.prompted}


class PiSource:
    name = NAME
    whole_file = False

    def default_home(self) -> Path:
        return paths.pi_home()

    def discover(self, home: Path, skipped: Counter[str]) -> Iterator[Path]:
        """``sessions/--<cwd>--/*.jsonl`` as pi lays them out, and ``sessions/*.jsonl`` as a
        ``--session-dir`` / ``PI_CODING_AGENT_SESSION_DIR`` pointed there lays them out (flat)."""
        root = home / "sessions"
        try:
            entries = sorted(os.scandir(root), key=lambda entry: entry.name)
        except FileNotFoundError:
            return
        except OSError:
            skipped["unreadable_dir"] += 1
            return
        for entry in entries:
            if entry.name.endswith(".jsonl"):
                yield Path(entry.path)
                continue
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
                names = sorted(os.listdir(entry.path))
            except OSError:
                skipped["unreadable_dir"] += 1
                continue
            for name in names:
                if name.endswith(".jsonl"):
                    yield Path(entry.path) / name

    def parser(self, path: str, state: dict[str, Any]) -> PiParser:
        return PiParser(path, state)

    def head_cwds(self, path: Path) -> set[str]:
        """The header's cwd, unless the session's first prompt shows a headless run. pi writes the
        header, the settings entries and the first prompt together, so a few lines tell."""
        parser = PiParser(str(path), {})
        try:
            with open_regular(path) as handle:
                for _ in range(HEAD_LINES):
                    line = handle.readline(1024 * 1024)
                    if not line:
                        break
                    parser.feed(line.rstrip(b"\r\n"))
                    if parser.excluded or parser.prompted:
                        break
        except OSError:
            return set()
        if parser.excluded or not parser.builder.project:
            return set()
        return {parser.builder.project}
