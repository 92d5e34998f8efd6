"""Tonight's train set, widened beyond the day's sessions: past tasks recalled from the archive
(``recall.py``) and dream variants the optimizer writes (``variants.py``). Val and test are never
widened. Also: archiving a successful night's real tasks for the nights to come."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from skillopt_sleep.store.archive import TaskArchive
from skillopt_sleep.backends.models import Models
from skillopt_sleep.replay.dream import split_measurable
from skillopt_sleep.errors import UserError
from skillopt_sleep.learning.recall import RECALLED_TAG, recall
from skillopt_sleep.types import TaskRecord
from skillopt_sleep.learning.variants import dream_variants


@dataclass
class Widened:
    recalled: list[TaskRecord] = field(default_factory=list)
    variants: list[TaskRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def tasks(self) -> list[TaskRecord]:
        return self.recalled + self.variants


def widen_train(
    tasks: list[TaskRecord],
    models: Models,
    project: Path,
    *,
    recall_k: int,
    dream_factor: int,
    archive: TaskArchive | None = None,
) -> Widened:
    """The train tasks to add to ``tasks`` (tonight's measurable tasks) and what the report says."""
    out = Widened()
    if recall_k > 0:
        past = (archive or TaskArchive()).entries(project)
        out.recalled, _ = split_measurable(recall(past, tasks, recall_k), models.target)
        if out.recalled:
            out.notes.append(
                f"recall: {len(out.recalled)} past train task(s) like tonight's joined the train set "
                f"({', '.join(t.id for t in out.recalled)})"
            )
    if dream_factor > 0:
        # recalled tasks count towards a kind's instances, but only tonight's own are varied
        made = dream_variants(models.optimizer, tasks + out.recalled, dream_factor)
        out.variants, _ = split_measurable(made.tasks, models.target)
        sources = len({t.derived_from for t in out.variants})
        out.notes.append(
            f"dream variants: {len(out.variants)} written from {sources} train task(s) "
            f"in {made.calls} optimizer call(s)"
            + (f"; {made.dropped} dropped (empty or a copy of a task)" if made.dropped else "")
        )
        out.notes.extend(f"dream variants: {why}" for why in made.unusable)
    return out


def archive_tasks(
    project: Path, tasks: list[TaskRecord], night_id: str, archive: TaskArchive | None = None
) -> str | None:
    """Archive a successful night's real tasks; a note when the archive cannot be written (it costs
    recall on later nights, never this night)."""
    try:
        (archive or TaskArchive()).add(project, tasks, night_id)
    except (OSError, UserError) as exc:
        return f"task archive not updated: {getattr(exc, 'message', None) or exc}"
    return None


def widened(task: TaskRecord) -> bool:
    """A train task the night added beyond its own sessions: recalled from the archive, or a dream
    variant."""
    return task.origin == "dream" or RECALLED_TAG in task.tags
