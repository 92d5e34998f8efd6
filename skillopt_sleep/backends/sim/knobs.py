"""The simulator's knobs: what it is told, not what it works out (the module docstring of
``skillopt_sleep.backends.sim`` states what each one does). The honesty knobs ``leak``,
``verbose``, ``overload``, ``conflict``, ``corr`` and ``substance`` default to off: None, 0, 0, None,
0 and 0."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from typing import Any

PROBABILITIES = ("follow", "base", "correct", "harmful", "overload", "corr", "drift")
OPTIONAL_PROBABILITIES = ("leak", "conflict")
MAX_POINTS = 12  # of a task's substance (``substance``)
HONESTY = ("leak", "verbose", "overload", "free_rules", "conflict", "corr", "drift", "substance")


@dataclass(frozen=True)
class SimKnobs:
    follow: float = 0.9
    base: float = 0.15
    correct: float = 0.6
    harmful: float = 0.2
    seed: int = 0
    latency: float = 0.0
    down: bool = False
    leak: float | None = None
    verbose: int = 0
    overload: float = 0.0
    free_rules: int = 8
    conflict: float | None = None
    corr: float = 0.0
    drift: float = 0.0
    substance: int = 0

    def __post_init__(self) -> None:
        for name in PROBABILITIES:
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"sim knob {name}={value} must be within 0..1")
        for name in OPTIONAL_PROBABILITIES:
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"sim knob {name}={value} must be within 0..1")
        if self.latency < 0:
            raise ValueError("sim knob latency must be >= 0")
        if self.verbose < 0 or self.free_rules < 0 or not 0 <= self.substance <= MAX_POINTS:
            raise ValueError(f"sim knobs verbose and free_rules must be >= 0, substance within 0..{MAX_POINTS}")

    def effective_follow(self, n_rules: int) -> float:
        """``follow * (1 - overload) ** max(0, n_rules - free_rules)``: instruction overload."""
        return self.follow * (1.0 - self.overload) ** max(0, n_rules - self.free_rules)

    def honesty(self) -> dict[str, float | int | None]:
        """The honesty knobs that are on, by name (what a benchmark states)."""
        defaults = SimKnobs()
        return {k: getattr(self, k) for k in HONESTY if getattr(self, k) != getattr(defaults, k)}

    def rng(self, *parts: object) -> random.Random:
        """A generator seeded by ``seed`` and ``parts``: the same request draws the same answer."""
        blob = json.dumps([self.seed, *parts], sort_keys=True, default=str)
        return random.Random(int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big"))


def knobs_from_options(options: dict[str, Any]) -> SimKnobs:
    """The knobs a spec's options name (``sim:follow=0.9,seed=7``); unknown names are an error."""
    known = {"follow", "base", "correct", "harmful", "seed", "latency", "down", *HONESTY}
    unknown = set(options) - known
    if unknown:
        raise ValueError(f"unknown sim option(s): {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")
    opts = dict(options)
    for key in ("seed", "verbose", "free_rules", "substance"):
        if key in opts:
            opts[key] = int(opts[key])
    for key in OPTIONAL_PROBABILITIES:
        if key in opts:
            opts[key] = None if str(opts[key]).lower() in ("none", "off", "false", "") else float(opts[key])
    if "down" in opts:
        down = opts["down"]
        if isinstance(down, str):
            down = down.strip().lower() in ("1", "true", "yes", "on")
        opts["down"] = bool(down)
    for key in (*PROBABILITIES, "latency"):
        if key in opts:
            opts[key] = float(opts[key])
    return SimKnobs(**opts)
