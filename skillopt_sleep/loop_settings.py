"""The learning loop's settings (``consolidate``), as a night derives them from its config
(``night._settings``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from skillopt_sleep import gate as gating
from skillopt_sleep.reflect import TASKS_PER_KIND
from skillopt_sleep.retire import RETIRE_MARGIN


@dataclass
class LoopSettings:
    k: int = 4
    val_samples: int = 4
    max_val_samples: int = 12
    max_edits: int = 4
    # candidates replayed on their own train tasks per edit the gate may test: those that fixed
    # something there take the ``max_edits`` slots first, and one that fixed nothing is gated only
    # while a slot is left (1: only the ``max_edits`` best ranked are replayed)
    screen_pool: int = 2
    reflect_samples: int = 2  # readings of each reflect request (``reflect``)
    targeted_gain: bool = True  # gate a rule's gain on the checks it fixes (``Edit.targets``), else on the score
    agree_after: int = 2  # a train task whose first samples all agree gets no more (0: always k)
    # a kind stops being dreamed once this many of its train tasks teach something (0: every task)
    kind_tasks: int = TASKS_PER_KIND
    # samples the val tasks outside an edit's own kind start with in its gate, more only when the
    # gate asks; 0 (the default): as many as the edit's own tasks reached. Fewer saves calls but
    # lets a trade-off pass more often (bench_gate at Nval 10: 7.3 % with 4 vs 3.7 % with 0,
    # measured at c6a4426): tasks grown one by one on their own drop leave the lucky ones at
    # the first look and bias the all-task mean up
    others_samples: int = 0
    # an edit whose own tasks are fewer than this gets proportionally more samples per task
    # (one target task at 12 samples cannot tell 0.3 from 0.9 reliably enough)
    min_focus_tasks: int = 2
    # a full document's new rule may take the line of a learned rule that no longer earns its place,
    # when the removal costs the tasks it served less than ``retire_margin`` (retire.py)
    retire: bool = True
    retire_margin: float = RETIRE_MARGIN
    # several edits: each gated on its own val tasks, their combination once on every val task
    # (``together.py``); off: each edit on every val task, then their combination
    together: bool = True
    gate: gating.GateConfig = field(default_factory=lambda: gating.GateConfig(looks=3))

    @property
    def first_samples(self) -> int:
        """Samples every val task gets under tonight's documents while the train tasks are dreamed
        (and the report's val scores are measured on): as many as any gate starts a task with."""
        return min(self.val_samples, self.others_samples or self.val_samples)
