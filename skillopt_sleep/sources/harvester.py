"""The harvest: every agent's new or changed session files read into SessionDigests for a
project, with what was read and skipped. ``SOURCES`` lists one source per agent: adding an agent is
adding a module (``base.Source``) and a line there. ``available_sources`` tells which agents have
transcripts for a project."""

from __future__ import annotations

import copy
import hashlib
import os
import stat as stat_module
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from collections.abc import Callable, Mapping
from pathlib import Path

from ..types import SessionDigest, utc
from .base import Source, merge_into
from .claude_code import ClaudeCodeSource
from .codex import CodexSource
from .copilot import CopilotSource
from .cursor import CursorSource
from .cursor_cli import CursorCliSource
from .gemini import GeminiSource
from .opencode import OpenCodeSource
from .pi import PiSource
from .vscode_copilot import VSCodeCopilotSource
from .runner import FileTask, run
from .store import HarvestStore

SOURCES: dict[str, Source] = {
    "claude": ClaudeCodeSource(),
    "codex": CodexSource(),
    "copilot": CopilotSource(),
    "cursor": CursorSource(),
    "cursor-cli": CursorCliSource(),
    "gemini": GeminiSource(),
    "opencode": OpenCodeSource(),
    "pi": PiSource(),
    "vscode-copilot": VSCodeCopilotSource(),
}


SOURCE_CHOICES = (*SOURCES, "auto", "all")
_EPOCH = datetime.min.replace(tzinfo=timezone.utc)


@dataclass
class HarvestResult:
    digests: list[SessionDigest]  # all known sessions for the project(s), cached + new, by start
    new_session_ids: set[str]  # sessions that got new bytes in this harvest
    skipped: dict[str, int]  # reason -> count
    files_read: int
    bytes_read: int
    sources_used: list[str]
    homes: dict[str, str] = field(default_factory=dict)  # source -> the data dir searched
    files_found: dict[str, int] = field(default_factory=dict)  # source -> transcript files there
    _store: HarvestStore | None = field(default=None, repr=False, compare=False)

    def commit(self) -> None:
        """Persist checkpoints and the digest cache (atomically). No-op for a stateless harvest.

        Call only once the night that used this harvest succeeded: until then the next harvest
        re-reads the same bytes.
        """
        if self._store is not None:
            self._store.commit()


class ProjectFilter:
    """Does a session's cwd lie in the project? ``None`` project = every project."""

    def __init__(self, project: str | os.PathLike[str] | None) -> None:
        self.roots: list[str] = []
        if project is not None:
            given = os.path.normpath(os.path.abspath(os.path.expanduser(os.fspath(project))))
            resolved = os.path.normpath(str(Path(given).resolve()))
            self.roots = sorted({given, resolved})

    def __call__(self, cwd: str) -> bool:
        if not self.roots:
            return True
        if not cwd:
            return False
        cwd = os.path.normpath(cwd)
        return any(cwd == root or cwd.startswith(root.rstrip(os.sep) + os.sep) for root in self.roots)


def _source_names(source: str) -> list[str]:
    if source in ("auto", "all"):
        return list(SOURCES)
    if source in SOURCES:
        return [source]
    raise ValueError(f"unknown transcript source {source!r}; expected one of {', '.join(SOURCE_CHOICES)}")


def _homes(
    homes: Mapping[str, Path | None] | None, claude_home: Path | None = None, codex_home: Path | None = None
) -> dict[str, Path]:
    """Every agent's data dir: the one given (``homes``, or the older ``claude_home`` /
    ``codex_home``), else the agent's default."""
    given = {name: home for name, home in (homes or {}).items() if home}
    if claude_home:
        given["claude"] = claude_home
    if codex_home:
        given["codex"] = codex_home
    return {
        name: Path(os.path.abspath(Path(given.get(name) or source.default_home()).expanduser()))
        for name, source in SOURCES.items()
    }


