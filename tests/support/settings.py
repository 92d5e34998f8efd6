"""Loop settings at a stated first round, for tests whose numbers follow from it (a ceiling of 12
reached in looks of 4), whatever the product's default."""

from __future__ import annotations

from skillopt_sleep.config import Config
from skillopt_sleep.gate.settings import LoopSettings


def looks_of(val_samples: int) -> LoopSettings:
    """The default settings, with ``val_samples`` per look (the gate's looks follow from it)."""
    return LoopSettings.from_config(Config(val_samples=val_samples))
