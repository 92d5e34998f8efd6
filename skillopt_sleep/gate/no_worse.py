"""The "no worse" test for a removal (non-inferiority): the statistic behind retiring a learned
rule (``gate/removal.py`` draws the samples, ``rules/retire.py`` says which rule and why). Its
per-task regression tests and its refusal of val that overlaps train are ``decide``'s."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from skillopt_sleep.gate import stats
from skillopt_sleep.gate.decide import GateConfig, decide
from skillopt_sleep.gate.stats import t_quantile
from skillopt_sleep.types import GateDecision


def no_worse(
    baseline: Mapping[str, Sequence[float]],
    candidate: Mapping[str, Sequence[float]],
    *,
    margin: float,
    alpha: float = 0.05,
    regression_alpha: float = 0.05,
    looks: int = 1,
    train_ids: Iterable[str] = (),
) -> GateDecision:
    """The "no worse" test for a removal (non-inferiority): accept ``candidate`` — the documents
    without a rule — only when the evidence shows the val scores do not fall by ``margin`` or more.

    Over the given tasks, the mean per-task drop (baseline - candidate) must have its upper
    confidence bound below ``margin`` (Student's t on the pooled samples' degrees of freedom, the
    standard error taken as if both sides were one distribution, ``se_null``, which is at least
    the unpooled one when the means differ), and no task may have regressed significantly (the
    one-sided Welch test of ``decide``, ``regression_alpha`` shared over the tasks).

    Rate controlled (the false-retire rate): a rule whose removal really lowers these tasks' mean
    by ``margin`` or more is accepted for removal with probability about ``alpha`` at most, however
    many times the caller looks as samples grow (``alpha`` is split evenly over ``looks``); the t
    bound on 0/1 scores is approximate — at a true drop of exactly 0.1 = ``margin`` over 3 tasks,
    1,000 seeds: 0.060 at 12 samples per task, 0.053 at 24 and 48, for ``alpha`` 0.05. Absence of
    evidence is never enough: with few samples the bound stays wide and the removal is refused. A
    rule whose removal changes nothing passes once samples narrow the bound below the margin (the
    price: at 0/1 scores near 0.8, 3 tasks, 3 looks, it passes 15 % of the time at 12 samples per
    task, 50 % at 48). ``lower_bound`` in the statistic >= ``margin``: the drop is shown."""
    # the per-task regression tests (and the refusal to judge val that overlaps train) are decide's
    checked = decide(baseline, candidate, GateConfig(regression_alpha=regression_alpha), train_ids)
    if checked.action == "skip":
        return checked
    per_task = checked.per_task
    reasons = [
        f"task {d.task_id} regressed without the rule: {d.baseline:.3f} -> {d.candidate:.3f} over "
        f"{d.n_candidate} samples"
        for d in per_task
        if d.regressed
    ]
    task_ids = [d.task_id for d in per_task]
    ses = [stats.se_null(baseline[tid], candidate[tid]) for tid in task_ids]
    n = len(task_ids)
    drop = sum(stats.mean(baseline[tid]) - stats.mean(candidate[tid]) for tid in task_ids) / n
    se = math.sqrt(sum(s**2 for s in ses)) / n
    t = t_quantile(1 - alpha / max(1, looks), max(1, sum(d.n_baseline + d.n_candidate - 2 for d in per_task)))
    upper, lower = drop + t * se, drop - t * se
    if upper >= margin:
        reasons.append(
            f"not shown to be no worse on {n} val task(s): drop {drop:+.3f}, upper bound "
            f"{upper:+.3f} is not below the margin {margin:.3f}"
        )
    accepted = not reasons
    statistic = {
        "name": "no worse (non-inferiority of a removal)",
        "drop": round(drop, 4),
        "se": round(se, 4),
        "upper_bound": round(upper, 4),
        "lower_bound": round(lower, 4),
        "t": t,
        "margin": margin,
        "alpha": alpha,
        "looks": looks,
        "n_tasks": n,
        "regression_alpha": regression_alpha,
    }
    return GateDecision(
        accepted,
        "accept" if accepted else "reject",
        round(sum(d.baseline for d in per_task) / n, 4),
        round(sum(d.candidate for d in per_task) / n, 4),
        per_task,
        statistic,
        reasons,
    )
