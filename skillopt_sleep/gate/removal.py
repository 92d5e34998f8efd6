"""The "no worse" test of retiring a learned rule (``retire.py``: which rule a full document may
retire, and why a removal is tested first): the removal on the val tasks the retired rule served,
drawing more samples up to the gate's ceiling while the bound is too wide, before the new rule
faces the ordinary gate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from skillopt_sleep.gate.call_cap import OUT_OF_CALLS, CallCap, out_of_calls, undecided
from skillopt_sleep.documents.managed_block import DocumentSet
from skillopt_sleep.gate.no_worse import no_worse
from skillopt_sleep.gate.evaluator import draw_within
from skillopt_sleep.rules.retire import removed_rule, serves
from skillopt_sleep.rules.scope import split_scoped
from skillopt_sleep.types import Edit, GateDecision, TaskRecord


def guarded_tasks(rule: str, val: list[TaskRecord], focus: set[str]) -> list[str]:
    """The val tasks the removal of ``rule`` must not lower: those of the kinds its scope names,
    outside the new rule's own (``focus``, where the gain test already speaks); when it names
    none of them, every val task outside ``focus``."""
    scope = split_scoped(rule)[0]
    others = [t for t in val if t.id not in focus]
    served = [t.id for t in others if scope and t.kind and serves(scope, t.kind)]
    return served or sorted(t.id for t in others)


def gate_removal(
    night: Any,
    edit: Edit,
    cand: DocumentSet,
    focus: set[str],
    gate: Callable[[], GateDecision],
    identity: str | None = None,
) -> GateDecision:
    """The verdict on ``cand`` (``edit`` applied): ``gate()`` (the ordinary gate), preceded — when
    ``edit`` drops a learned rule — by the "no worse" test of that removal on the tasks the rule
    served. The removal goes first: a rule its work still needs is usually shown to be needed on a
    first look at those tasks, before the new rule's gain is measured at all. ``night``:
    consolidate's ``_Night`` (evaluator, settings, base documents, tasks, overlap); ``identity``:
    the candidate's pooled evidence (``edit_evidence``), as its gate uses it."""
    rule = removed_rule(night.base, edit)
    if rule is None:
        return gate()
    val = [t for t in night.tasks if t.split == "val" and t.id in night.evaluator.tasks]
    tasks = guarded_tasks(rule, val, focus)
    if not tasks:
        decision = gate()
        decision.statistic["no_worse"] = "no val task outside the new rule's own: its gain test covers the removal"
        return decision
    check, scored = _removal_check(night, cand, tasks, identity)
    if out_of_calls(check):  # a capped night ran out of calls: undecided, like a gate that did
        decision = undecided(None, night.cap.limit)
        decision.reasons = [
            f"retiring {rule!r}: undecided: the night's call cap ran out before the removal could "
            "be judged; tested again on a later night"
        ]
        return decision
    stat = dict(check.statistic, retired=rule, tasks=sorted(scored), per_task=[d.to_dict() for d in check.per_task])
    if not check.accepted:
        return GateDecision(
            False,
            "reject" if check.action != "skip" else "skip",
            check.baseline,
            check.candidate,
            check.per_task,
            {"no_worse": stat, "samples_per_task": {d.task_id: d.n_candidate for d in check.per_task}},
            [f"retiring {rule!r}: {why}" for why in check.reasons],
        )
    decision = gate()
    decision.statistic["no_worse"] = stat
    return decision


def _removal_check(
    night: Any, cand: DocumentSet, tasks: list[str], identity: str | None
) -> tuple[GateDecision, dict[str, list[float]]]:
    """``gate.no_worse`` on ``tasks``, from ``val_samples`` per task, drawing more while the bound
    is too wide, up to ``max_val_samples``; the looks share its false-retire rate. A capped night
    that cannot afford the next draw returns the check so far marked ``out_of_calls``."""
    s, ev = night.settings, night.evaluator
    margin = s.documents.retire_margin
    looks = max(1, -(-s.gate.max_val_samples // s.gate.val_samples))
    n = s.gate.val_samples
    check = GateDecision(False, "reject", 0.0, 0.0)
    b: dict[str, list[float]] = {}
    while True:
        drawn = draw_within(
            getattr(night, "cap", None) or CallCap(), ev, [(night.base, None), (cand, identity)], n, tasks
        )
        if drawn is None:
            check.statistic[OUT_OF_CALLS] = True
            return check, b
        b, c = _scored(drawn[0], tasks, n), _scored(drawn[1], tasks, n)
        check = no_worse(
            b, c, margin=margin, regression_alpha=s.decide.regression_alpha, looks=looks, train_ids=night.overlap
        )
        shown_worse = check.statistic.get("lower_bound", 0.0) >= margin or any(d.regressed for d in check.per_task)
        if check.accepted or shown_worse or check.action == "skip" or n >= s.gate.max_val_samples:
            return check, b
        n = min(s.gate.max_val_samples, n + s.gate.val_samples)


def _scored(scores: dict[str, list[float | None]], tasks: list[str], n: int) -> dict[str, list[float]]:
    """Each of ``tasks``' scored values among its first ``n`` draws (a draw that could not be
    scored is left out); tasks with none are left out."""
    first = {tid: [x for x in scores.get(tid, [])[:n] if x is not None] for tid in tasks}
    return {tid: xs for tid, xs in first.items() if xs}
