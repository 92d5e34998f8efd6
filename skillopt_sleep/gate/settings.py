"""The learning loop's settings (``consolidate``), read from the night's config.

Every setting a person can change is declared once, in a section of ``Config`` (its default and its
comment); the loop holds those sections as they are (``settings.learning.k``,
``settings.gate.val_samples``, ``settings.documents.retire_rules``) and the gate's ``GateConfig``
reads its defaults from the ``gate`` section's class. ``LoopSettings.from_config`` is the one way
from a config to the loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

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
    """What ``consolidate`` reads: the config's ``learning``, ``gate`` and ``documents`` sections as
    they are, and the few knobs below that are not a person's settings."""

    learning: LearningSettings = field(default_factory=LearningSettings)
    gate: GateSettings = field(default_factory=GateSettings)
    documents: DocumentSettings = field(default_factory=DocumentSettings)
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
        learning = replace(config.learning, max_edits=max_edits or config.learning.max_edits)
        return cls(
            learning=learning,
            gate=replace(config.gate),  # copies, as ``Config`` takes its sections: the config stays as it was
            documents=replace(config.documents),
            decide=gate_config(config.gate),
        )

    @property
    def first_samples(self) -> int:
        """Samples every val task gets under tonight's documents while the train tasks are dreamed
        (and the report's val scores are measured on): as many as any gate starts a task with."""
        return min(self.gate.val_samples, self.gate.val_others_samples or self.gate.val_samples)
