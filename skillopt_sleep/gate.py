"""The accept/reject decision: pure functions over per-task samples of scores.

Baseline and candidate are compared *paired by task*. A candidate is accepted only when
  * val does not overlap train (otherwise the night cannot be validated),
  * the mean per-task gain is at least ``min_gain`` and its lower confidence bound is above 0,
  * no val task regressed: a per-task drop beyond ``regression_tolerance`` that is larger than
    ``z`` standard errors of that task's difference (a drop with zero variance always counts).
When the evidence is inconclusive the caller may draw more samples (``wants_more``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from skillopt_sleep.types import GateDecision, TaskDelta


@dataclass(frozen=True)
class GateConfig:
    min_gain: float = 0.02
    z: float = 1.64
    regression_tolerance: float = 0.0


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def _var(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return 0.0
    m = _mean(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def _se(b: Sequence[float], c: Sequence[float]) -> float:
    return math.sqrt(_var(b) / len(b) + _var(c) / len(c))


def decide(baseline: Mapping[str, Sequence[float]], candidate: Mapping[str, Sequence[float]],
           cfg: GateConfig = GateConfig(), train_ids: Iterable[str] = ()) -> GateDecision:
    """Compare scores per val task (task id -> samples of the soft score)."""
    task_ids = sorted(set(baseline) & set(candidate))
    overlap = sorted(set(task_ids) & set(train_ids))
    if not task_ids:
        return GateDecision(False, "skip", 0.0, 0.0, reasons=["no val tasks: the night cannot be validated"])
    if overlap:
        return GateDecision(False, "skip", 0.0, 0.0,
                            reasons=[f"val overlaps train ({', '.join(overlap[:5])}): the night cannot be validated"])
    per_task: list[TaskDelta] = []
    reasons: list[str] = []
    ses = []
    for tid in task_ids:
        b, c = list(baseline[tid]), list(candidate[tid])
        if not b or not c:
            raise ValueError(f"task {tid} has no samples")
        mb, mc, se = _mean(b), _mean(c), _se(b, c)
        delta = mc - mb
        regressed = delta < -cfg.regression_tolerance and -delta > cfg.z * se
        per_task.append(TaskDelta(tid, round(mb, 4), round(mc, 4), round(delta, 4), len(b), len(c), regressed))
        ses.append(se)
        if regressed:
            reasons.append(f"task {tid} regressed: {mb:.3f} -> {mc:.3f} (drop {-delta:.3f} > {cfg.z:g} x se {se:.3f})")
    n = len(task_ids)
    base_score = sum(d.baseline for d in per_task) / n
    cand_score = sum(d.candidate for d in per_task) / n
    gain = sum(d.delta for d in per_task) / n
    se_gain = math.sqrt(sum(s * s for s in ses)) / n
    lower = gain - cfg.z * se_gain
    statistic = {"name": "paired per-task mean difference", "gain": round(gain, 4),
                 "se": round(se_gain, 4), "lower_bound": round(lower, 4), "z": cfg.z,
                 "min_gain": cfg.min_gain, "n_tasks": n}
    if gain < cfg.min_gain:
        reasons.append(f"gain {gain:+.3f} is below the minimum {cfg.min_gain:.3f}")
    elif lower <= 0:
        reasons.append(f"gain {gain:+.3f} is not distinguishable from noise (lower bound {lower:+.3f})")
    accepted = not reasons
    return GateDecision(accepted, "accept" if accepted else "reject", round(base_score, 4),
                        round(cand_score, 4), per_task, statistic, reasons)


def wants_more(decision: GateDecision, cfg: GateConfig = GateConfig()) -> list[str]:
    """Val tasks worth more samples: the verdict could flip with more evidence.

    That is every task when the gain looks real but is not yet significant, and any task whose
    apparent drop is not yet significant (or whose significant drop sits on a thin margin)."""
    if decision.action == "skip":
        return []
    stat = decision.statistic
    tasks: set[str] = set()
    if stat.get("gain", 0) >= cfg.min_gain and stat.get("lower_bound", 0) <= 0:
        tasks.update(d.task_id for d in decision.per_task)
    for d in decision.per_task:
        if d.delta < -cfg.regression_tolerance and not d.regressed:
            tasks.add(d.task_id)
    return sorted(tasks)
