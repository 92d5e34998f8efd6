"""Reading in worker processes (files in batches) gives what reading in one process gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.sources import harvest, runner
from skillopt_sleep.sources.runner import FileTask, _batches


def task(size: int) -> FileTask:
    return FileTask("claude", f"/x/{size}.jsonl", 0, {}, size)


def test_batches_keep_the_order_and_cut_at_the_target() -> None:
    tasks = [task(s) for s in (50, 30, 20, 10, 5, 5, 1)]
    batches = _batches(tasks, 30)
    assert [t for b in batches for t in b] == tasks
    assert [[t.size for t in b] for b in batches] == [[50], [30], [20, 10], [5, 5, 1]]


def digests(homes: tuple[Path, Path]) -> list[dict]:
    result = harvest(None, all_projects=True, source="all", claude_home=homes[0], codex_home=homes[1])
    return [d.to_dict() for d in result.digests] + [result.skipped, result.files_read, result.bytes_read]


@pytest.mark.parametrize("batch_bytes", [1, 10_000, 1 << 30])
def test_pool_reads_the_same_as_one_process(homes, monkeypatch, batch_bytes: int) -> None:
    monkeypatch.setattr(runner, "POOL_MIN_BYTES", 1 << 60)
    alone = digests(homes)
    monkeypatch.setattr(runner, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(runner, "BATCH_BYTES", batch_bytes)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert digests(homes) == alone
