"""Parse transcript files, in a process pool when there is enough to read.

A worker gets one ``FileTask`` (path, byte offset, parser state) and returns a ``FileResult``
(partial digests, the new offset/state, skip counts). Workers share nothing; the parent merges.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Iterable, Iterator

from .base import (
    HELD,
    HOLD,
    IGNORED,
    MAX_WHOLE_FILE_BYTES,
    USED,
    DigestBuilder,
    LineReader,
    file_identity,
    open_regular,
)

NOT_SKIPS = (USED, IGNORED, HOLD, HELD)

POOL_MIN_BYTES = 16 * 1024 * 1024  # below this, starting workers costs more than it saves
# Files go to a worker in batches of about this many bytes (smaller near the end so that no
# worker is left alone with a big last batch): one round trip per batch, not per file.
BATCH_BYTES = 8 * 1024 * 1024
BATCHES_PER_WORKER = 8


@dataclass
class FileTask:
    source: str
    path: str
    offset: int
    state: dict[str, Any]
    size: int  # at discovery, for scheduling and progress
    stamp: list[int] | None = None  # a whole file's size and times at discovery (``harvester._stamp``)

    @property
    def from_start(self) -> bool:
        return self.offset == 0


@dataclass
class FileResult:
    task: FileTask
    identity: list[int] = field(default_factory=list)
    size: int = 0  # bytes in the file when reading stopped
    offset: int = 0  # end of the last complete line consumed, or where a hold began (``base.HOLD``)
    state: dict[str, Any] = field(default_factory=dict)
    parts: list[DigestBuilder] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    bytes_read: int = 0
    error: str | None = None


def parse_file(task: FileTask) -> FileResult:
    """Read ``task.path`` from ``task.offset`` to the end of its last complete line."""
    result = FileResult(task=task, offset=task.offset)
    try:
        with open_regular(task.path) as handle:
            stat = os.fstat(handle.fileno())
        result.identity = file_identity(stat)
        from . import SOURCES  # the registry lives in the package; workers import it on first use

        source = SOURCES[task.source]
        if source.whole_file:
            return _read_whole(source, task, result, stat.st_size)
        parser = source.parser(task.path, task.state)
        lines = LineReader(task.path, task.offset, result.skipped)
        feed = parser.feed
        hold_from: int | None = None  # where a hold (``base.HOLD``) began
        for line, end in lines:
            try:
                outcome = feed(line)
            except Exception:  # noqa: BLE001 - a parser bug on one line must not lose the file
                outcome = "parser_error"
            if outcome == HOLD or (outcome == HELD and hold_from is None):
                hold_from = result.offset
            elif outcome != HELD:
                hold_from = None
            if outcome not in NOT_SKIPS:
                result.skipped[outcome] += 1
            result.offset = end
        if hold_from is not None:
            result.offset = hold_from
        result.size = lines.eof if lines.capped else max(stat.st_size, lines.eof)
    except OSError as exc:
        result.skipped["unreadable_file"] += 1
        result.error = f"{type(exc).__name__}: {exc.strerror or exc}"
        return result
    result.bytes_read = max(lines.eof - task.offset, 0)
    result.parts, result.state, result.excluded = parser.finish()
    return result


def _read_whole(source: Any, task: FileTask, result: FileResult, size: int) -> FileResult:
    """A file its agent rewrites as a whole: read it all (bounded), or skip it and say why."""
    result.size = result.offset = size
    if size > MAX_WHOLE_FILE_BYTES:
        result.skipped["whole_file_too_large"] += 1
        return result
    try:
        result.parts, result.excluded = source.read_whole(task.path, result.skipped)
    except OSError as exc:
        result.skipped["unreadable_file"] += 1
        result.error = f"{type(exc).__name__}: {exc.strerror or exc}"
        return result
    except Exception:  # noqa: BLE001 - a reader bug on one file must not stop the harvest
        result.skipped["parser_error"] += 1
        return result
    result.bytes_read = size
    return result


def run(
    tasks: list[FileTask],
    progress: Callable[[str], None] | None = None,
    workers: int | None = None,
) -> Iterator[FileResult]:
    """Yield a result per task, in completion order."""
    total_bytes = sum(max(t.size - t.offset, 0) for t in tasks)
    workers = workers or os.cpu_count() or 1
    ordered = sorted(tasks, key=lambda t: t.size - t.offset, reverse=True)  # big files first
    results: Iterable[FileResult]
    if workers < 2 or len(tasks) < 2 or total_bytes < POOL_MIN_BYTES:
        results = map(parse_file, ordered)
        yield from _report(results, len(tasks), total_bytes, progress)
        return
    batches = _batches(ordered, min(BATCH_BYTES, max(total_bytes // (workers * BATCHES_PER_WORKER), 1)))
    with ProcessPoolExecutor(max_workers=min(workers, len(batches))) as pool:
        futures = [pool.submit(parse_batch, batch) for batch in batches]
        results = (result for f in as_completed(futures) for result in f.result())
        yield from _report(results, len(tasks), total_bytes, progress)


def parse_batch(tasks: list[FileTask]) -> list[FileResult]:
    return [parse_file(task) for task in tasks]


def _batches(ordered: list[FileTask], target: int) -> list[list[FileTask]]:
    """Consecutive runs of ``ordered`` (biggest first) of about ``target`` bytes each."""
    batches: list[list[FileTask]] = []
    batch: list[FileTask] = []
    size = 0
    for task in ordered:
        batch.append(task)
        size += max(task.size - task.offset, 0)
        if size >= target:
            batches.append(batch)
            batch, size = [], 0
    if batch:
        batches.append(batch)
    return batches


PROGRESS_EVERY = 2.0  # seconds between progress lines


def _report(
    results: Iterable[FileResult], total: int, total_bytes: int, progress: Callable[[str], None] | None
) -> Iterator[FileResult]:
    """Progress at most every ``PROGRESS_EVERY`` seconds, and once at the end."""
    done = done_bytes = 0
    last = time.monotonic()
    for result in results:
        done += 1
        done_bytes += result.bytes_read
        now = time.monotonic()
        if progress is not None and (now - last >= PROGRESS_EVERY or done == total):
            last = now
            progress(f"harvest: {done}/{total} files, {done_bytes / 1e6:.1f}/{total_bytes / 1e6:.1f} MB")
        yield result
