"""Tonight's train set widened (``train_set.py``): past tasks recalled, dream variants written,
and a successful night's real tasks archived for the nights to come."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.models import Models
from skillopt_sleep.learning.recall import RECALLED_TAG
from skillopt_sleep.learning.train_set import archive_tasks, widen_train, widened
from skillopt_sleep.store.archive import TaskArchive
from skillopt_sleep.types import TaskRecord
from tests.support.tasks import make_tasks


def _sim() -> Models:
    backend = make_backend("sim:seed=1")
    return Models(Client(backend), Client(backend, role="optimizer"))


def _last_week() -> list[TaskRecord]:
    return [replace(t, id=f"old-{t.id}", intent=f"{t.intent} of last week") for t in make_tasks()]


def test_nothing_is_added_when_neither_recall_nor_dreams_are_asked_for(tmp_path: Path) -> None:
    archive = TaskArchive(tmp_path / "archive.jsonl")
    archive.add(tmp_path, _last_week(), "n0")
    out = widen_train(make_tasks(), _sim(), tmp_path, recall_k=0, dream_factor=0, archive=archive)
    assert (out.tasks, out.notes) == ([], [])


def test_recalled_tasks_and_dream_variants_join_the_train_set_and_the_report_says_so(tmp_path: Path) -> None:
    archive = TaskArchive(tmp_path / "archive.jsonl")
    archive.add(tmp_path, _last_week(), "n0")
    tonight = make_tasks()
    out = widen_train(tonight, _sim(), tmp_path, recall_k=2, dream_factor=1, archive=archive)
    assert len(out.recalled) == 2 and all(widened(t) and t.split == "train" for t in out.recalled)
    assert out.variants and all(widened(t) and t.origin == "dream" for t in out.variants)
    assert out.tasks == out.recalled + out.variants
    ids = ", ".join(t.id for t in out.recalled)
    assert out.notes[0] == f"recall: 2 past train task(s) like tonight's joined the train set ({ids})"
    sources = len({t.derived_from for t in out.variants})
    assert out.notes[1].startswith(f"dream variants: {len(out.variants)} written from {sources} train task(s) in ")
    assert not any(widened(t) for t in tonight)


def test_a_task_is_widened_when_recalled_or_dreamt() -> None:
    task = make_tasks()[0]
    assert not widened(task)
    assert widened(replace(task, origin="dream")) and widened(replace(task, tags=[*task.tags, RECALLED_TAG]))


def test_an_archive_that_cannot_be_written_is_a_note_not_a_failure(tmp_path: Path) -> None:
    archive = TaskArchive(tmp_path / "archive.jsonl")
    assert archive_tasks(tmp_path, make_tasks(), "n1", archive) is None
    assert len(archive.entries(tmp_path)) == len(make_tasks())
    blocked = TaskArchive(tmp_path / "a-file" / "archive.jsonl")
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    note = archive_tasks(tmp_path, make_tasks(), "n1", blocked)
    assert note is not None and note.startswith("task archive not updated: ")
