"""A night's rules tested together (``consolidate`` phases 3 and 4 when several edits are gated).

Gating every edit on every val task pays the proof that nothing else regressed edit by edit: a
rule for commit messages is sampled on the release-note tasks as often as on its own, and so is
each of the night's other rules. Here instead:

  1. each edit's gain is measured on its own tasks only (the val tasks of the kinds its evidence
     comes from), alone against tonight's documents, at its share of the night's false-accept
     rate — the only test through which a rule can be accepted;
  2. the edits that pass and fit together, each adding something beside the others where their
     tasks and checks overlap (``phases.leave_one_out``), are combined, and the combination is measured
     once on every val task against tonight's documents: no task may regress and the all-task mean
     may not fall (``NightGate.gate``);
  3. on each edit's own tasks the combination may not be worse than that edit alone: what the
     other rules do to its kind is measured there, so a rule that buys its own kind's gain with a
     loss on another kind is not hidden behind that kind's own rule.

When the combination does not hold up, the edits are gated one by one on every val task (the
samples drawn so far are reused) and the survivors combined as when each was gated alone
(``phases.combine``): attribution costs calls only when something is wrong. A single edit
that passes on its own tasks is measured on every val task like any gate's second round.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from skillopt_sleep.gate import decide as gating
from skillopt_sleep.backends.models import run_together
from skillopt_sleep.gate.call_cap import in_turn, out_of_calls
from skillopt_sleep.documents.managed_block import DocumentSet
from skillopt_sleep.store.rule_evidence import EvidencePool
from skillopt_sleep.gate.evaluator import draw_within
from skillopt_sleep.types import Edit, GateDecision
from skillopt_sleep.gate import phases as cons
from skillopt_sleep.gate.sampling import NightGate, first_draws
from skillopt_sleep.gate.outcome import Outcome


Winner = tuple[Edit, DocumentSet, GateDecision]


class _OutOfCalls(Exception):
    """A capped night cannot afford the next draw of the night's rules measured together."""


def gate_together(
    outcome: Outcome,
    night: NightGate,
    winners: list[Winner],
    pool: EvidencePool | None,
    val_set: str,
    progress: Callable[[str], None],
) -> DocumentSet:
    """Phase 4 after own-task gates (module docstring): the proposal, with ``outcome`` updated. On
    a capped night whose calls run out before a verdict, the edits not yet refused are left
    undecided: no verdict, their samples kept, resumed first on a later night (``pending_rules``)."""
    fits = cons.fitting(outcome, night, winners)
    survivors = cons.leave_one_out(outcome, night, fits, progress) if len(fits) > 1 else [w[0] for w in fits]
    if fits and not survivors:  # none adds anything beside the others: the best alone goes on
        best = max(fits, key=lambda w: w[2].statistic.get("gain", 0))
        outcome.rejected = [r for r in outcome.rejected if r.edit is not best[0]]
        survivors = [best[0]]
    kept = [w for w in fits if any(w[0] is e for e in survivors)]
    try:
        final, accepted = _verdict(outcome, night, kept, pool, progress)
    except _OutOfCalls:
        final, accepted = night.base, []
        decided = {id(r.edit) for r in outcome.rejected}
        open_ = [w for w in kept if id(w[0]) not in decided]
        proven = [w for w in open_ if _on_every_task(night, w[2])]
        if proven:  # one that already passed on every val task alone stands on its own, as before
            best = max(proven, key=lambda w: w[2].statistic.get("gain", 0))
            final, accepted = best[1], [best[0]]
            open_ = [w for w in open_ if w[0] is not best[0]]
        _left_undecided(outcome, night, open_)
    outcome.accepted = list(accepted)
    _record(outcome, night, pool, winners, {id(e) for e in accepted}, val_set)
    return final


