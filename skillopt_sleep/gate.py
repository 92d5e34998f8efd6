"""The accept/reject decision: pure functions over per-task samples of scores.

Baseline and candidate are compared *paired by task*. A candidate is accepted only when
  * val does not overlap train (otherwise the night cannot be validated),
  * the mean per-task gain is at least ``min_gain`` and its lower confidence bound is above 0
    (at ``gain_alpha``, split over the sequential looks the caller may take),
  * no val task regressed: a per-task drop beyond ``regression_tolerance`` that a one-sided Welch
    test finds significant at ``regression_alpha`` shared across the val tasks (Bonferroni), so
    the chance of refusing a good edit for noise stays near ``regression_alpha`` however many
    tasks there are. Variances are shrunk towards that of a 0/1 score, so a handful of unanimous
    samples is never mistaken for certainty.
When the evidence is inconclusive — a gain not yet significant, or any apparent drop — the caller
draws more samples (``wants_more``) up to its ceiling before the verdict stands.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from collections.abc import Iterable, Mapping, Sequence

from skillopt_sleep.types import GateDecision, TaskDelta


@dataclass(frozen=True)
class GateConfig:
    min_gain: float = 0.02
    gain_alpha: float = 0.05  # chance of accepting an edit whose true gain is zero
    looks: int = 1  # how many times the caller may test as samples grow (sequential testing)
    regression_tolerance: float = 0.0
    regression_alpha: float = 0.05  # family-wise false-alarm rate of the per-task regression tests

    @property
    def z(self) -> float:
        """One-sided critical value for the gain, Bonferroni-split over the looks, so drawing
        more samples while unsure does not inflate the false-accept rate."""
        return NormalDist().inv_cdf(1 - self.gain_alpha / max(1, self.looks))


def t_quantile(p: float, df: float) -> float:
    """Upper quantile of Student's t (Cornish-Fisher expansion; exact enough for df >= 2)."""
    z = NormalDist().inv_cdf(p)
    if df <= 0 or math.isinf(df):
        return z
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


def _welch_df(b: Sequence[float], c: Sequence[float]) -> float:
    vb, vc = _var_shrunk(b) / len(b), _var_shrunk(c) / len(c)
    num = (vb + vc) ** 2
    den = (vb**2 / (len(b) - 1) if len(b) > 1 else 0) + (vc**2 / (len(c) - 1) if len(c) > 1 else 0)
    return num / den if den > 0 else float("inf")


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def _var(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return 0.0
    m = _mean(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def _var_shrunk(xs: Sequence[float]) -> float:
    """Sample variance pooled with one pseudo-observation of variance 1/4 (the most a 0..1 score
    can have): a few unanimous samples, or a single one, do not prove the variance is zero."""
    n = len(xs)
    return ((n - 1) * _var(xs) + 0.25) / n


def _se(b: Sequence[float], c: Sequence[float]) -> float:
    return math.sqrt(_var_shrunk(b) / len(b) + _var_shrunk(c) / len(c))


def decide(baseline: Mapping[str, Sequence[float]], candidate: Mapping[str, Sequence[float]],
           cfg: GateConfig = GateConfig(), train_ids: Iterable[str] = (),
           focus: Iterable[str] | None = None) -> GateDecision:
    """Compare scores per val task (task id -> samples of the soft score).

    ``focus``: the val tasks the edit is meant to help (same kind as its evidence). The gain is
    tested on them alone — a rule for commit messages should not need luck on release notes to
    pass — while every val task is still guarded against regression. Empty or absent: all tasks.
    """
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
    alpha = cfg.regression_alpha / len(task_ids)
    suspect: list[str] = []  # dropped by more than half a standard error: worth more samples
    for tid in task_ids:
        b, c = list(baseline[tid]), list(candidate[tid])
        if not b or not c:
            raise ValueError(f"task {tid} has no samples")
        mb, mc, se = _mean(b), _mean(c), _se(b, c)
        delta = mc - mb
        critical = t_quantile(1 - alpha, _welch_df(b, c))
        regressed = delta < -cfg.regression_tolerance and -delta > critical * se
        per_task.append(TaskDelta(tid, round(mb, 4), round(mc, 4), round(delta, 4), len(b), len(c), regressed))
        ses.append(se)
        if delta < -cfg.regression_tolerance and (regressed or -delta > 0.5 * se):
            suspect.append(tid)
        if regressed:
            reasons.append(f"task {tid} regressed: {mb:.3f} -> {mc:.3f} over {len(c)} samples "
                           f"(drop {-delta:.3f} > {critical:.2f} x se {se:.3f})")
    n = len(task_ids)
    base_score = sum(d.baseline for d in per_task) / n
    cand_score = sum(d.candidate for d in per_task) / n
    focused = set(focus or ()) & set(task_ids)
    chosen = [i for i, d in enumerate(per_task) if d.task_id in focused] or list(range(n))
    gain = sum(per_task[i].delta for i in chosen) / len(chosen)
    se_gain = math.sqrt(sum(ses[i] ** 2 for i in chosen)) / len(chosen)
    lower = gain - cfg.z * se_gain
    statistic = {"name": "paired per-task mean difference", "gain": round(gain, 4),
                 "gain_over": sorted(per_task[i].task_id for i in chosen) if focused else "all val tasks",
                 "se": round(se_gain, 4), "lower_bound": round(lower, 4), "z": cfg.z,
                 "min_gain": cfg.min_gain, "n_tasks": n, "regression_alpha": cfg.regression_alpha,
                 "suspect_tasks": suspect}
    if gain < cfg.min_gain:
        reasons.append(f"gain {gain:+.3f} is below the minimum {cfg.min_gain:.3f}")
    elif lower <= 0:
        reasons.append(f"gain {gain:+.3f} is not distinguishable from noise (lower bound {lower:+.3f})")
    accepted = not reasons
    return GateDecision(accepted, "accept" if accepted else "reject", round(base_score, 4),
                        round(cand_score, 4), per_task, statistic, reasons)


def wants_more(decision: GateDecision, cfg: GateConfig = GateConfig()) -> list[str]:
    """Val tasks worth more samples: the verdict could flip with more evidence.

    That is every task when the gain looks real but is not yet significant, and every task that
    dropped by more than half a standard error — so a regression refuses an edit only once it holds at
    the sample ceiling."""
    if decision.action == "skip":
        return []
    stat = decision.statistic
    tasks: set[str] = set()
    if stat.get("gain", 0) >= cfg.min_gain and stat.get("lower_bound", 0) <= 0:
        over = stat.get("gain_over")
        tasks.update(over if isinstance(over, list) else (d.task_id for d in decision.per_task))
    tasks.update(stat.get("suspect_tasks", []))
    return sorted(tasks)
