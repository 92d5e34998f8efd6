"""What every transcript source shares: the protocol, streaming line reader, digest builder.

A source turns one transcript file (or the bytes appended to it since the last harvest) into
partial SessionDigests. Parsing must resume mid-file, so a parser's memory of the file (cwd,
whether the session is excluded, the assistant message being assembled, ...) lives in a small
JSON-able ``state`` dict stored with the file's checkpoint.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol
from collections.abc import Iterator

from ..paths import REPLAY_DIR_PREFIX
from ..redact import redact
from ..types import Feedback, SessionDigest, parse_time
from . import feedback

MAX_LINE_BYTES = 8 * 1024 * 1024  # longer lines are skipped without being held in memory
READ_CHUNK = 1024 * 1024
MAX_PROMPT_CHARS = 4000
MAX_REPLY_CHARS = 2000
MAX_FEEDBACK_CHARS = 300
MAX_ITEMS = 500  # per list in one digest; the turn counters stay exact

# One outcome per line. "used" / "ignored" are not problems; everything else is a skip reason.
USED = "used"
IGNORED = "ignored"


class LineParser(Protocol):
    def feed(self, line: bytes) -> str:
        """Consume one complete line (without its newline); return its outcome."""

    def finish(self) -> tuple[list[DigestBuilder], dict[str, Any], list[str]]:
        """Return (partial digests, state to resume from, excluded session ids)."""


class Source(Protocol):
    """One agent's transcripts. Adding an agent is adding a module with one of these."""

    name: str

    def default_home(self) -> Path: ...

    def discover(self, home: Path, skipped: Counter[str]) -> Iterator[Path]:
        """Yield the main-session transcript files under ``home``; count what is excluded."""

    def parser(self, path: str, state: dict[str, Any]) -> LineParser:
        """A parser resuming from ``state`` (empty dict = start of file)."""

    def head_cwds(self, path: Path) -> set[str]:
        """Cheaply read the cwd(s) a file's first records name (for ``available_sources``)."""


def clip(text: str, limit: int) -> str:
    """Redact, then clip. Redacting a bounded prefix keeps a pasted megabyte cheap; the margin
    ensures a secret cut at the prefix boundary never reaches the kept part."""
    if len(text) > 2 * limit:
        text = text[: 2 * limit]
    text = redact(text)
    if len(text) > limit:
        text = text[:limit].rstrip() + " …"
    return text


def is_replay_dir(cwd: str) -> bool:
    """Our own headless replays run in temp dirs named ``REPLAY_DIR_PREFIX…``."""
    name = cwd.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return name.startswith(REPLAY_DIR_PREFIX)


class LineReader:
    """Iterate ``(line, end_offset)`` over each complete line of ``path`` from ``offset``.

    Streams in binary. A line longer than ``MAX_LINE_BYTES`` is discarded as it is read (counted
    ``oversized_line``), never assembled. An unterminated last line is not yielded (counted
    ``truncated_line``): the caller's offset stays before it so the next harvest re-reads it.
    After iteration ``eof`` is the file offset reading stopped at. ``OSError`` propagates.
    """

    def __init__(self, path: str, offset: int, skipped: Counter[str]) -> None:
        self.path = path
        self.offset = offset
        self.skipped = skipped
        self.eof = offset

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        skipped = self.skipped
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            base = self.offset  # absolute offset of the first byte of ``chunk``
            pending = b""  # start of a line that began in an earlier chunk
            discarding = False  # inside an oversized line: drop bytes up to its newline
            while True:
                chunk = handle.read(READ_CHUNK)
                if not chunk:
                    break
                start = 0
                newline = chunk.find(b"\n")
                while newline != -1:
                    if discarding:
                        discarding = False
                    else:
                        line = pending + chunk[start:newline] if pending else chunk[start:newline]
                        if len(line) > MAX_LINE_BYTES:
                            skipped["oversized_line"] += 1
                        else:
                            yield line, base + newline + 1
                    pending = b""
                    start = newline + 1
                    newline = chunk.find(b"\n", start)
                if not discarding:
                    if len(pending) + len(chunk) - start > MAX_LINE_BYTES:
                        skipped["oversized_line"] += 1
                        discarding = True
                        pending = b""
                    else:
                        pending += chunk[start:]
                base += len(chunk)
                self.eof = base
            if pending.strip() and not discarding:
                skipped["truncated_line"] += 1


def decode_json_line(line: bytes) -> tuple[str, Any]:
    """Return ("ok", value) or (skip reason, None). Never raises."""
    import json

    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return "bad_utf8", None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return "malformed_json", None
    if not isinstance(value, dict):
        return "not_object", None
    return "ok", value


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def append_unique(items: list[str], value: str) -> None:
    if value and value not in items and len(items) < MAX_ITEMS:
        items.append(value)