def _verdict(
    outcome: Outcome, night: NightGate, kept: list[Winner], pool: EvidencePool | None, progress: Callable[[str], None]
) -> tuple[DocumentSet, list[Edit]]:
    final, accepted = _settle(outcome, night, kept, progress)
    if final is not None:
        return final, accepted
    # the combination did not hold up and no rule could be blamed: one by one
    progress(f"the combination did not hold up: gating each of {len(kept)} edits on every val task")
    gates = [(lambda e=e, c=c: cons.gate_alone(night, pool, e, c)) for e, c, _ in kept]
    full = in_turn(gates, night.cap.limit) if night.cap.capped else run_together(*gates)
    if any(out_of_calls(d) for d in full):
        raise _OutOfCalls
    passed: list[Winner] = []
    for (edit, cand, _), alone in zip(kept, full, strict=True):
        alone.edits = [edit]
        outcome.decisions.append(alone)
        if alone.accepted:
            passed.append((edit, cand, alone))
        else:
            outcome.rejected.append(
                cons.Rejection(
                    edit,
                    ["accepted on its own tasks, but not on every val task: " + "; ".join(alone.reasons)],
                    "gate",
                    ban=gating.significant_harm(alone),
                )
            )
    final, accepted = _settle(outcome, night, passed, progress, alone_checked=True)
    if final is not None:
        return final, accepted
    best = max(passed, key=lambda w: w[2].statistic.get("gain", 0))  # not even together: the best one
    for edit, _, _ in passed:
        if edit is not best[0]:
            outcome.rejected.append(
                cons.Rejection(edit, ["accepted alone, but the combination did not hold up"], "combination")
            )
    return best[1], [best[0]]


def _on_every_task(night: NightGate, decision: GateDecision) -> bool:
    """Whether an accepting decision measured its edit alone on every val task (a resumed rule's
    gate, or a single edit's), not on its own tasks only."""
    sampled = decision.statistic.get("samples_per_task") or {}
    return decision.accepted and set(night.evaluator.tasks) <= set(sampled)


def _left_undecided(outcome: Outcome, night: NightGate, open_: list[Winner]) -> None:
    """The edits a capped night's calls ran out for after they passed on their own tasks: refused
    for tonight without a ban (stage budget), tested again on a later night."""
    cap = f"the night's cap of {night.cap.limit} calls" if night.cap.limit is not None else "the night's call cap"
    for edit, _, _ in open_:
        outcome.rejected.append(
            cons.Rejection(
                edit,
                [
                    f"undecided: passed on its own val tasks, but {cap} ran out before it could be measured on every val "
                    "task; its samples are kept and it is tested again on a later night"
                ],
                "budget",
            )
        )


def _settle(
    outcome: Outcome, night: NightGate, kept: list[Winner], progress: Callable[[str], None], alone_checked: bool = False
) -> tuple[DocumentSet | None, list[Edit]]:
    """The documents and edits accepted from ``kept``: their combination measured on every val task
    (one alone: it; ``alone_checked``: each already passed there alone), each edit's own tasks
    no worse beside the others than alone, and an edit that lowers another's tasks refused and the
    rest tried again. ``None``: the combination did not hold up and no edit could be blamed."""
    while kept:
        if alone_checked and len(kept) == 1:
            return kept[0][1], [kept[0][0]]
        edits = [w[0] for w in kept]
        combined = cons.apply_all(night.base, edits) if len(kept) > 1 else kept[0][1]
        progress(
            f"measuring {'the combination of ' + str(len(kept)) + ' edits' if len(kept) > 1 else 'it'} "
            "on every val task"
        )
        # each edit showed its gain alone on its own tasks, and beside the others it is compared
        # with itself alone there (``worse_on``): a combination is measured on every val task at
        # once for what it does to them, its gain not tested again (one edit alone goes on from
        # its own tasks to the others, as any gate's second round)
        decision = night.gate(
            combined, cons.focus_for(edits, night.tasks), targets=cons.joint_targets(edits), gain_known=len(kept) > 1
        )
        if out_of_calls(decision):
            raise _OutOfCalls
        decision.edits = list(edits)
        decision.statistic["together"] = True
        worse = worse_than_alone(night, combined, kept) if decision.accepted and len(kept) > 1 else []
        blamed = blame(night, kept, worse, progress) if worse else {}
        if worse:
            decision.accepted, decision.action = False, "reject"
            decision.reasons.extend(reason for _, reason in worse)
        outcome.decisions.append(decision)
        if decision.accepted:
            return combined, edits
        if len(kept) == 1:
            outcome.rejected.append(
                cons.Rejection(kept[0][0], list(decision.reasons), "gate", ban=gating.significant_harm(decision))
            )
            return night.base, []
        if not blamed:
            return None, []
        for edit, why in blamed.values():
            outcome.rejected.append(cons.Rejection(edit, [why], "combination"))
        kept = [w for w in kept if id(w[0]) not in blamed]
    return night.base, []


