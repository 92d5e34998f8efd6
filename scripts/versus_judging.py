"""What ``bench_versus.py``'s world makes of an engine's documents: each adopted rule's class
(covering, neutral, harmful, trade-off) and the documents' ground truth, the same for both engines."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import versus_world as vw  # noqa: E402
import versus_worlds_extra as extra  # noqa: E402

CLASSES = ("covering", "neutral", "harmful", "trade-off")


def classified(rules: list[str], world: str) -> dict[str, Any]:
    tasks = vw.world_tasks()
    out: dict[str, Any] = {**dict.fromkeys(CLASSES, 0), "rules": []}
    for rule in rules:
        label = vw.classify(rule, tasks, extra.logic(world))
        out[label] += 1
        out["rules"].append({"rule": rule, "class": label})
    return out


def truths(knobs: vw.SimKnobs, documents: str, world: str) -> dict[str, float]:
    """The ground truth of the documents (and, under correlation, what these tasks' latents make of it)."""
    out = {"ground_truth": round(vw.ground_truth(knobs, vw.world_tasks(), documents, world), 4)}
    if knobs.corr:
        out["ground_truth_tasks"] = round(vw.tasks_truth(knobs, vw.world_tasks(), documents, world), 4)
    return out
