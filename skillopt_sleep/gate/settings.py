"""The learning loop's settings (``consolidate``), read from the night's config.

Every setting a person can change is declared once, in a section of ``Config`` (its default and its
comment), under the same name here and in the gate's ``GateConfig``, which read their defaults from
the section's class (``LearningSettings``, ``GateSettings``, ``DocumentSettings``).
``LoopSettings.from_config`` is the one way from a config to the loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from skillopt_sleep.gate import decide as gating
from skillopt_sleep.config import Config, DocumentSettings, GateSettings, LearningSettings


def gate_config(gate: GateSettings) -> gating.GateConfig:
    """The gate's settings from a config's ``gate`` section: a gate looks once per ``val_samples``
    up to the ceiling."""
    return gating.GateConfig(
        min_gain=gate.min_gain,
        gain_alpha=gate.gain_alpha,
        looks=math.ceil(gate.max_val_samples / gate.val_samples),
        regression_tolerance=gate.regression_tolerance,
        regression_alpha=gate.regression_alpha,
    )


@dataclass
class LoopSettings:
    """What ``consolidate`` reads; each field is the ``Config`` setting of the same name (see its section)."""

    k: int = LearningSettings.k
    val_samples: int = GateSettings.val_samples
    max_val_samples: int = GateSettings.max_val_samples
    max_edits: int = LearningSettings.max_edits
    screen_pool: int = LearningSettings.screen_pool
    reflect_samples: int = LearningSettings.reflect_samples
    targeted_gain: bool = GateSettings.targeted_gain
    k_agree: int = LearningSettings.k_agree
    dream_kind_tasks: int = LearningSettings.dream_kind_tasks
    val_others_samples: int = GateSettings.val_others_samples
    retire_rules: bool = DocumentSettings.retire_rules
    retire_margin: float = DocumentSettings.retire_margin
    # not a person's settings: an edit whose own tasks are fewer than this gets proportionally
    # more samples per task (one target task at 12 samples cannot tell 0.3 from 0.9 reliably enough)
    min_focus_tasks: int = 2
    # several edits: each gated on its own val tasks, their combination once on every val task
    # (``together.py``); off: each edit on every val task, then their combination (benchmarks)
    together: bool = True
    # how the gate decides (decide.py's ``GateConfig``), built from the ``gate`` section by
    # ``gate_config``; not named ``gate``, the person's section: it holds what that section implies
    # (the number of looks) and the statistical knobs no config sets (mean_alpha, harm_alpha, ...)
    decide: gating.GateConfig = field(default_factory=lambda: gate_config(GateSettings()))

    @classmethod
    def from_config(cls, config: Config, max_edits: int | None = None) -> LoopSettings:
        """The loop's settings; ``max_edits``: tonight's scheduled edit budget (default: the config's)."""
        learning, gate, documents = config.learning, config.gate, config.documents
        return cls(
            k=learning.k,
            val_samples=gate.val_samples,
            max_val_samples=gate.max_val_samples,
            max_edits=max_edits or learning.max_edits,
            screen_pool=learning.screen_pool,
            reflect_samples=learning.reflect_samples,
            targeted_gain=gate.targeted_gain,
            k_agree=learning.k_agree,
            dream_kind_tasks=learning.dream_kind_tasks,
            val_others_samples=gate.val_others_samples,
            retire_rules=documents.retire_rules,
            retire_margin=documents.retire_margin,
            decide=gate_config(gate),
        )

    @property
    def first_samples(self) -> int:
        """Samples every val task gets under tonight's documents while the train tasks are dreamed
        (and the report's val scores are measured on): as many as any gate starts a task with."""
        return min(self.val_samples, self.val_others_samples or self.val_samples)
