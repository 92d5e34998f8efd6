import json
from pathlib import Path

from skillopt_sleep.store import archive as archive_mod
from skillopt_sleep.store.archive import TaskArchive
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.types import TaskRecord


def task(i: int, split: str = "train", origin: str = "real", intent: str | None = None) -> TaskRecord:
    return TaskRecord(
        id=f"t{i}",
        intent=intent or f"Write the commit message for change {i}",
        split=split,
        origin=origin,
        judge={"kind": "rule", "checks": [{"op": "contains", "arg": "Refs:"}]},
    )


def test_archives_real_tasks_once_by_content(tmp_path: Path) -> None:
    archive = TaskArchive()
    assert archive.path == user_dirs().archive
    assert archive.add(tmp_path, [task(1), task(2, split="val"), task(3, origin="dream")], "n1") == 2
    # the same content under a new id, and different spacing and case, is the same task
    again = task(1, intent="write the   commit message for change 1")
    again.id = "renamed"
    assert archive.add(tmp_path, [again, task(4)], "n2") == 1
    entries = archive.entries(tmp_path)
    assert [e.task.id for e in entries] == ["t1", "t2", "t4"]
    assert [e.split for e in entries] == ["train", "val", "train"]
    assert [e.night_id for e in entries] == ["n1", "n1", "n2"]


def test_entries_are_per_project(tmp_path: Path) -> None:
    archive = TaskArchive()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    archive.add(tmp_path / "a", [task(1)], "n1")
    archive.add(tmp_path / "b", [task(1), task(2)], "n1")
    assert len(archive.entries(tmp_path / "a")) == 1
    assert len(archive.entries(tmp_path / "b")) == 2


def test_secrets_are_redacted_before_they_are_written(tmp_path: Path) -> None:
    secret = "sk-ant-api03-" + "A" * 80
    archive = TaskArchive()
    archive.add(tmp_path, [task(1, intent=f"Rotate the key {secret} in the commit message")], "n1")
    raw = archive.path.read_text(encoding="utf-8")
    assert secret not in raw and "REDACTED" in raw


def test_bounded_per_project_oldest_dropped(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(archive_mod, "MAX_PER_PROJECT", 3)
    archive = TaskArchive()
    other = tmp_path / "other"
    other.mkdir()
    archive.add(other, [task(99)], "n0")
    for i in range(5):
        archive.add(tmp_path, [task(i)], f"n{i}")
    assert [e.task.id for e in archive.entries(tmp_path)] == ["t2", "t3", "t4"]
    assert [e.task.id for e in archive.entries(other)] == ["t99"], "another project's tasks are kept"


def test_malformed_lines_are_skipped(tmp_path: Path) -> None:
    archive = TaskArchive()
    archive.add(tmp_path, [task(1)], "n1")
    with open(archive.path, "a", encoding="utf-8") as fh:
        fh.write("{not json\n")
        fh.write(json.dumps({"project": str(tmp_path.resolve()), "key": "k", "task": "nope"}) + "\n")
    assert [e.task.id for e in archive.entries(tmp_path)] == ["t1"]
    assert archive.add(tmp_path, [task(2)], "n2") == 1


def test_a_huge_task_is_not_archived(tmp_path: Path) -> None:
    archive = TaskArchive()
    assert archive.add(tmp_path, [task(1, intent="x " * 40000)], "n1") == 0
