"""The accept/reject decision: pure functions over per-task samples of scores.

Baseline and candidate are compared *paired by task*. A candidate is accepted only when
  * val does not overlap train (otherwise the night cannot be validated),
  * the mean per-task gain is at least ``min_gain`` and is shown (at ``gain_alpha``, split over
    the sequential looks the caller may take and over the edits the caller tests that night —
    ``share`` — so four useless edits are no likelier to slip through than one): by an exact test
    of every way the tasks' samples could have split between the two document sets
    (``exact_p``), which scores that are shares of a few checks allow, else by its lower
    confidence bound (Student's t) being above 0. When the edit names the checks it fixes
    (``Edit.targets``) the gain is that of those checks' pass rate: a rule for one check of a task
    is not drowned by the noise of the task's other checks — and then the task's whole score must
    rise too, shown the same way at ``score_alpha`` spent over the looks (not split over the edits:
    the strict, split test is the targeted one), so a rule that fixes its check by breaking another
    of the same task passes at most ``score_alpha`` of the time,
  * the mean over *all* val tasks does not fall: its lower confidence bound (at ``mean_alpha``)
    is at least 0, so an edit cannot buy a gain on its own kind with a larger loss elsewhere,
  * no val task regressed: a per-task drop beyond ``regression_tolerance`` that a one-sided Welch
    test finds significant at ``regression_alpha`` shared across the val tasks (Bonferroni), so
    the chance of refusing a good edit for noise stays near ``regression_alpha`` however many
    tasks there are. Variances are shrunk towards that of a 0/1 score, so a handful of unanimous
    samples is never mistaken for certainty.
When the evidence is inconclusive — a gain not yet significant, or an apparent drop that alone
stands between the edit and acceptance — the caller draws more samples (``wants_more``) up to its
ceiling before the verdict stands. An observed gain below ``min_gain`` ends the test at once.

``significant_harm`` says whether a refusal is evidence of harm (worth banning the rule) rather
than a failure to show a benefit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from collections.abc import Iterable, Mapping, Sequence

from skillopt_sleep.config import GateSettings
from skillopt_sleep.types import GateDecision, TaskDelta
from skillopt_sleep.gate.exact import exact_p
from skillopt_sleep.gate import stats
from skillopt_sleep.gate.stats import t_quantile


@dataclass(frozen=True)
class GateConfig:
    """The gate's settings. Those a person can change are declared once, in ``Config``'s ``gate``
    section (the same names): their defaults are read from there (``GateSettings``)."""

    min_gain: float = GateSettings.min_gain
    gain_alpha: float = GateSettings.gain_alpha  # chance of accepting an edit whose true gain is zero
    looks: int = 1  # how many times the caller may test as samples grow (sequential testing)
    regression_tolerance: float = GateSettings.regression_tolerance
    regression_alpha: float = (
        GateSettings.regression_alpha
    )  # family-wise false-alarm rate of the per-task regression tests
    mean_alpha: float = 0.3  # chance of passing an edit whose all-task mean does not rise
    futility_z: float = 1.0  # stop sampling once even gain + futility_z x se could not pass
    harm_alpha: float = 0.05  # chance of calling a harmless edit harmful (and banning it)
    score_alpha: float = 0.05  # chance of passing a targeted edit whose own tasks' score does not rise
    # how the false-accept rate is spent over the looks (``part``): look k of K may spend up to
    # (k/K)^spending of it; 1 spends evenly, larger values keep more for the last look
    spending: float = 1.5

    @property
    def z(self) -> float:
        """One-sided critical value for the gain, Bonferroni-split over the looks, so drawing
        more samples while unsure does not inflate the false-accept rate."""
        return self.z_for(1.0)

    def z_for(self, share: float, look: int | None = None) -> float:
        return NormalDist().inv_cdf(1 - self.alpha_for(share, look))

    def alpha_for(self, share: float, look: int | None = None) -> float:
        """The false-accept rate one test may spend when it may use only ``share`` of
        ``gain_alpha`` (the night tests several edits, or the edit was tested on earlier nights).

        ``look`` (1-based) spends the alpha unevenly over the looks, growing like look^1.5
        (an alpha-spending plan, ``spending``): the first look, on few samples where a lucky draw is
        likeliest, is the strictest and the last one the most lenient; the parts still add up to
        the whole, so the false-accept rate holds. A rule whose effect is large is decided at its
        first look (a check going from 0.05 to 0.98 on three tasks at three samples each, also
        when one of the nine candidate samples misses), one whose effect is moderate keeps most of
        the rate for its last. Without ``look``: an even
        (Bonferroni) split."""
        share = min(1.0, max(share, 1e-9))
        return self.gain_alpha * share * self.part(look)

    def part(self, look: int | None) -> float:
        """The share of an error rate that look ``look`` of ``looks`` may spend (``alpha_for``)."""
        looks = max(1, self.looks)
        k = min(max(look or 1, 1), looks)
        if look is None:
            return 1 / looks
        return (k**self.spending - (k - 1) ** self.spending) / looks**self.spending


def _gain(deltas: Sequence[TaskDelta], ses: Sequence[float]) -> tuple[float, float, int]:
    """Mean per-task difference, its standard error under "nothing changed", and the pooled
    degrees of freedom."""
    n = len(deltas)
    return (
        sum(d.delta for d in deltas) / n,
        math.sqrt(sum(s**2 for s in ses)) / n,
        max(1, sum(d.n_baseline + d.n_candidate - 2 for d in deltas)),
    )


def _targeted(
    baseline: Mapping[str, Sequence[float]], candidate: Mapping[str, Sequence[float]], task_ids: Iterable[str]
) -> tuple[list[TaskDelta], list[float]]:
    deltas, ses = [], []
    for tid in task_ids:
        b, c = list(baseline.get(tid) or ()), list(candidate.get(tid) or ())
        if b and c:
            deltas.append(
                TaskDelta(
                    tid,
                    round(stats.mean(b), 4),
                    round(stats.mean(c), 4),
                    round(stats.mean(c) - stats.mean(b), 4),
                    len(b),
                    len(c),
                )
            )
            ses.append(stats.se_null(b, c))
    return deltas, ses


def _fallen_kinds(
    baseline: Mapping[str, Sequence[float]],
    candidate: Mapping[str, Sequence[float]],
    per_task: Sequence[TaskDelta],
    ses: Sequence[float],
    kinds: Mapping[str, str],
    cfg: GateConfig,
) -> list[tuple[str, list[str], str, bool]]:
    """Each kind with two or more val tasks, tested as a whole for a fall: (kind, its tasks, why it
    fell — "" when it did not —, whether its tasks are worth more samples).

    A rule that halves another kind's check lowers each of that kind's tasks by less than a
    per-task test shared over every val task can see, while the all-task mean may still rise with
    the rule's own gain; over the kind's tasks together the fall shows. The kind's mean per-task
    drop is tested one-sided — exactly where the scores allow (``exact_p`` with the two sides
    swapped), else Student's t — at ``regression_alpha`` shared over the kinds tested; its tasks
    are drawn further while the drop exceeds half a standard error, so, as a task's regression, a
    fall refuses an edit only once it holds at the sample ceiling."""
    index = {d.task_id: i for i, d in enumerate(per_task)}
    groups: dict[str, list[str]] = {}
    for tid in index:
        if tid in kinds:
            groups.setdefault(kinds[tid], []).append(tid)
    groups = {kind: ids for kind, ids in groups.items() if len(ids) >= 2}
    alpha = cfg.regression_alpha / max(1, len(groups))
    out = []
    for kind, ids in sorted(groups.items()):
        rows = [per_task[index[tid]] for tid in ids]
        gain, se, df = _gain(rows, [ses[index[tid]] for tid in ids])
        drop = -gain
        if drop <= cfg.regression_tolerance:
            out.append((kind, ids, "", False))
            continue
        p = exact_p(candidate, baseline, ids)
        fell = p <= alpha if p is not None else drop > t_quantile(1 - alpha, df) * se
        before, after = sum(d.baseline for d in rows) / len(rows), sum(d.candidate for d in rows) / len(rows)
        evidence = f"p {p:.2g}, exact" if p is not None else f"se {se:.3f}"
        why = f"the {len(ids)} val tasks of kind {kind} fell: {before:.3f} -> {after:.3f} ({evidence})" if fell else ""
        out.append((kind, ids, why, fell or drop > 0.5 * se))
    return out


def decide(
    baseline: Mapping[str, Sequence[float]],
    candidate: Mapping[str, Sequence[float]],
    cfg: GateConfig = GateConfig(),
    train_ids: Iterable[str] = (),
    focus: Iterable[str] | None = None,
    share: float = 1.0,
    look: int | None = None,
    targeted: tuple[Mapping[str, Sequence[float]], Mapping[str, Sequence[float]]] | None = None,
    kinds: Mapping[str, str] | None = None,
    gain_known: bool = False,
) -> GateDecision:
    """Compare scores per val task (task id -> samples of the soft score).

    ``focus``: the val tasks the edit is meant to help (same kind as its evidence). The gain is
    tested on them alone — a rule for commit messages should not need luck on release notes to
    pass — while every val task is still guarded against regression and the mean over all of
    them must not fall. Empty or absent: all tasks. ``share``: the part of ``gain_alpha`` this
    test may spend and ``look`` which look this is (``GateConfig.z_for``). ``train_ids``: val tasks that duplicate a train task.
    ``targeted``: baseline and candidate samples of the pass rate of the checks the edit fixes,
    per focus task that has them; the gain is tested on these, and the focus tasks' score must
    rise as well (module docstring). None, or no focus task with samples: the score alone.
    ``kinds``: each val task's kind; a kind with several val tasks must not fall as a whole
    (``_fallen_kinds``). ``gain_known``: the gain was shown before, by tests of their own
    (the night's rules put together, ``gate.together``): it is reported, not tested again; the
    regressions, a kind's fall and the all-task mean decide.
    """
    task_ids = sorted(set(baseline) & set(candidate))
    overlap = sorted(set(task_ids) & set(train_ids))
    if not task_ids:
        return GateDecision(False, "skip", 0.0, 0.0, reasons=["no val tasks: the night cannot be validated"])
    if overlap:
        return GateDecision(
            False,
            "skip",
            0.0,
            0.0,
            reasons=[f"val overlaps train ({', '.join(overlap[:5])}): the night cannot be validated"],
        )
    per_task: list[TaskDelta] = []
    reasons: list[str] = []
    ses = []  # under "nothing changed": for the gain and the all-task mean
    alpha = cfg.regression_alpha / len(task_ids)
    suspect: list[str] = []  # dropped by more than half a standard error: worth more samples
    # their standard errors (``wants_more`` asks what more samples of each could show); none for a
    # task of a kind that may have fallen, drawn with its kind
    suspect_se: dict[str, float] = {}
    for tid in task_ids:
        b, c = list(baseline[tid]), list(candidate[tid])
        if not b or not c:
            raise ValueError(f"task {tid} has no samples")
        mb, mc, se = stats.mean(b), stats.mean(c), stats.se(b, c)
        delta = mc - mb
        critical = t_quantile(1 - alpha, stats.welch_df(b, c))
        regressed = delta < -cfg.regression_tolerance and -delta > critical * se
        per_task.append(TaskDelta(tid, round(mb, 4), round(mc, 4), round(delta, 4), len(b), len(c), regressed))
        ses.append(stats.se_null(b, c))
        if delta < -cfg.regression_tolerance and (regressed or -delta > 0.5 * se):
            suspect.append(tid)
            suspect_se[tid] = round(se, 6)
        if regressed:
            reasons.append(
                f"task {tid} regressed: {mb:.3f} -> {mc:.3f} over {len(c)} samples "
                f"(drop {-delta:.3f} > {critical:.2f} x se {se:.3f})"
            )
    fallen = _fallen_kinds(baseline, candidate, per_task, ses, kinds or {}, cfg)
    for _, ids, why, suspect_kind in fallen:
        if why:
            reasons.append(why)
        if suspect_kind:
            suspect.extend(tid for tid in ids if tid not in suspect)
            for tid in ids:  # a kind that may have fallen is drawn as a whole, its tasks' drops together
                suspect_se.pop(tid, None)
    n = len(task_ids)
    base_score = sum(d.baseline for d in per_task) / n
    cand_score = sum(d.candidate for d in per_task) / n
    focused = set(focus or ()) & set(task_ids)
    chosen = [i for i, d in enumerate(per_task) if d.task_id in focused] or list(range(n))
    score_gain, score_se, score_df = _gain([per_task[i] for i in chosen], [ses[i] for i in chosen])
    checks, check_ses = _targeted(*targeted, [per_task[i].task_id for i in chosen]) if targeted else ([], [])
    gain, se_gain, df = _gain(checks, check_ses) if checks else (score_gain, score_se, score_df)
    # Student's t on the pooled samples' degrees of freedom: a handful of 0/1 samples is far
    # from normal, and a lucky draw on one task must not pass for proof
    z = t_quantile(1 - cfg.alpha_for(share, look), df)
    lower = gain - z * se_gain
    # where the scores take few values (shares of a few checks) the gain is tested exactly instead
    # (``exact_p``); Student's t stays for the others
    gain_ids = [d.task_id for d in checks] if checks else [per_task[i].task_id for i in chosen]
    p_gain = exact_p(*(targeted if checks and targeted else (baseline, candidate)), gain_ids)
    gain_shown = p_gain <= cfg.alpha_for(share, look) if p_gain is not None else lower > 0
    # spent over the looks like the gain's, so drawing more samples while unsure does not give a
    # rule that breaks as much as it fixes more chances to pass (not shared over the night's edits:
    # the targeted test controls the false accepts of the family)
    score_z = t_quantile(1 - cfg.score_alpha * cfg.part(look), score_df)
    score_lower = score_gain - score_z * score_se if checks else lower
    p_score = exact_p(baseline, candidate, [per_task[i].task_id for i in chosen]) if checks else p_gain
    score_shown = (
        (p_score <= cfg.score_alpha * cfg.part(look) if p_score is not None else score_lower > 0)
        if checks
        else gain_shown
    )
    mean_gain, se_mean, mean_df = _gain(per_task, ses)
    z_mean = t_quantile(1 - cfg.mean_alpha, mean_df)
    mean_lower = mean_gain - z_mean * se_mean
    mean_upper = mean_gain + NormalDist().inv_cdf(1 - cfg.harm_alpha) * se_mean
    statistic = {
        "name": "paired per-task mean difference",
        "gain": round(gain, 4),
        "gain_over": sorted(per_task[i].task_id for i in chosen) if focused else "all val tasks",
        "gain_of": "the checks it fixes" if checks else "the score",
        "se": round(se_gain, 4),
        "lower_bound": round(lower, 4),
        "gain_shown": gain_shown,
        "z": z,
        "alpha_share": share,
        "look": look,
        "score_gain": round(score_gain, 4),
        "score_se": round(score_se, 4),
        "score_lower_bound": round(score_lower, 4),
        "score_shown": score_shown,
        "mean_gain": round(mean_gain, 4),
        "mean_se": round(se_mean, 4),
        "mean_lower_bound": round(mean_lower, 4),
        "mean_upper_bound": round(mean_upper, 4),
        "min_gain": cfg.min_gain,
        "n_tasks": n,
        "regression_alpha": cfg.regression_alpha,
        "suspect_tasks": suspect,
        "suspect_se": suspect_se,
        "regression_alpha_per_task": alpha,
    }
    if any(why for _, _, why, _ in fallen):
        statistic["fallen_kinds"] = sorted(kind for kind, _, why, _ in fallen if why)
    if p_gain is not None:
        statistic["p_value"] = float(f"{p_gain:.3g}")
    if checks:
        statistic["checks_per_task"] = [d.to_dict() for d in checks]
        if p_score is not None:
            statistic["score_p_value"] = float(f"{p_score:.3g}")
    what = "of the checks it fixes " if checks else ""
    if gain_known:
        statistic["gain_shown"] = statistic["score_shown"] = True
        statistic["gain_known"] = True
    elif gain < cfg.min_gain:
        reasons.append(f"gain {what}{gain:+.3f} is below the minimum {cfg.min_gain:.3f}")
    elif not gain_shown:
        evidence = f"p {p_gain:.2g}, exact" if p_gain is not None else f"lower bound {lower:+.3f}"
        reasons.append(f"gain {what}{gain:+.3f} is not distinguishable from noise ({evidence})")
    elif checks and score_gain < cfg.min_gain:
        reasons.append(
            f"gain in its own tasks' score {score_gain:+.3f} is below the minimum {cfg.min_gain:.3f} "
            f"(its checks gained {gain:+.3f})"
        )
    elif checks and not score_shown:
        evidence = f"p {p_score:.2g}, exact" if p_score is not None else f"lower bound {score_lower:+.3f}"
        reasons.append(
            f"gain in its own tasks' score {score_gain:+.3f} is not distinguishable from noise "
            f"({evidence}; its checks gained {gain:+.3f})"
        )
    if mean_upper < 0:
        reasons.append(f"the mean over all {n} val tasks fell: {mean_gain:+.3f} (upper bound {mean_upper:+.3f})")
    elif (gain_known or gain >= cfg.min_gain) and mean_lower < 0:
        reasons.append(f"the mean over all {n} val tasks may fall: {mean_gain:+.3f} (lower bound {mean_lower:+.3f})")
    accepted = not reasons
    return GateDecision(
        accepted,
        "accept" if accepted else "reject",
        round(base_score, 4),
        round(cand_score, 4),
        per_task,
        statistic,
        reasons,
    )


def wants_more(decision: GateDecision, cfg: GateConfig = GateConfig(), ceiling: int | None = None) -> list[str]:
    """Val tasks worth more samples: the verdict could flip with more evidence.

    Nothing once the gain is futile (``futile``): more samples would most likely only confirm a
    refusal. Otherwise every task while the gain
    is not yet significant or the all-task mean not yet shown not to fall, and every task that
    dropped by more than half a standard error — so a regression refuses an edit only once it
    holds at the sample ceiling. ``ceiling``: the samples a task may reach; a task that dropped
    is then drawn further only while its drop is within ``futility_z`` standard errors of what
    its regression test needs there (``could_show_drop``): one a little below by chance is not
    drawn to the ceiling."""
    stat = decision.statistic
    if decision.action == "skip":
        return []
    if futile(decision, cfg):
        return []
    tasks: set[str] = set()
    gain_shown = stat.get("gain_shown", stat.get("lower_bound", 0) > 0)
    score_shown = stat.get("score_shown", stat.get("score_lower_bound", 0) > 0)
    if not gain_shown or not score_shown or stat.get("mean_lower_bound", 0) < 0:
        # every task: what the edit costs elsewhere is measured as closely as what it gains
        tasks.update(d.task_id for d in decision.per_task)
    tasks.update(suspects_worth_more(decision, cfg, ceiling))
    return sorted(tasks)


def suspects_worth_more(decision: GateDecision, cfg: GateConfig, ceiling: int | None = None) -> list[str]:
    """The tasks ``decision`` found to have dropped that more samples could still show so
    (``could_show_drop``, each at its own samples against ``ceiling``; every one when ``ceiling``
    is None). A task of a kind that may have fallen has no standard error of its own: it is drawn
    with its kind."""
    stat = decision.statistic
    ses = stat.get("suspect_se") or {}
    alpha = stat.get("regression_alpha_per_task") or cfg.regression_alpha
    n = {d.task_id: d.n_candidate for d in decision.per_task}
    drop = {d.task_id: -d.delta for d in decision.per_task}
    return [
        tid
        for tid in stat.get("suspect_tasks", [])
        if ceiling is None
        or tid not in ses
        or tid not in n
        or could_show_drop(drop[tid], ses[tid], alpha, math.sqrt(n[tid] / max(n[tid], ceiling)), cfg)
    ]


def could_show_drop(drop: float, se: float, alpha: float, shrink: float, cfg: GateConfig) -> bool:
    """Whether a drop of ``drop`` at standard error ``se`` is within ``futility_z`` standard errors
    of what a one-sided test at ``alpha`` needs once the error has shrunk by ``shrink`` (the square
    root of the samples now over those at the ceiling): more samples could still show it."""
    return drop > 0 and drop + cfg.futility_z * se > NormalDist().inv_cdf(1 - alpha) * se * shrink


def futile(decision: GateDecision, cfg: GateConfig = GateConfig()) -> bool:
    """Even ``futility_z`` standard errors better than observed, the gain would stay below what
    the last look needs: ``min_gain``, or its critical value at the standard error the remaining
    looks can reach (the error shrinks like 1/sqrt(samples), and samples grow with the looks)."""
    stat = decision.statistic
    if stat.get("gain_known"):
        return False  # no gain is tested: more samples can only settle what it does elsewhere
    gain, se = stat.get("gain", 0.0), stat.get("se", 0.0)
    look = stat.get("look") or 1
    looks = max(1, cfg.looks)
    final_se = se * math.sqrt(min(look, looks) / looks)
    needed = max(cfg.min_gain, cfg.z_for(stat.get("alpha_share", 1.0), looks) * final_se)
    if gain + cfg.futility_z * se < needed:
        return True
    # a targeted edit must also raise its tasks' score, at ``score_alpha`` (``decide``)
    score, score_se = stat.get("score_gain", gain), stat.get("score_se", se)
    final_score_se = score_se * math.sqrt(min(look, looks) / looks)
    needed = max(cfg.min_gain, NormalDist().inv_cdf(1 - cfg.score_alpha * cfg.part(looks)) * final_score_se)
    return stat.get("gain_of") == "the checks it fixes" and score + cfg.futility_z * score_se < needed


def significant_harm(decision: GateDecision) -> bool:
    """The edit made things worse beyond noise: a val task regressed significantly, a kind's val
    tasks fell together, or the mean over all val tasks fell (upper confidence bound below 0). Only this bans a rule; a gain that
    was merely not shown is no evidence against it."""
    if decision.action == "skip":
        return False
    if any(t.regressed for t in decision.per_task) or decision.statistic.get("fallen_kinds"):
        return True
    upper = decision.statistic.get("mean_upper_bound")
    return isinstance(upper, (int, float)) and upper < 0
