"""What every transcript source shares: the protocol, streaming line reader, digest builder.

A source turns one transcript file (or the bytes appended to it since the last harvest) into
partial SessionDigests. Parsing must resume mid-file, so a parser's memory of the file (cwd,
whether the session is excluded, the assistant message being assembled, ...) lives in a small
JSON-able ``state`` dict stored with the file's checkpoint.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from functools import lru_cache
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Protocol
from collections.abc import Iterator

import msgspec

from ..files import open_regular
from ..paths import REPLAY_DIR_PREFIX
from ..redact import redact
from ..types import Feedback, SessionDigest, parse_time
from . import feedback
from .decode import decode_json_line, decode_record

MAX_LINE_BYTES = 8 * 1024 * 1024  # longer lines are skipped without being held in memory
# New bytes read from one file per harvest; the rest is read by the next harvest (its checkpoint
# ends at the last complete line). Bounds the time one enormous file can take.
MAX_FILE_BYTES_PER_HARVEST = 512 * 1024 * 1024
READ_CHUNK = 1024 * 1024
MAX_PROMPT_CHARS = 4000
MAX_REPLY_CHARS = 2000
MAX_FEEDBACK_CHARS = 300
MAX_ITEMS = 500  # per list in one digest; the turn counters stay exact
# A file an agent rewrites as a whole (a JSON document, an SQLite database) is read whole, so it is
# bounded as a whole: a larger one is skipped (``whole_file_too_large``), never half read.
MAX_WHOLE_FILE_BYTES = 256 * 1024 * 1024

# One outcome per line. "used" / "ignored" are not problems; everything else is a skip reason.
USED = "used"
IGNORED = "ignored"
# A line whose meaning waits on a later one (what it is only shows further on): ``HOLD`` starts a
# hold at this line (replacing any earlier one), ``HELD`` is a line read while it lasts, and any
# other outcome ends it. A read that ends inside a hold is checkpointed at the hold's first line, so
# the next harvest reads those lines again: the parser leaves them out of what ``finish`` returns.
HOLD = "hold"
HELD = "held"


class LineParser(Protocol):
    def feed(self, line: bytes) -> str:
        """Consume one complete line (without its newline); return its outcome."""

    def finish(self) -> tuple[list[DigestBuilder], dict[str, Any], list[str]]:
        """Return (partial digests, state to resume from, excluded session ids)."""


class Source(Protocol):
    """One agent's transcripts. Adding an agent is adding a module with one of these.

    Most agents append one JSON record per line: ``parser`` reads the new lines and resumes from a
    checkpoint. An agent that rewrites its file as a whole sets ``whole_file`` and implements
    ``read_whole(path, skipped) -> (digests, excluded session ids)``; the harvest calls it with a
    regular file of at most ``MAX_WHOLE_FILE_BYTES`` whenever the file (or its ``-wal``) changed
    size or time, and what it returns replaces what the file gave before.
    """

    name: str  # as in ``paths.TRANSCRIPT_SOURCES``
    whole_file: bool

    def default_home(self) -> Path: ...

    def discover(self, home: Path, skipped: Counter[str]) -> Iterator[Path]:
        """Yield the main-session transcript files under ``home``; count what is excluded."""

    def parser(self, path: str, state: dict[str, Any]) -> LineParser:
        """A parser resuming from ``state`` (empty dict = start of file)."""

    def head_cwds(self, path: Path) -> set[str]:
        """Cheaply read the cwd(s) a file's first records name (for ``available_sources``)."""


class WholeFileSource:
    """The part every whole-file source shares (``Source.whole_file``): its files are handed to
    ``read_whole``, never to a line parser."""

    whole_file = True

    def parser(self, path: str, state: dict[str, Any]) -> LineParser:
        raise NotImplementedError(f"{type(self).__name__} reads its files whole (read_whole)")


def clip(text: str, limit: int) -> str:
    """Redact, then clip. Redacting a bounded prefix keeps a pasted megabyte cheap; the margin
    ensures a secret cut at the prefix boundary never reaches the kept part."""
    if len(text) > 2 * limit:
        text = text[: 2 * limit]
    text = redact(text)
    if len(text) > limit:
        text = text[:limit].rstrip() + " …"
    return text


@lru_cache(maxsize=4096)
def clip_name(name: str, limit: int) -> str:
    """``clip`` for tool, skill and file names, which recur on every other line of a transcript."""
    return clip(name, limit)


_TRAILING_UUID = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$")


def session_id_for(path: str) -> str:
    """The session id a file is named after: the UUID its name ends in (Codex's ``rollout-…-<id>``,
    Pi's ``<time>_<id>``), lower-cased, else the file's stem."""
    match = _TRAILING_UUID.search(path)
    return match.group(1).lower() if match else Path(path).stem


def is_replay_dir(cwd: str) -> bool:
    """Our own headless replays run in temp dirs named ``REPLAY_DIR_PREFIX…``."""
    name = cwd.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return name.startswith(REPLAY_DIR_PREFIX)


