"""The simulator writing dream variants (purpose ``vary``): the source request with a new concrete
subject — its numbers redrawn, or a case number added — and its context kept.

It never sees or changes what is checked (the engine carries the source's judge over), and as a
target the simulator answers a variant exactly as it answers any task with those checks: a variant
is neither easier nor harder than its source.
"""

from __future__ import annotations

import json
import re

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.sim.knobs import SimKnobs

NUMBER_RE = re.compile(r"\d+")


def vary(knobs: SimKnobs, request: Request) -> tuple[str, list[str]]:
    task = request.payload.get("task") or {}
    intent = str(task.get("intent") or "")
    n = max(0, int(request.payload.get("n") or 1))
    rng = knobs.rng("vary", task.get("id"), intent, n, request.sample)
    variants = []
    for _ in range(n):
        if NUMBER_RE.search(intent):
            new = NUMBER_RE.sub(lambda m: str(rng.randint(2, 999)), intent)
        else:
            new = f"{intent} (case {rng.randint(2, 999)})"
        variants.append({"intent": new, "context_excerpt": str(task.get("context_excerpt") or "")})
    return json.dumps({"variants": variants}), []