def _stamp(path: Path, stat: os.stat_result) -> list[int]:
    """What tells that a whole file changed: its size and time, and those of its SQLite write-ahead
    log, where new rows wait before they reach the database file."""
    stamp = [int(stat.st_size), int(stat.st_mtime_ns)]
    try:
        wal = os.stat(f"{path}-wal")
    except OSError:
        return stamp
    return [*stamp, int(wal.st_size), int(wal.st_mtime_ns)]


def _plan(name: str, home: Path, store: HarvestStore, skipped: Counter[str], seen: set[str]) -> list[FileTask]:
    tasks: list[FileTask] = []
    for path in SOURCES[name].discover(home, skipped):
        key = str(path)
        seen.add(key)
        try:
            stat = os.stat(path)
        except OSError:
            skipped["unreadable_file"] += 1
            continue
        if not stat_module.S_ISREG(stat.st_mode):  # a FIFO would block, /dev/zero never ends
            skipped["not_a_regular_file"] += 1
            continue
        identity = [int(stat.st_dev), int(stat.st_ino)]
        checkpoint = store.checkpoints.get(key)
        offset, state = 0, {}
        if SOURCES[name].whole_file:  # read again from the start whenever it changed at all
            stamp = _stamp(path, stat)
            if (
                isinstance(checkpoint, dict)
                and checkpoint.get("source") == name
                and checkpoint.get("identity") == identity
                and checkpoint.get("stamp") == stamp
            ):
                continue
            tasks.append(FileTask(name, key, 0, {}, stat.st_size, stamp))
            continue
        if (
            isinstance(checkpoint, dict)
            and checkpoint.get("source") == name
            and checkpoint.get("identity") == identity
            and isinstance(checkpoint.get("offset"), int)
            and isinstance(checkpoint.get("state"), dict)
        ):
            if stat.st_size == checkpoint.get("size"):
                continue  # nothing appended since the last harvest
            if stat.st_size >= checkpoint["offset"]:
                offset, state = checkpoint["offset"], checkpoint["state"]
        tasks.append(FileTask(name, key, offset, state, stat.st_size))
    return tasks


def _own_id(store: HarvestStore, task: FileTask, session_id: str) -> str:
    """The id a file's session is stored under. Two files naming one session id (a copied or
    restored transcript) would replace each other: the first file stored keeps the id, any other
    file gets ``<id>~<hash of its path>``, the same on every later harvest."""
    existing = store.get(task.source, session_id)
    if existing is None or existing.path == task.path:
        return session_id
    return f"{session_id}~{hashlib.sha256(task.path.encode('utf-8', 'replace')).hexdigest()[:10]}"


