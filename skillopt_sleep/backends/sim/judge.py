"""The simulator as a *judge*: a rubric's score is the share of its quoted phrases the response
holds; asked whether an answer does a task as well as a reference (``quality``), it compares the
task's points of substance each holds (``target.substance_points``), and answers right with
probability ``follow`` (otherwise a coin flip), as a model reading both would."""

from __future__ import annotations

import json
import re

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.sim.knobs import MAX_POINTS, SimKnobs
from skillopt_sleep.backends.sim.target import substance_points


def judge(knobs: SimKnobs, request: Request) -> tuple[str, list[str]]:
    rubric = str(request.payload.get("rubric", ""))
    response = str(request.payload.get("response", "")).lower()
    phrases = re.findall(r'"([^"]+)"', rubric)
    score = sum(p.lower() in response for p in phrases) / len(phrases) if phrases else 0.5
    return json.dumps({"score": score, "reason": f"{len(phrases)} rubric phrases checked"}), []


def quality(knobs: SimKnobs, request: Request) -> tuple[str, list[str]]:
    payload = request.payload
    task_id = str((payload.get("task") or {}).get("id") or "")
    answer, reference = str(payload.get("answer") or ""), str(payload.get("reference") or "")
    points = substance_points(task_id, MAX_POINTS)
    wanted = [p for p in points if p in reference]
    kept = [p for p in wanted if p in answer]
    as_good = len(kept) == len(wanted)
    rng = knobs.rng("quality", task_id, answer, reference)
    if rng.random() >= knobs.follow:
        as_good = rng.random() < 0.5
    return json.dumps({"as_good": as_good, "reason": f"{len(kept)} of {len(wanted)} points kept"}), []