class LineReader:
    """Iterate ``(line, end_offset)`` over each complete line of ``path`` from ``offset``.

    Streams in binary. A line longer than ``MAX_LINE_BYTES`` is discarded as it is read (counted
    ``oversized_line``), never assembled. An unterminated last line is not yielded (counted
    ``truncated_line``): the caller's offset stays before it so the next harvest re-reads it.
    After iteration ``eof`` is the file offset reading stopped at. At most
    ``MAX_FILE_BYTES_PER_HARVEST`` bytes are read (``capped`` is then True; the next harvest
    resumes at the last complete line). Only a regular file is read (``open_regular``).
    ``OSError`` propagates.
    """

    def __init__(self, path: str, offset: int, skipped: Counter[str]) -> None:
        self.path = path
        self.offset = offset
        self.skipped = skipped
        self.eof = offset
        self.capped = False

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        skipped = self.skipped
        with open_regular(self.path) as handle:
            handle.seek(self.offset)
            base = self.offset  # absolute offset of the first byte of ``chunk``
            pending = b""  # start of a line that began in an earlier chunk
            discarding = False  # inside an oversized line: drop bytes up to its newline
            while True:
                if base - self.offset >= MAX_FILE_BYTES_PER_HARVEST:
                    self.capped = True
                    skipped["file_read_capped"] += 1
                    return
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


