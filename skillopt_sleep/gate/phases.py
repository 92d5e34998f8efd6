"""The gate's phases of a night (``consolidate`` phases 3 and 4): each edit against tonight's
documents, then the edits that passed put together.

``gate_each`` gates every edit alone (on every val task, or on its own tasks only when the night's
rules are then measured together, ``together.py``); ``combine`` makes the proposal from edits that
each passed on every val task: those that fit the rule budget, each adding something beside the
others where their tasks and checks overlap (``leave_one_out``), their combination gated once
more.
"""

from __future__ import annotations

from collections.abc import Callable

from skillopt_sleep.backends.models import run_together
from skillopt_sleep.gate.call_cap import in_turn, out_of_calls, undecided
from skillopt_sleep.documents.managed_block import DocumentSet, apply_edit
from skillopt_sleep.store.rule_evidence import EvidencePool, val_set_key
from skillopt_sleep.gate import decide as gating
from skillopt_sleep.gate import quality
from skillopt_sleep.gate.sampling import NightGate
from skillopt_sleep.gate.outcome import Outcome, Rejection
from skillopt_sleep.gate.pending_rules import evidence_kinds, resumed_note
from skillopt_sleep.types import kind_of
from skillopt_sleep.gate.removal import gate_removal
from skillopt_sleep.rules.budget import fit_together
from skillopt_sleep.types import Edit, GateDecision, TaskRecord

Progress = Callable[[str], None]


def focus_for(edits: list[Edit], tasks: list[TaskRecord]) -> set[str]:
    """Val tasks of the kinds an edit's evidence comes from (the tasks it claims to help): a task's
    mined kind, else its skill hint (``types.kind_of``) — a skill serves several kinds, and a rule
    for one of them must not need luck on the others to show its gain."""
    kind = {t.id: kind_of(t) for t in tasks}
    kinds = {kind[e] for edit in edits for e in edit.evidence if e in kind}
    return {t.id for t in tasks if t.split == "val" and kind_of(t) in kinds}


def gate_alone(
    night: NightGate, pool: EvidencePool | None, edit: Edit, cand: DocumentSet, own_tasks_only: bool = False
) -> GateDecision:
    """One edit against tonight's documents (``NightGate.gate``), from its pooled evidence when it
    has some, with the "no worse" test first when it retires a learned rule (``gate_removal``).
    ``own_tasks_only``: its gain on its own tasks only (the night's rules are then measured on the
    other val tasks together, ``together.py``)."""
    focus = focus_for([edit], night.tasks)
    pooled = pool is not None and not pool.accepted_before(edit)
    identity = pool.identity(edit) if pool is not None and pooled else None
    share = pool.alpha_share(edit) if pool is not None and pooled else 1.0
    # a rule a cap left undecided: the same test, on from where it stopped (``pending_rules``)
    going_on = pool.resume_at(edit) if pool is not None and pooled else None
    if own_tasks_only and going_on is not None and pool is not None and pool.own_passed(edit):
        return passed_before(edit, pool, going_on)

    def gate() -> GateDecision:
        if going_on is not None:
            return night.gate(
                cand,
                focus,
                share=going_on[1],
                looks_before=going_on[0],
                identity=identity,
                targets=edit.targets,
                own_tasks_only=own_tasks_only,
            )
        return night.gate(
            cand, focus, share=share, identity=identity, targets=edit.targets, own_tasks_only=own_tasks_only
        )

    return gate_removal(night, edit, cand, focus, gate, identity)


def passed_before(edit: Edit, pool: EvidencePool, going_on: tuple[int, float]) -> GateDecision:
    """A resumed rule whose gain on its own tasks an earlier night showed: that verdict, not
    judged again (a new look would spend more of its rate on the same evidence); what is left is
    the night's rules measured together (``together.py``)."""
    record = pool.edits[pool.identity(edit)]
    bound = record.lower_bound if record.lower_bound is not None else 0.0
    return GateDecision(
        True,
        "accept",
        0.0,
        0.0,
        statistic={
            "look": going_on[0],
            "alpha_share": going_on[1],
            "lower_bound": bound,
            "gain": bound,
            "own_passed": True,
        },
        reasons=[],
    )


