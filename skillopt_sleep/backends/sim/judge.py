"""The simulator as a rubric *judge*: the share of the rubric's quoted phrases the response holds."""

from __future__ import annotations

import json
import re

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.sim.knobs import SimKnobs


def judge(knobs: SimKnobs, request: Request) -> tuple[str, list[str]]:
    rubric = str(request.payload.get("rubric", ""))
    response = str(request.payload.get("response", "")).lower()
    phrases = re.findall(r'"([^"]+)"', rubric)
    score = sum(p.lower() in response for p in phrases) / len(phrases) if phrases else 0.5
    return json.dumps({"score": score, "reason": f"{len(phrases)} rubric phrases checked"}), []