def whole_file_records(data: bytes, skipped: Counter[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects of a file of JSON lines read whole, in order; every line that is not one is
    counted. An unterminated last line is being written: the next harvest reads it whole."""
    lines = data.split(b"\n")
    if lines and lines[-1].strip():
        skipped["truncated_line"] += 1
    for line in lines[:-1]:
        if not line.strip():
            continue
        if len(line) > MAX_LINE_BYTES:
            skipped["oversized_line"] += 1
            continue
        status, value = decode_json_line(line)
        if status != "ok":
            skipped[status] += 1
            continue
        yield value


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def append_unique(items: list[str], value: str) -> None:
    if value and value not in items and len(items) < MAX_ITEMS:
        items.append(value)


@dataclass
class DigestBuilder:
    """A SessionDigest under construction, possibly for only the newly appended part of a file.

    Prompts and replies are paired by turn: ``assistant_finals[i]`` is the last text the model
    wrote in the turn of ``user_prompts[i]`` ("" when it wrote none). Only a typed prompt opens a
    turn; injected messages, notifications, compactions and headless turns close it, and replies
    outside a turn are not counted, so a reply to a notification never shifts the pairs.

    ``prompt_base`` is the number of prompts the session had before this part, so feedback
    indices are absolute; ``reply_continuation`` is reply text for the last turn of the earlier
    part (an assistant message straddling two harvests, or a later message of that turn), which
    ``merge_into`` appends to (or, with ``reply_replaces``, puts in place of) the cached final.
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
    in_turn: bool = False  # the latest typed prompt's turn is still open
    user_prompts: list[str] = field(default_factory=list)
    assistant_finals: list[str] = field(default_factory=list)
    reply_continuation: str = ""
    reply_replaces: bool = False
    tools_used: list[str] = field(default_factory=list)
    skills_used: list[str] = field(default_factory=list)
    files_touched: list[str] = field(default_factory=list)
    feedback: list[Feedback] = field(default_factory=list)
    n_user_turns: int = 0
    n_assistant_turns: int = 0
    _stored_turn: bool = False  # the open turn's prompt was stored in this part (not capped)
    # The open final's text and how many times it is still to be clipped: clipping (redaction) is
    # done once the final is read, not for every reply a later one replaces.
    _pending: tuple[str, int] | None = None

    def touch(self, timestamp: Any) -> None:
        when = parse_time(timestamp) if isinstance(timestamp, str) else None
        if when is None:
            return
        if self.started is None or when < self.started:
            self.started = when
        if self.ended is None or when > self.ended:
            self.ended = when

    def add_prompt(self, text: str) -> None:
        """A typed prompt: it opens a turn."""
        self.settle()
        index = self.prompt_base + self.n_user_turns
        if self.replied and index > 0:
            polarity = feedback.classify(text)
            if polarity:
                self.feedback.append(Feedback(polarity, clip(feedback.opening(text), MAX_FEEDBACK_CHARS), index - 1))
        self._stored_turn = len(self.user_prompts) < MAX_ITEMS
        if self._stored_turn:
            self.user_prompts.append(clip(text, MAX_PROMPT_CHARS))
            self.assistant_finals.append("")
        self.n_user_turns += 1
        self.replied = False
        self.in_turn = True

    def close_turn(self) -> None:
        """Something other than a typed prompt started (a notification, a compaction, a headless turn)."""
        self.in_turn = False

    def new_reply(self, text: str) -> bool:
        """Start a new assistant message (text may be empty when it only calls tools).

        Returns False (and counts nothing) outside a typed prompt's turn.
        """
        if not self.in_turn:
            return False
        self.n_assistant_turns += 1
        self.replied = True
        if text:
            self._set_final(text, replace=True, clips=2)
        return True

    def extend_reply(self, text: str, *, has_final: bool) -> bool:
        """Append text to the current assistant message; return whether it now has a final."""
        if not text or not self.in_turn:
            return has_final
        self._set_final(text, replace=not has_final)
        return True

    def _set_final(self, text: str, *, replace: bool, clips: int = 1) -> None:
        if self.n_user_turns and not self._stored_turn:
            return  # past MAX_ITEMS: the turn's reply is not stored
        if replace:
            self._pending = (text, clips)
            if not self.n_user_turns:
                self.reply_replaces = True
            return
        self.settle()
        if self.n_user_turns:  # the turn's prompt is in this part
            if self._stored_turn:
                last = self.assistant_finals[-1]
                joined = last + "\n" + text if last else text
                self.assistant_finals[-1] = clip(joined, MAX_REPLY_CHARS)
        else:
            joined = self.reply_continuation + "\n" + text if self.reply_continuation else text
            self.reply_continuation = clip(joined, MAX_REPLY_CHARS)

    def settle(self) -> None:
        """Clip the open final into place (``assistant_finals[-1]`` or ``reply_continuation``)."""
        if self._pending is None:
            return
        text, clips = self._pending
        self._pending = None
        for _ in range(clips):
            clipped = clip(text, MAX_REPLY_CHARS)
            if clipped == text:
                break  # nothing to redact or cut: clipping it again gives it again
            text = clipped
        if self.n_user_turns:
            self.assistant_finals[-1] = text
        else:
            self.reply_continuation = text

    def add_tool(self, name: str) -> None:
        append_unique(self.tools_used, clip_name(name, 200))

    def add_skill(self, name: str) -> None:
        append_unique(self.skills_used, clip_name(name, 200))

    def add_file(self, path: str) -> None:
        append_unique(self.files_touched, clip_name(path, 1000))

    @property
    def has_content(self) -> bool:
        self.settle()
        return bool(
            self.n_user_turns
            or self.n_assistant_turns
            or self.tools_used
            or self.files_touched
            or self.reply_continuation
        )

    def to_digest(self) -> SessionDigest:
        self.settle()
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
        last = cached.assistant_finals[-1]
        joined = part.reply_continuation if part.reply_replaces or not last else last + "\n" + part.reply_continuation
        cached.assistant_finals[-1] = clip(joined, MAX_REPLY_CHARS)
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
        "in_turn": builder.in_turn,
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
    builder.in_turn = state.get("in_turn") is True
    return builder


class TranscriptParser:
    """What every source's parser shares: the resumable builder, the sticky session exclusion,
    line decoding and ``finish``. A subclass implements ``record`` (one decoded JSON object ->
    outcome) and may add resumable fields with ``extra_state``.

    ``fields`` decodes only the fields ``record`` reads (a ``TypedDict`` naming every key it
    reads, at any depth: a key it does not name reads as absent); None decodes every line whole."""

    source = ""
    fields: ClassVar[msgspec.json.Decoder[Any] | None] = None

    def __init__(self, path: str, state: dict[str, Any], session_id: str) -> None:
        self.session_id = session_id
        self.builder = resume_builder(self.source, session_id, path, state)
        excluded = state.get("excluded")
        self.excluded: str | None = excluded if isinstance(excluded, str) else None
        self._usable_cwd = ""  # the last cwd found not to be one of our replay dirs

    def feed(self, line: bytes) -> str:
        if self.excluded or not line or line.isspace():
            return IGNORED
        status, record = decode_record(line, self.fields)
        if status != "ok":
            return status
        return self.record(record)

    def record(self, record: dict[str, Any]) -> str:
        raise NotImplementedError

    def exclude(self, reason: str) -> str:
        """Leave the whole session out (from this line on, and what earlier harvests cached)."""
        self.excluded = reason
        return reason

    def project_cwd(self, cwd: Any, *, first: bool = False) -> str:
        """Note the session's cwd; our own replay dirs exclude the session."""
        if isinstance(cwd, str) and cwd:
            if cwd != self._usable_cwd:  # every record repeats the session's cwd
                if is_replay_dir(cwd):
                    return self.exclude("own_replay")
                self._usable_cwd = cwd
            if first or not self.builder.project:
                self.builder.project = clip(cwd, 4096)
        return USED

    def extra_state(self) -> dict[str, Any]:
        return {}

    def left_out(self) -> bool:
        """Whether the session yields no digest (and its cached one is dropped)."""
        return self.excluded is not None

    def finish(self) -> tuple[list[DigestBuilder], dict[str, Any], list[str]]:
        self.builder.settle()
        state = builder_state(self.builder)
        state.update(excluded=self.excluded, **self.extra_state())
        if self.left_out():
            return [], state, [self.session_id]
        return ([self.builder] if self.builder.has_content else []), state, []


def file_identity(stat: os.stat_result) -> list[int]:
    return [int(stat.st_dev), int(stat.st_ino)]
