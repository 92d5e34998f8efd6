"""What carries from one night of a project to the next: the edit schedule, the task archive and
recall, dream variants (the night-level view; the modules have their own tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.backends import assembly
from skillopt_sleep.config import Config
from skillopt_sleep.night import NightOptions, run_night

from tests.support.fake_backend import FakeBackend, forward
from tests.support.tasks import make_tasks, write_tasks_file


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    (p / "CLAUDE.md").write_text("# proj\n", encoding="utf-8")
    return p


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
    config = Config(backend="sim:correct=1,harmful=0,seed=3", agent="claude", retries=1, retry_base_delay=0.0,
                    k=2, val_samples=2, max_val_samples=4, **settings)
    return run_night(NightOptions(project=project, config=config, mode="run", tasks_file=tasks_file))


def test_the_edit_budget_decays_over_the_projects_nights(project: Path, tmp_path: Path, recorded: list) -> None:
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    budgets = []
    for _ in range(3):
        recorded.clear()
        report = night(project, tasks_file, edit_schedule="linear", max_edits=4, edit_floor=1, edit_horizon=2)
        asked = {r.payload["max_edits"] for r in recorded if r.purpose == "reflect"}
        assert len(asked) == 1
        budgets.append(asked.pop())
        assert any(n.startswith("edit budget tonight: ") for n in report.notes)
    assert budgets == [4, 3, 1]