@dataclass
class DigestBuilder:
    """A SessionDigest under construction, possibly for only the newly appended part of a file.

    ``prompt_base`` is the number of prompts the session had before this part, so feedback
    indices are absolute; ``reply_continuation`` is text that continues the last reply of the
    earlier part (an assistant message whose records straddle two harvests).
    """

    source: str
    session_id: str
    path: str
    project: str = ""
    branch: str | None = None
    started: datetime | None = None
    ended: datetime | None = None
    prompt_base: int = 0
    replied: bool = False  # an assistant reply came after the latest prompt
    user_prompts: list[str] = field(default_factory=list)
    assistant_finals: list[str] = field(default_factory=list)
    reply_continuation: str = ""
    tools_used: list[str] = field(default_factory=list)
    skills_used: list[str] = field(default_factory=list)
    files_touched: list[str] = field(default_factory=list)
    feedback: list[Feedback] = field(default_factory=list)
    n_user_turns: int = 0
    n_assistant_turns: int = 0

    def touch(self, timestamp: Any) -> None:
        when = parse_time(timestamp) if isinstance(timestamp, str) else None
        if when is None:
            return
        if self.started is None or when < self.started:
            self.started = when
        if self.ended is None or when > self.ended:
            self.ended = when

    def add_prompt(self, text: str) -> None:
        index = self.prompt_base + self.n_user_turns
        if self.replied and index > 0:
            polarity = feedback.classify(text)
            if polarity:
                self.feedback.append(
                    Feedback(polarity, clip(feedback.opening(text), MAX_FEEDBACK_CHARS), index - 1)
                )
        if len(self.user_prompts) < MAX_ITEMS:
            self.user_prompts.append(clip(text, MAX_PROMPT_CHARS))
        self.n_user_turns += 1
        self.replied = False

    def new_reply(self, text: str) -> None:
        """Start a new assistant message (text may be empty when it only calls tools)."""
        self.n_assistant_turns += 1
        self.replied = True
        if text and len(self.assistant_finals) < MAX_ITEMS:
            self.assistant_finals.append(clip(text, MAX_REPLY_CHARS))

    def extend_reply(self, text: str, *, has_final: bool) -> bool:
        """Append text to the current assistant message; return whether it now has a final."""
        if not text:
            return has_final
        if has_final and self.assistant_finals:
            last = self.assistant_finals[-1]
            if len(last) < MAX_REPLY_CHARS:
                self.assistant_finals[-1] = clip(last + "\n" + text, MAX_REPLY_CHARS)
        elif has_final:  # the message's first text is in the cached digest of an earlier harvest
            joined = self.reply_continuation + "\n" + text if self.reply_continuation else text
            self.reply_continuation = clip(joined, MAX_REPLY_CHARS)
        elif len(self.assistant_finals) < MAX_ITEMS:
            self.assistant_finals.append(clip(text, MAX_REPLY_CHARS))
        return True

    def add_tool(self, name: str) -> None:
        append_unique(self.tools_used, clip(name, 200))

    def add_skill(self, name: str) -> None:
        append_unique(self.skills_used, clip(name, 200))

    def add_file(self, path: str) -> None:
        append_unique(self.files_touched, clip(path, 1000))

    @property
    def has_content(self) -> bool:
        return bool(
            self.n_user_turns or self.n_assistant_turns or self.tools_used or self.files_touched
            or self.reply_continuation
        )

    def to_digest(self) -> SessionDigest:
        return SessionDigest(
            source=self.source,
            session_id=self.session_id,
            project=self.project,
            path=self.path,
            branch=self.branch,
            started=self.started,
            ended=self.ended,
            user_prompts=list(self.user_prompts),
            assistant_finals=list(self.assistant_finals),
            tools_used=list(self.tools_used),
            skills_used=list(self.skills_used),
            files_touched=list(self.files_touched),
            feedback=list(self.feedback),
            n_user_turns=self.n_user_turns,
            n_assistant_turns=self.n_assistant_turns,
        )


def merge_into(cached: SessionDigest, part: DigestBuilder) -> SessionDigest:
    """Merge the digest of newly appended bytes into the cached digest of the same session."""
    if part.reply_continuation and cached.assistant_finals:
        cached.assistant_finals[-1] = clip(
            cached.assistant_finals[-1] + "\n" + part.reply_continuation, MAX_REPLY_CHARS
        )
    cached.project = part.project or cached.project
    cached.path = part.path
    cached.branch = part.branch or cached.branch
    times = [t for t in (cached.started, part.started) if t is not None]
    cached.started = min(times) if times else None
    times = [t for t in (cached.ended, part.ended) if t is not None]
    cached.ended = max(times) if times else None
    room = MAX_ITEMS - len(cached.user_prompts)
    cached.user_prompts.extend(part.user_prompts[: max(room, 0)])
    room = MAX_ITEMS - len(cached.assistant_finals)
    cached.assistant_finals.extend(part.assistant_finals[: max(room, 0)])
    for name in part.tools_used:
        append_unique(cached.tools_used, name)
    for name in part.skills_used:
        append_unique(cached.skills_used, name)
    for name in part.files_touched:
        append_unique(cached.files_touched, name)
    cached.feedback.extend(part.feedback)
    cached.n_user_turns += part.n_user_turns
    cached.n_assistant_turns += part.n_assistant_turns
    return cached


def builder_state(builder: DigestBuilder) -> dict[str, Any]:
    """The part of a builder a resumed parse needs (no text: nothing secret is stored here)."""
    return {
        "project": builder.project,
        "branch": builder.branch,
        "prompts": builder.prompt_base + builder.n_user_turns,
        "replied": builder.replied,
    }


def resume_builder(source: str, session_id: str, path: str, state: dict[str, Any]) -> DigestBuilder:
    builder = DigestBuilder(source=source, session_id=session_id, path=path)
    project = state.get("project")
    builder.project = project if isinstance(project, str) else ""
    branch = state.get("branch")
    builder.branch = branch if isinstance(branch, str) else None
    prompts = state.get("prompts")
    builder.prompt_base = prompts if isinstance(prompts, int) and prompts >= 0 else 0
    builder.replied = state.get("replied") is True
    return builder


def file_identity(stat: os.stat_result) -> list[int]:
    return [int(stat.st_dev), int(stat.st_ino)]