def harvest(
    project: str | os.PathLike[str] | None,
    *,
    source: str = "auto",
    homes: Mapping[str, Path | None] | None = None,
    claude_home: Path | None = None,
    codex_home: Path | None = None,
    since: datetime | None = None,
    all_projects: bool = False,
    state_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> HarvestResult:
    """Read the transcripts of ``project`` (a session belongs to it when its cwd is the project
    directory or inside it; ``None`` or ``all_projects`` = every project) into SessionDigests.

    ``source``: an agent of ``SOURCES`` | ``all`` | ``auto`` (read every agent; ``sources_used`` names
    the agents that have sessions for the project). ``homes``: data dirs by agent (the others: each
    agent's default). With ``state_dir`` only bytes appended since the
    last committed harvest are read and earlier sessions come from the digest cache; without it
    every file is read in full and ``commit`` does nothing. ``since`` keeps sessions whose last
    activity is at or after it. Raises ``ValueError`` only for an unknown ``source``.
    """
    names = _source_names(source)
    dirs = _homes(homes, claude_home, codex_home)
    wanted = ProjectFilter(None if all_projects else project)
    store = HarvestStore(Path(state_dir) if state_dir is not None else None)
    skipped: Counter[str] = Counter()
    seen: set[str] = set()
    tasks: list[FileTask] = []
    files_found: dict[str, int] = {}
    for name in names:
        before = len(seen)
        tasks.extend(_plan(name, dirs[name], store, skipped, seen))
        files_found[name] = len(seen) - before
    store.vanished = {
        path
        for path, checkpoint in store.checkpoints.items()
        if isinstance(checkpoint, dict)
        and checkpoint.get("source") in names
        and path not in seen
        and not os.path.exists(path)
    }

    files_read = bytes_read = 0
    touched: set[tuple[str, str]] = set()
    for result in run(tasks, progress):
        task = result.task
        skipped.update(result.skipped)
        if result.error is not None:
            continue
        files_read += 1
        bytes_read += result.bytes_read
        checkpoint = {
            "source": task.source,
            "identity": result.identity,
            "size": result.size,
            "offset": result.offset,
            "state": result.state,
        }
        if task.stamp is not None:
            checkpoint["stamp"] = task.stamp
        store.new_checkpoints[task.path] = (store.checkpoints.get(task.path), checkpoint)
        for session_id in result.excluded:
            store.drop(task.source, _own_id(store, task, session_id), task.path)
        for part in result.parts:
            part.session_id = _own_id(store, task, part.session_id)
            cached = None if task.from_start else store.get(task.source, part.session_id)
            if cached is None:
                digest = part.to_digest()
            else:
                digest = merge_into(copy.deepcopy(cached), part)
            store.put(digest, task.path)
            touched.add((task.source, part.session_id))

    digests = sorted(
        store.digests(wanted),
        key=lambda d: (d.started or _EPOCH, d.source, d.session_id),
    )
    used = {d.source for d in digests}
    sources_used = [n for n in names if n in used] if source == "auto" else names
    if since is not None:
        cutoff = utc(since)
        digests = [d for d in digests if (when := d.ended or d.started) is not None and when >= cutoff]
    new_ids = {d.session_id for d in digests if (d.source, d.session_id) in touched}
    return HarvestResult(
        digests=digests,
        new_session_ids=new_ids,
        skipped=dict(sorted(skipped.items())),
        files_read=files_read,
        bytes_read=bytes_read,
        sources_used=sources_used,
        homes={name: str(dirs[name]) for name in names},
        files_found=files_found,
        _store=store if state_dir is not None else None,
    )


def home_warnings(result: HarvestResult, given: dict[str, bool]) -> list[str]:
    """One line per data dir the user named (``given[source]``) that does not exist or holds no
    transcripts: a mistyped ``--claude-home`` must not look like a quiet day."""
    lines = []
    for name, home in result.homes.items():
        if not given.get(name):
            continue
        if not os.path.isdir(home):
            lines.append(f"--{name}-home {home} does not exist")
        elif not result.files_found.get(name):
            lines.append(f"--{name}-home {home} holds no {name} transcripts")
    return lines


def describe_read(result: HarvestResult) -> str:
    """What was read, e.g. ``read /home/u/.claude (12 files), /home/u/.codex (0 files)``."""
    return "read " + ", ".join(
        f"{home} ({result.files_found.get(name, 0)} file(s))" for name, home in result.homes.items()
    )


def available_sources(
    project: str | os.PathLike[str] | None,
    claude_home: Path | None = None,
    codex_home: Path | None = None,
    homes: Mapping[str, Path | None] | None = None,
) -> list[str]:
    """The agents with at least one (non-headless, non-replay) session in ``project``.

    Reads only the head of each transcript, stopping at the first match per agent.
    """
    from .base import is_replay_dir

    wanted = ProjectFilter(project)
    dirs = _homes(homes, claude_home, codex_home)
    found: list[str] = []
    for name, src in SOURCES.items():
        scratch: Counter[str] = Counter()
        for path in src.discover(dirs[name], scratch):
            if any(wanted(cwd) and not is_replay_dir(cwd) for cwd in src.head_cwds(path)):
                found.append(name)
                break
    return found
