"""A whole night on a reviewed tasks file through one agent CLI backend, for the real-CLI tests of
the backends: the night's own project and tasks live beside the person's throwaway HOME, never in
it, so the person's trees can be compared byte for byte before and after."""

from __future__ import annotations

from pathlib import Path

from skillopt_sleep.config import Config
from skillopt_sleep.night import NightOptions, NightStopped, run_night
from skillopt_sleep.types import NightReport

from tests.support.tasks import make_tasks, write_tasks_file


def reviewed_night(root: Path, backend: str, agent: str, max_calls: int = 16) -> NightReport:
    """``skillopt-sleep run --tasks-file`` in-process on a small reviewed tasks file, every model
    call through ``backend``; a night the call cap ends is returned as it stopped."""
    project = root / "night-project"
    project.mkdir(parents=True)
    tasks = write_tasks_file(root / "night-tasks.json", make_tasks(per_kind=2))
    config = Config(
        backend=backend,
        agent=agent,
        k=1,
        val_samples=1,
        max_val_samples=2,
        max_edits=1,
        max_calls=max_calls,
        concurrency=2,
    )
    try:
        return run_night(NightOptions(project=project, config=config, mode="run", tasks_file=tasks))
    except NightStopped as stopped:
        return stopped.report


def attempts(report: NightReport) -> int:
    """The night's calls that replayed a task (through the backend's CLI)."""
    return int(report.calls.get("attempt", 0))
