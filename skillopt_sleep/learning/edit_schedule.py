"""How many edits a night may propose, scheduled over the project's nights like a learning rate.

Early nights, when the documents know nothing yet, may try many rules; later nights fine-tune and
should change less. ``constant`` keeps ``initial`` every night; ``linear`` and ``cosine`` decay from
``initial`` on the first night to ``floor`` after ``horizon`` nights and stay there. The night
number is the count of this project's earlier nights that reached the learning loop (history.py):
a night that found nothing to learn, or stopped on a budget, does not advance the schedule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from skillopt_sleep.config import LearningSettings

KINDS = ("constant", "linear", "cosine")
# statuses of a night that ran the learning loop to its end (``NightReport.status``)
LEARNING_STATUSES = frozenset({"staged", "no-change", "proposed"})


@dataclass(frozen=True)
class EditSchedule:
    kind: str = "constant"
    initial: int = 4  # edits on the first night (``max_edits``)
    floor: int = 1  # edits once the horizon is reached
    horizon: int = 10  # nights from initial to floor

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"edit_schedule must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.floor < 1 or self.initial < 1:
            raise ValueError("the edit schedule's initial and floor must be at least 1")
        if self.horizon < 1:
            raise ValueError("edit_horizon must be at least 1 night")
        if self.kind != "constant" and self.floor > self.initial:
            raise ValueError(f"edit_floor ({self.floor}) must not exceed max_edits ({self.initial})")

    def edits_for(self, night: int) -> int:
        """The edit budget of night ``night`` (0 = the project's first learning night)."""
        if self.kind == "constant":
            return self.initial
        progress = min(max(night, 0), self.horizon) / self.horizon
        if self.kind == "linear":
            share = 1.0 - progress
        else:
            share = 0.5 * (1.0 + math.cos(math.pi * progress))
        return self.floor + math.floor((self.initial - self.floor) * share + 0.5)

    def describe(self, night: int) -> str:
        budget = self.edits_for(night)
        if self.kind == "constant":
            return f"edit budget tonight: {budget} (constant schedule)"
        return (
            f"edit budget tonight: {budget} ({self.kind} schedule from {self.initial} to {self.floor} "
            f"over {self.horizon} nights; this is night {night + 1})"
        )


def learning_nights(nights: list[dict[str, Any]]) -> int:
    """How many of a project's recorded nights (``History.nights``) ran the learning loop."""
    return sum(1 for n in nights if n.get("status") in LEARNING_STATUSES and n.get("mode") != "dry-run")


@dataclass(frozen=True)
class Budget:
    edits: int
    note: str  # what the report says about it ("" for a constant schedule: nothing to say)


def schedule_from(learning: LearningSettings) -> EditSchedule:
    """The schedule a config's ``learning`` section names (``max_edits`` is its first-night value)."""
    return EditSchedule(
        kind=learning.edit_schedule,
        initial=learning.max_edits,
        floor=learning.edit_floor,
        horizon=learning.edit_horizon,
    )


def edit_budget(learning: LearningSettings, nights: list[dict[str, Any]]) -> Budget:
    """Tonight's edit budget for a project whose recorded nights are ``nights``."""
    schedule = schedule_from(learning)
    night = learning_nights(nights)
    note = schedule.describe(night) if schedule.kind != "constant" else ""
    return Budget(schedule.edits_for(night), note)
