"""The night's tasks: from a tasks file a person may have reviewed, or this project's sessions
harvested and mined into recurring, checkable tasks."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from skillopt_sleep import mining
from skillopt_sleep.backends.models import Models
from skillopt_sleep.config import Config
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.redact import redact_obj
from skillopt_sleep.types import TaskRecord


class Asked(Protocol):
    """What gathering reads of a night's options (``night.NightOptions`` has it all)."""

    @property
    def project(self) -> Path: ...
    @property
    def config(self) -> Config: ...
    @property
    def tasks_file(self) -> Path | None: ...
    @property
    def since(self) -> datetime | None: ...
    @property
    def progress(self) -> Callable[[str], None]: ...
    @property
    def harvested(self) -> Any: ...  # a sources.HarvestResult already read for this night, or None


def miner_for(config: Config, models: Models) -> str:
    """``heuristic`` or ``llm``. ``auto`` mines with the optimizer model whenever the night has a
    real one anyway, decided by the backend it resolved to (not by the spec string); the
    simulator mines heuristically."""
    if config.harvest.miner != "auto":
        return config.harvest.miner
    return "heuristic" if models.optimizer.backend.offline else "llm"


@dataclass
class Gathered:
    tasks: list[TaskRecord]
    n_sessions: int = 0
    agents: dict[str, int] = field(default_factory=dict)  # sessions per agent
    skipped: dict[str, int] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    harvest: Any = None  # sources.HarvestResult, committed after a successful run
    notes: list[str] = field(default_factory=list)
    reviewed: bool = False  # tasks from a tasks file a person marked reviewed


def read_transcripts(opts: Asked) -> Any:
    """This project's sessions, read through the checkpoints and digest cache in every mode
    (dry-run sees what run would); only a successful stateful night commits them (``_finish``)."""
    from skillopt_sleep.sources import harvest

    config = opts.config
    return harvest(
        opts.project,
        source=config.harvest.source,
        homes=config.harvest.homes(),
        since=opts.since,
        state_dir=user_dirs().state,
        progress=opts.progress,
    )


def gather_tasks(opts: Asked, judge_maker: Any = None, grouper: Any = None) -> Gathered:
    """Tasks from a tasks file, or harvested and mined from transcripts."""
    config = opts.config
    if opts.tasks_file is not None:
        tasks, reviewed = mining.load_tasks(opts.tasks_file)
        tasks = [TaskRecord.from_dict(redact_obj(t.to_dict())) for t in tasks]
        return Gathered(tasks=tasks, notes=[f"tasks replayed from {opts.tasks_file}"], reviewed=reviewed)
    opts.progress("harvesting transcripts")
    result = opts.harvested if opts.harvested is not None else read_transcripts(opts)
    from skillopt_sleep.sources import describe_read, home_warnings

    notes = [f"warning: {line}" for line in home_warnings(result, {name: True for name in config.harvest.homes()})]
    for line in notes:
        opts.progress(line)
    notes.append(f"{describe_read(result)}; {len(result.digests)} session(s) for this project")
    opts.progress(notes[-1])
    opts.progress(f"mining {len(result.digests)} session(s)")
    mined = mining.mine(
        result.digests,
        min_recurrence=config.harvest.min_recurrence,
        seed=config.harvest.split_seed,
        val_fraction=config.harvest.val_fraction,
        test_fraction=config.harvest.test_fraction,
        judge_maker=judge_maker,
        grouper=grouper,
    )
    notes.extend(mined.notes)
    if mined.one_off or mined.uncheckable:
        notes.append(
            f"{mined.one_off} one-off request group(s) not promoted; "
            f"{mined.uncheckable} recurring group(s) had no checkable feedback"
        )
    return Gathered(
        tasks=mined.tasks,
        n_sessions=len(result.digests),
        agents=dict(Counter(d.source for d in result.digests)),
        skipped=dict(result.skipped),
        sources=list(result.sources_used),
        harvest=result,
        notes=notes,
    )
