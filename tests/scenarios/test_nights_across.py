"""What carries from one night of a project to the next: the edit schedule, the task archive and
recall, dream variants (the night-level view; the modules have their own tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.backends import assembly
from skillopt_sleep.config import Config
from skillopt_sleep.night import NightOptions, run_night

from tests.support.fake_backend import FakeBackend, forward
from tests.support.staged_project import project_with_memory
from tests.support.tasks import make_tasks, write_tasks_file


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return project_with_memory(tmp_path, b"# proj\n")


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list:
    """Every request any backend of the night receives."""
    requests: list = []
    real = assembly.make_backend

    def make(*args, **kwargs):
        backend = real(*args, **kwargs)
        fake = FakeBackend(forward(backend), id=backend.id, price=backend.price, offline=True)
        fake.requests = requests
        return fake

    monkeypatch.setattr(assembly, "make_backend", make)
    return requests


def night(project: Path, tasks_file: Path, **settings) -> object:
    config = Config(
        backend="sim:correct=1,harmful=0,seed=3",
        agent="claude",
        retries=1,
        retry_base_delay=0.0,
        k=2,
        val_samples=2,
        max_val_samples=4,
        **settings,
    )
    return run_night(NightOptions(project=project, config=config, mode="run", tasks_file=tasks_file))


def test_the_edit_budget_decays_over_the_projects_nights(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillopt_sleep.learning import loop as consolidate

    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    budgets: list[int] = []
    real = consolidate.reflect

    def spy(*args, **kwargs):
        budgets.append(kwargs["max_edits"])
        return real(*args, **kwargs)

    monkeypatch.setattr(consolidate, "reflect", spy)
    for _ in range(3):
        report = night(project, tasks_file, edit_schedule="linear", max_edits=4, edit_floor=1, edit_horizon=2)
        [note] = [n for n in report.notes if n.startswith("edit budget tonight: ")]
        tonight = int(note.split(":")[1].split()[0])
        gated = {e.content for d in report.decisions for e in d.edits}
        assert len(gated) <= tonight, "no more edits reach the gate than the budget"
    # reflect is asked for screen_pool (2) candidates per edit the budget allows: lookahead drops
    # those that fix nothing on their train tasks, and the best of the rest are gated
    assert budgets == [8, 6, 2]


def renumbered(offset: int) -> list:
    """The same kinds of task as ``make_tasks``, other instances (new numbers, new ids)."""
    tasks = make_tasks()
    for t in tasks:
        n = int(t.id.rsplit("-", 1)[1]) + offset
        t.id = f"{t.skill_hint}-{n}"
        t.intent = t.intent.rsplit(" ", 1)[0] + f" {n}"
    return tasks


def test_a_night_archives_its_tasks_and_a_later_one_recalls_them(project: Path, tmp_path: Path, recorded: list) -> None:
    from skillopt_sleep.store.archive import TaskArchive

    first = make_tasks()
    night(project, write_tasks_file(tmp_path / "one.json", first), recall_k=3)
    archived = TaskArchive().entries(project)
    assert sorted(e.task.id for e in archived) == sorted(t.id for t in first)

    recorded.clear()
    second = renumbered(100)
    # no answers reused from the first night (the recalled tasks are its tasks): every one is drawn
    report = night(project, write_tasks_file(tmp_path / "two.json", second), recall_k=3, score_cache_days=0)
    recalled = [tid for tid, info in report.task_index.items() if tid.startswith("recalled-")]
    assert len(recalled) == 3
    assert all(report.task_index[tid]["split"] == "train" for tid in recalled)
    past_train = {f"recalled-{t.id}" for t in first if t.split == "train"}
    assert set(recalled) <= past_train, "only past train tasks are recalled"
    assert len({report.task_index[tid]["kind"] for tid in recalled}) == 3, "spread over tonight's kinds"
    assert any(n.startswith("recall: 3 past train task(s)") for n in report.notes)
    attempted = {r.payload["task"]["id"] for r in recorded if r.purpose == "attempt"}
    assert set(recalled) <= attempted, "recalled tasks are dreamed like tonight's"
    # the second night's own tasks joined the archive; recalled copies did not
    assert len(TaskArchive().entries(project)) == len(first) + len(second)


def test_a_dry_run_recalls_but_archives_nothing(project: Path, tmp_path: Path) -> None:
    from skillopt_sleep.store.archive import TaskArchive

    config = Config(backend="sim:correct=1,harmful=0,seed=3", agent="claude", k=1, val_samples=1, max_val_samples=2)
    run_night(
        NightOptions(
            project=project,
            config=config,
            mode="dry-run",
            tasks_file=write_tasks_file(tmp_path / "t.json", make_tasks()),
        )
    )
    assert TaskArchive().entries(project) == []


def test_dream_variants_are_written_for_train_tasks_only(project: Path, tmp_path: Path, recorded: list) -> None:
    tasks = make_tasks()
    report = night(project, write_tasks_file(tmp_path / "t.json", tasks), dream_factor=2, recall_k=0)
    varied = [r.payload["task"] for r in recorded if r.purpose == "vary"]
    train = {t.id for t in tasks if t.split == "train"}
    assert {v["id"] for v in varied} == train, "one vary request per train task, none for val"
    assert report.calls.get("vary") == len(train)
    dreams = [tid for tid in report.task_index if "~dream" in tid]
    assert len(dreams) == 2 * len(train)
    attempted = {r.payload["task"]["id"] for r in recorded if r.purpose == "attempt"}
    assert set(dreams) <= attempted
    val_only = attempted - train - set(dreams)
    assert val_only == {t.id for t in tasks if t.split == "val"}
    assert any(n.startswith(f"dream variants: {2 * len(train)} written") for n in report.notes)
