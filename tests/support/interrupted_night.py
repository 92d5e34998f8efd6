"""A project, and a night on it "killed" right after staging: its call journal is left behind."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.tasks import make_tasks, write_tasks_file


def make_project(root: Path) -> Path:
    project = root / "proj"
    project.mkdir(parents=True)
    (project / "CLAUDE.md").write_text("# proj\n", encoding="utf-8")
    return project


def killed_after_staging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Any, Callable[[bool], Any]]:
    """(project, the first night's report, options(resume) for the next night). The score cache is
    off, so only the journal can answer the next night's calls."""
    from skillopt_sleep import night
    from skillopt_sleep.config import Config

    project = make_project(tmp_path)
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())

    def options(resume: bool) -> night.NightOptions:
        config = Config(backend="sim:correct=1,harmful=0,seed=3", agent="claude", score_cache_days=0)
        return night.NightOptions(project=project, config=config, mode="run", tasks_file=tasks_file, resume=resume)

    with monkeypatch.context() as patch:
        patch.setattr(night, "close_nights", lambda project: None)  # "killed" right after staging
        first = night.run_night(options(False))
    return project, first, options
