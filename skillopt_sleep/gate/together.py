"""A night's rules tested together (``consolidate`` phases 3 and 4 when several edits are gated).

Gating every edit on every val task pays the proof that nothing else regressed edit by edit: a
rule for commit messages is sampled on the release-note tasks as often as on its own, and so is
each of the night's other rules. Here instead:

  1. each edit's gain is measured on its own tasks only (the val tasks of the kinds its evidence
     comes from), alone against tonight's documents, at its share of the night's false-accept
     rate — the only test through which a rule can be accepted;
  2. the edits that pass and fit together, each adding something beside the others where their
     tasks overlap (``phases.leave_one_out``), are combined, and the combination is measured
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

from collections.abc import Callable
from dataclasses import replace

from skillopt_sleep.gate import decide as gating
from skillopt_sleep.backends.models import run_together
from skillopt_sleep.documents import DocumentSet
from skillopt_sleep.edit_evidence import EvidencePool
from skillopt_sleep.gate.evaluator import draw_within
from skillopt_sleep.types import Edit, GateDecision
from skillopt_sleep.gate import phases as cons
from skillopt_sleep.gate.sampling import NightGate, first_draws
from skillopt_sleep.outcome import Outcome


Winner = tuple[Edit, DocumentSet, GateDecision]


def gate_together(outcome: Outcome, night: NightGate, winners: list[Winner], pool: EvidencePool | None,
                  val_set: str, progress: Callable[[str], None]) -> DocumentSet:
    """Phase 4 after own-task gates (module docstring): the proposal, with ``outcome`` updated."""
    fits = cons.fitting(outcome, night, winners)
    survivors = cons.leave_one_out(outcome, night, fits, progress) if len(fits) > 1 else [w[0] for w in fits]
    if fits and not survivors:  # none adds anything beside the others: the best alone goes on
        best = max(fits, key=lambda w: w[2].statistic.get("gain", 0))
        outcome.rejected = [r for r in outcome.rejected if r.edit is not best[0]]
        survivors = [best[0]]
    kept = [w for w in fits if any(w[0] is e for e in survivors)]
    final, accepted = _settle(outcome, night, kept, progress)
    if final is None:  # the combination did not hold up and no rule could be blamed: one by one
        progress(f"the combination did not hold up: gating each of {len(kept)} edits on every val task")
        full = run_together(*[(lambda e=e, c=c: cons.gate_alone(night, pool, e, c)) for e, c, _ in kept])
        passed: list[Winner] = []
        for (edit, cand, _), alone in zip(kept, full, strict=True):
            alone.edits = [edit]
            outcome.decisions.append(alone)
            if alone.accepted:
                passed.append((edit, cand, alone))
            else:
                outcome.rejected.append(cons.Rejection(edit, ["accepted on its own tasks, but not on every val task: "
                                                              + "; ".join(alone.reasons)], "gate",
                                                       ban=gating.significant_harm(alone)))
        final, accepted = _settle(outcome, night, passed, progress, alone_checked=True)
        if final is None:  # not even together after each passed alone: the best one
            best = max(passed, key=lambda w: w[2].statistic.get("gain", 0))
            for edit, _, _ in passed:
                if edit is not best[0]:
                    outcome.rejected.append(cons.Rejection(
                        edit, ["accepted alone, but the combination did not hold up"], "combination"))
            final, accepted = best[1], [best[0]]
    outcome.accepted = list(accepted)
    _record(pool, [w[0] for w in winners], {id(e) for e in accepted}, val_set)
    return final


def _settle(outcome: Outcome, night: NightGate, kept: list[Winner], progress: Callable[[str], None],
            alone_checked: bool = False) -> tuple[DocumentSet | None, list[Edit]]:
    """The documents and edits accepted from ``kept``: their combination measured on every val task
    (one alone: it; ``alone_checked``: each already passed there alone), each edit's own tasks
    no worse beside the others than alone, and an edit that lowers another's tasks refused and the
    rest tried again. ``None``: the combination did not hold up and no edit could be blamed."""
    while kept:
        if alone_checked and len(kept) == 1:
            return kept[0][1], [kept[0][0]]
        edits = [w[0] for w in kept]
        combined = cons.apply_all(night.base, edits) if len(kept) > 1 else kept[0][1]
        progress(f"measuring {'the combination of ' + str(len(kept)) + ' edits' if len(kept) > 1 else 'it'} "
                 "on every val task")
        decision = night.gate(combined, cons.focus_for(edits, night.tasks), targets=cons.joint_targets(edits))
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
            outcome.rejected.append(cons.Rejection(kept[0][0], list(decision.reasons), "gate",
                                                   ban=gating.significant_harm(decision)))
            return night.base, []
        if not blamed:
            return None, []
        for edit, why in blamed.values():
            outcome.rejected.append(cons.Rejection(edit, [why], "combination"))
        kept = [w for w in kept if id(w[0]) not in blamed]
    return night.base, []


def blame(night: NightGate, kept: list[Winner], worse: list[tuple[Edit, str]],
          progress: Callable[[str], None]) -> dict[int, tuple[Edit, str]]:
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


def _record(pool: EvidencePool | None, edits: list[Edit], accepted: set[int], val_set: str) -> None:
    """Each own-task winner's test, once the night's verdict on it is known: accepted when it
    passed on every val task (alone or in the combination)."""
    if pool is None:
        return
    for edit in edits:
        pool.record_test(edit, id(edit) in accepted, val_set)


def worse_than_alone(night: NightGate, combined: DocumentSet, kept: list[Winner]) -> list[tuple[Edit, str]]:
    """The edits whose own tasks the combination leaves worse than that edit alone, and why."""
    out = []
    for edit, alone, _ in kept:
        found = worse_on(night, combined, alone, edit, len(kept))
        if found:
            out.append((edit, f"on the tasks of {edit.describe()}, the combination is worse than that edit alone: "
                              + found))
    return out


def worse_on(night: NightGate, docs: DocumentSet, alone: DocumentSet, edit: Edit, checks: int) -> str:
    """Why ``docs`` is worse than ``alone`` on ``edit``'s own val tasks ("": it is not shown to be):
    a task that regressed (a one-sided Welch test at ``regression_alpha``) or their mean falling
    (``harm_alpha``), both shared over the ``checks`` such comparisons. More samples of both are
    drawn while a task looks as if it dropped or the mean as if it fell, and the verdict stands only
    at the sample ceiling, as a gate's regression does."""
    s, ev = night.settings, night.evaluator
    task_ids = sorted(cons.focus_for([edit], night.tasks) & set(ev.tasks))
    if not task_ids:
        return ""
    cfg = replace(s.gate, regression_alpha=s.gate.regression_alpha / max(1, checks),
                  harm_alpha=s.gate.harm_alpha / max(1, checks))
    n = max(s.val_samples, min(ev.count(docs, None, task_ids), ev.count(alone, None, task_ids)))
    ceiling = max(n, s.max_val_samples)
    while True:
        drawn = draw_within(night.cap, ev, [(alone, None), (docs, None)], n, task_ids)
        if drawn is None:
            return "could not be measured within the night's call cap"
        wanted = {tid: n for tid in task_ids}
        check = gating.decide(first_draws(drawn[0], wanted), first_draws(drawn[1], wanted), cfg, focus=task_ids)
        worse = [r for r in check.reasons if r.startswith("task ") or " fell:" in r]
        if worse and n >= ceiling:
            return "; ".join(worse)
        if (not worse and not check.statistic.get("suspect_tasks")) or n >= ceiling:
            return ""
        n = min(ceiling, n + s.val_samples)