def gate_each(
    outcome: Outcome,
    night: NightGate,
    candidates: list[tuple[Edit, DocumentSet]],
    pool: EvidencePool | None,
    progress: Progress,
    own_only: bool = False,
    resumed: bool = False,
    night_for: Callable[[Edit], NightGate] | None = None,
) -> list[tuple[Edit, DocumentSet, GateDecision]]:
    """Phase 3: every edit alone against tonight's documents, concurrently. ``own_only``: on its
    own tasks only; a winner's test is then recorded in the pool once the night's rules have been
    measured together (``together.py``). ``resumed``: the candidates start with rules resumed from
    earlier nights (``pending_rules``): the notes say what their tests showed. ``night_for``: the
    gate an edit is measured by when it is not ``night`` (a resumed rule that also goes on over
    earlier nights' val tasks of its kind, ``pending_rules.earlier_val``)."""
    val_set = val_set_key(list(night.evaluator.tasks.values()))
    where = "their own val tasks" if own_only else f"{len(night.evaluator.tasks)} val task(s)"
    progress(f"gating {len(candidates)} edit(s) on {where}")
    gate_of = night_for or (lambda edit: night)
    gates = [
        (lambda edit=edit, cand=cand: gate_alone(gate_of(edit), pool, edit, cand, own_only))
        for edit, cand in candidates
    ]

    def room(done: list[GateDecision]) -> bool:
        """Own-task gates under a cap start another only while the calls left would pay for the
        next one's whole test on its own tasks and still for a look at the passed edits
        together on every val task: edits that passed but cannot be measured together buy
        nothing tonight. With an evidence pool a test goes on on a later night from where it
        stopped (``pending_rules``), so the next one starts when its first look fits beside one
        look at the passed edits together — or, when tonight could not pay for that look even
        without it, whenever its first look fits (its evidence is kept for a later night)."""
        passed = [edit for (edit, _), d in zip(candidates[: len(done)], done, strict=True) if d.accepted]
        if not own_only or not passed:
            return True
        s, ev, every = night.settings, night.evaluator, list(night.evaluator.tasks)
        nxt = candidates[len(done)][0]
        own = max(1, len(focus_for([nxt], night.tasks)))
        if pool is not None:
            mine = sorted(focus_for([nxt], night.tasks) & set(every)) or every
            cand = candidates[len(done)][1]
            first = ev.cost(night.base, s.gate.val_samples, mine) + ev.cost(
                cand, s.gate.val_samples, mine, pool.identity(nxt)
            )
            once = ev.cost(apply_all(night.base, passed), s.gate.val_samples, every)
            once += ev.cost(night.base, s.gate.val_samples, every)
            return night.cap.afford(first + once) or (not night.cap.afford(once) and night.cap.afford(first))
        whole = 2 * own * s.gate.max_val_samples * max(1, -(-s.min_focus_tasks // own))
        # several passed edits together are measured for what they do to every val task, their
        # gains not tested again (``together.py``): that mostly settles at its first look
        together = ev.cost(apply_all(night.base, passed + [nxt]), s.gate.val_samples, every)
        return night.cap.afford(whole + together + ev.cost(night.base, s.gate.val_samples, every))

    # a capped night gates one edit at a time, best ranked first: the calls go to the edits most
    # likely to pass, and which edits get them does not depend on thread timing
    decisions = in_turn(gates, night.cap.limit, room) if night.cap.capped else run_together(*gates)
    winners = []
    pending = {i for i, _ in pool.pending()} if resumed and pool is not None else set()
    was_pending = [pool is not None and pool.identity(edit) in pending for edit, _ in candidates]
    for (edit, cand), decision, again in zip(candidates, decisions, was_pending, strict=True):
        decision.edits = [edit]
        outcome.decisions.append(decision)
        if again:
            outcome.notes.append(resumed_note(edit, decision))
        kinds = evidence_kinds(edit, night.tasks)
        if out_of_calls(decision):
            # undecided: no verdict, no ban; the samples it drew are kept, and it is tested again
            # on a later night, on these same val tasks too (``val_set`` unknown) — before new rules
            if pool is not None and decision.per_task:
                record_undecided(pool, edit, decision, night.tasks)
            elif pool is not None and (
                night.cap.capped or any(gate_of(edit).evaluator.scores.get(cand.fingerprint(), {}).values())
            ):
                # drew, but no look yet, or the calls went to the edits ranked above it: resumed
                # first on a later night, nothing spent (it is not proposed, dreamt and ranked again)
                pool.hold(edit, kinds)
            outcome.rejected.append(Rejection(edit, list(decision.reasons), "budget"))
            continue
        if decision.accepted and quality.constrains_form(edit):
            why = quality.guard(gate_of(edit), edit, cand, focus_for([edit], night.tasks))
            if why == quality.UNDECIDED:
                outcome.rejected.append(Rejection(edit, [why], "budget"))
                continue
            if why:
                decision.accepted, decision.action = False, "reject"
                decision.reasons.append(why)
                if pool is not None:
                    pool.record_test(edit, False, val_set, kinds=kinds, lower_bound=_bound(decision))
                outcome.rejected.append(Rejection(edit, [why], "quality", ban=True))
                continue
        if pool is not None and not (own_only and decision.accepted):
            pool.record_test(edit, decision.accepted, val_set, kinds=kinds, lower_bound=_bound(decision))
        if decision.accepted:
            winners.append((edit, cand, decision))
        else:
            outcome.rejected.append(
                Rejection(edit, list(decision.reasons), "gate", ban=gating.significant_harm(decision))
            )
    return winners


def _bound(decision: GateDecision) -> float | None:
    bound = decision.statistic.get("lower_bound")
    return float(bound) if isinstance(bound, (int, float)) else None


def record_undecided(
    pool: EvidencePool, edit: Edit, decision: GateDecision, tasks: list[TaskRecord], own_passed: bool = False
) -> None:
    """``edit``'s test a cap stopped after ``decision``'s look: kept pending in the pool, with
    the looks and share it goes on from on a later night (``pending_rules``); ``own_passed``:
    ``decision`` showed its gain on its own tasks, and the night's rules measured together were
    what the cap stopped."""
    pool.record_test(
        edit,
        False,
        undecided=True,
        kinds=evidence_kinds(edit, tasks),
        lower_bound=_bound(decision),
        looks=int(decision.statistic.get("look") or 0),
        share=decision.statistic.get("alpha_share"),
        own_passed=own_passed,
    )


def apply_all(docs: DocumentSet, edits: list[Edit]) -> DocumentSet:
    for edit in edits:
        docs = apply_edit(docs, edit)
    return docs


def combine(
    outcome: Outcome, night: NightGate, winners: list[tuple[Edit, DocumentSet, GateDecision]], progress: Progress
) -> DocumentSet:
    """Phase 4: the proposal from the edits that passed alone. Each whose own tasks another
    accepted edit also claims must add something beside the others (``leave_one_out``), so a
    useless rule cannot ride along with a useful one doing the same job; the survivors'
    combination is gated against tonight's documents on every val task (regressions, the all-task
    mean), so the leave-one-out tests need not measure the other tasks too."""
    winners = fitting(outcome, night, winners)
    if not winners:
        return night.base
    if len(winners) == 1:
        outcome.accepted = [winners[0][0]]
        return winners[0][1]
    survivors = leave_one_out(outcome, night, winners, progress)
    if not survivors:
        best = max(winners, key=lambda w: w[2].statistic.get("gain", 0))
        outcome.rejected = [r for r in outcome.rejected if r.edit is not best[0]]
        outcome.accepted = [best[0]]
        return best[1]
    if len(survivors) == 1:
        outcome.accepted = survivors
        return next(w[1] for w in winners if w[0] is survivors[0])
    combined = apply_all(night.base, survivors)
    progress(f"gating the combination of {len(survivors)} accepted edits")
    decision = night.gate(combined, focus_for(survivors, night.tasks), targets=joint_targets(survivors))
    decision.edits = list(survivors)
    outcome.decisions.append(decision)
    if decision.accepted:
        outcome.accepted = list(survivors)
        return combined
    best = max((w for w in winners if w[0] in survivors), key=lambda w: w[2].statistic.get("gain", 0))
    for edit in survivors:
        if edit is not best[0]:
            outcome.rejected.append(
                Rejection(
                    edit,
                    ["accepted alone, but the combination did not hold up: " + "; ".join(decision.reasons)],
                    "budget" if out_of_calls(decision) else "combination",
                )
            )
    outcome.accepted = [best[0]]
    return best[1]


def joint_targets(edits: list[Edit]) -> list[str] | None:
    """The checks a set of edits fixes together (None when one of them names none: the score)."""
    return sorted({c for e in edits for c in e.targets}) if all(e.targets for e in edits) else None


def fitting(
    outcome: Outcome, night: NightGate, winners: list[tuple[Edit, DocumentSet, GateDecision]]
) -> list[tuple[Edit, DocumentSet, GateDecision]]:
    """The winners that fit in the documents together, best gain first; the others refused."""
    best_first = sorted(winners, key=lambda w: -w[2].statistic.get("gain", 0))
    fits, no_room = fit_together(night.base, [w[0] for w in best_first])
    outcome.rejected.extend(
        Rejection(e, [f"accepted alone, but no room beside the other accepted edits: {why}"], "combination")
        for e, why in no_room
    )
    return [w for w in winners if any(w[0] is e for e in fits)]


def leave_one_out(
    outcome: Outcome, night: NightGate, winners: list[tuple[Edit, DocumentSet, GateDecision]], progress: Progress
) -> list[Edit]:
    """The winners that add something beside the others: one whose own tasks and checks another
    also claims must gain there in the combination against the combination without it (its own
    tasks only); the others are refused (stage combination, or budget when a capped night ran
    out). Two rules that fix different checks of one kind each showed alone that they raise their
    own check, so neither can be doing the other's job (``shares_work``); what one does to the
    other's check is the combination's gate and the comparison with each rule alone
    (``together.py``)."""
    edits = [w[0] for w in winners]
    combined = apply_all(night.base, edits)
    focus = {id(e): focus_for([e], night.tasks) for e in edits}
    progress(f"checking what each of {len(winners)} accepted edits adds beside the others")
    survivors, spent = [], False
    for edit in edits:
        if not any(shares_work(edit, e, focus) for e in edits if e is not edit):
            survivors.append(edit)  # no other claims its tasks and checks; the combination's gate guards the rest
            continue
        rest = apply_all(night.base, [e for e in edits if e is not edit])
        decision = (
            undecided(None, night.cap.limit, behind=True)
            if spent
            else night.gate(combined, focus[id(edit)], base=rest, own_tasks_only=True, targets=edit.targets)
        )
        spent = spent or out_of_calls(decision)
        if decision.accepted:
            survivors.append(edit)
        else:
            why = (
                "could not be checked beside the other accepted edits"
                if out_of_calls(decision)
                else "adds nothing beside the other accepted edits"
            )
            outcome.rejected.append(
                Rejection(
                    edit,
                    [f"accepted alone, but {why}: " + "; ".join(decision.reasons)],
                    "budget" if out_of_calls(decision) else "combination",
                )
            )
    return survivors


def shares_work(edit: Edit, other: Edit, focus: dict[int, set[str]]) -> bool:
    """Whether ``other`` claims some of ``edit``'s val tasks and may fix what it fixes: a check both
    name, or either names none (its gain was on the tasks' score)."""
    if not focus[id(edit)] & focus[id(other)]:
        return False
    return not (edit.targets and other.targets) or bool(set(edit.targets) & set(other.targets))
