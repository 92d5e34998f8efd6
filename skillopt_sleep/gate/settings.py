"""The learning loop's settings (``consolidate``), read from the night's config.

Every setting a person can change is declared once, in ``Config`` (its default and its comment),
under the same name here and in the gate's ``GateConfig``, which read their defaults from it.
``LoopSettings.from_config`` is the one way from a config to the loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from skillopt_sleep.gate import decide as gating
from skillopt_sleep.config import Config


def gate_config(config: Config) -> gating.GateConfig:
    """The gate's settings from ``config``: a gate looks once per ``val_samples`` up to the ceiling."""
    return gating.GateConfig(
        min_gain=config.min_gain,
        gain_alpha=config.gain_alpha,
        looks=math.ceil(config.max_val_samples / config.val_samples),
        regression_tolerance=config.regression_tolerance,
        regression_alpha=config.regression_alpha,
    )


@dataclass
class LoopSettings:
    """What ``consolidate`` reads; each field is the ``Config`` setting of the same name (see there)."""

    k: int = Config.k
    val_samples: int = Config.val_samples
    max_val_samples: int = Config.max_val_samples
    max_edits: int = Config.max_edits
    screen_pool: int = Config.screen_pool
    reflect_samples: int = Config.reflect_samples
    targeted_gain: bool = Config.targeted_gain
    k_agree: int = Config.k_agree
    dream_kind_tasks: int = Config.dream_kind_tasks
    val_others_samples: int = Config.val_others_samples
    retire_rules: bool = Config.retire_rules
    retire_margin: float = Config.retire_margin
    # not a person's settings: an edit whose own tasks are fewer than this gets proportionally
    # more samples per task (one target task at 12 samples cannot tell 0.3 from 0.9 reliably enough)
    min_focus_tasks: int = 2
    # several edits: each gated on its own val tasks, their combination once on every val task
    # (``together.py``); off: each edit on every val task, then their combination (benchmarks)
    together: bool = True
    gate: gating.GateConfig = field(default_factory=lambda: gate_config(Config()))

    @classmethod
    def from_config(cls, config: Config, max_edits: int | None = None) -> LoopSettings:
        """The loop's settings; ``max_edits``: tonight's scheduled edit budget (default: the config's)."""
        return cls(
            k=config.k,
            val_samples=config.val_samples,
            max_val_samples=config.max_val_samples,
            max_edits=max_edits or config.max_edits,
            screen_pool=config.screen_pool,
            reflect_samples=config.reflect_samples,
            targeted_gain=config.targeted_gain,
            k_agree=config.k_agree,
            dream_kind_tasks=config.dream_kind_tasks,
            val_others_samples=config.val_others_samples,
            retire_rules=config.retire_rules,
            retire_margin=config.retire_margin,
            gate=gate_config(config),
        )

    @property
    def first_samples(self) -> int:
        """Samples every val task gets under tonight's documents while the train tasks are dreamed
        (and the report's val scores are measured on): as many as any gate starts a task with."""
        return min(self.val_samples, self.val_others_samples or self.val_samples)