def blame(
    night: NightGate, kept: list[Winner], worse: list[tuple[Edit, str]], progress: Callable[[str], None]
) -> dict[int, tuple[Edit, str]]:
    """The edits that lower another edit's own tasks: for each edit whose tasks the combination
    left worse than that edit alone, each other edit is put beside it alone (the pair against the
    edit alone, on its tasks)."""
    out: dict[int, tuple[Edit, str]] = {}
    for victim, _ in worse:
        alone = next(w[1] for w in kept if w[0] is victim)
        progress(f"finding which edit lowers the tasks of {victim.describe()}")
        for other, _, _ in kept:
            if other is victim or id(other) in out:
                continue
            pair = cons.apply_all(night.base, [victim, other])
            found = worse_on(night, pair, alone, victim, len(kept) - 1)
            if found:
                out[id(other)] = (other, f"lowers the tasks of {victim.describe()} beside that rule: {found}")
    return out


def _record(
    outcome: Outcome,
    night: NightGate,
    pool: EvidencePool | None,
    winners: list[Winner],
    accepted: set[int],
    val_set: str,
) -> None:
    """Each own-task winner's test, once the night's verdict on it is known: accepted when it
    passed on every val task (alone or in the combination); undecided when a capped night's calls
    ran out first (its own-task test goes on from where it stopped, ``pending_rules``)."""
    if pool is None:
        return
    undecided = {id(r.edit) for r in outcome.rejected if r.stage == "budget"}
    for edit, _, own in winners:
        if id(edit) in undecided and id(edit) not in accepted:
            cons.record_undecided(pool, edit, own, night.tasks, own_passed=own.accepted)
        else:
            pool.record_test(edit, id(edit) in accepted, val_set)


def worse_than_alone(night: NightGate, combined: DocumentSet, kept: list[Winner]) -> list[tuple[Edit, str]]:
    """The edits whose own tasks the combination leaves worse than that edit alone, and why."""
    out = []
    for edit, alone, _ in kept:
        found = worse_on(night, combined, alone, edit, len(kept))
        if found:
            out.append(
                (edit, f"on the tasks of {edit.describe()}, the combination is worse than that edit alone: " + found)
            )
    return out


def worse_on(night: NightGate, docs: DocumentSet, alone: DocumentSet, edit: Edit, checks: int) -> str:
    """Why ``docs`` is worse than ``alone`` on ``edit``'s own val tasks ("": it is not shown to be):
    a task that regressed (a one-sided Welch test at ``regression_alpha``) or their mean falling
    (``harm_alpha``), both shared over the ``checks`` such comparisons. More samples of both are
    drawn while a task looks as if it dropped (that task's) or their mean is lower (every task's: a
    drop spread over the kind shows in the mean before it shows in any one task), and the verdict
    stands only at the sample ceiling, as a gate's regression does."""
    s, ev = night.settings, night.evaluator
    task_ids = sorted(cons.focus_for([edit], night.tasks) & set(ev.tasks))
    if not task_ids:
        return ""
    cfg = replace(
        s.decide,
        regression_alpha=s.decide.regression_alpha / max(1, checks),
        harm_alpha=s.decide.harm_alpha / max(1, checks),
    )
    n = max(s.gate.val_samples, min(ev.count(docs, None, task_ids), ev.count(alone, None, task_ids)))
    ceiling = max(n, s.gate.max_val_samples)
    wanted = dict.fromkeys(task_ids, n)
    more = task_ids
    while True:
        drawn = draw_within(night.cap, ev, [(alone, None), (docs, None)], n, more)
        if drawn is None:
            raise _OutOfCalls
        wanted.update(dict.fromkeys(more, n))
        check = gating.decide(first_draws(drawn[0], wanted), first_draws(drawn[1], wanted), cfg, focus=task_ids)
        worse = [r for r in check.reasons if r.startswith("task ") or " fell:" in r]
        if worse and n >= ceiling:
            return "; ".join(worse)
        more = _drawn_further(check, task_ids, cfg, n, ceiling)
        if not more or n >= ceiling:
            return ""
        n = min(ceiling, n + s.gate.val_samples)


def _drawn_further(check: GateDecision, task_ids: list[str], cfg: gating.GateConfig, n: int, ceiling: int) -> list[str]:
    """The tasks ``worse_on`` draws more of: every one while their mean is lower than alone (a
    drop spread thinly over the kind), else those that look as if they dropped — each only
    while the ceiling's samples could still show it (``gate.decide.could_show_drop``; ``n``: the
    samples a task has now). A mean or a task a little below by chance is not drawn to the
    ceiling."""
    stat = check.statistic
    shrink = math.sqrt(n / max(n, ceiling))
    if gating.could_show_drop(
        -float(stat.get("mean_gain", 0.0)), float(stat.get("mean_se", 0.0)), cfg.harm_alpha, shrink, cfg
    ):
        return task_ids
    suspect = set(gating.suspects_worth_more(check, cfg, ceiling))
    return [t for t in task_ids if t in suspect]
