"""One night's learning loop: tasks + documents + models -> candidate documents + decisions.

  1. dream the train tasks (up to K samples; a task whose first samples agree gets no more) and
     evaluate the current documents on val — at once;
  2. reflect on the train attempts -> bounded edits, each replayed on its own train tasks and
     rewritten when it breaks a check that passed there (``lookahead.py``); a rule for a document
     that holds its rule budget is merged into one of its scope (``rule_budget.py``), or else takes
     the line of a learned rule that no longer earns its place (``retire.py``: the removal must also
     pass the gate's "no worse" test on the tasks that rule served);
  3. gate every edit on its own against the current documents (all edits at once), on the tasks
     it claims to help first, drawing more val samples while a verdict is uncertain; the night's
     edits share the gate's false-accept rate (Bonferroni), and an edit re-tested on a later night
     adds to its pooled evidence (``edit_evidence``) with a smaller share still — but only when the
     val tasks changed since its last test: on the same tasks it stays refused without a draw.
     Several edits are each gated on their own tasks only, and measured on the others together
     (``together.py``); one edit, or a capped night's, on every val task;
  4. when several edits pass, keep only those that add something beside the others (leave-one-out)
     and gate their combination too (falling back to the best single edit if it does not hold up);
  5. measure the test split (never used for decisions).

A night under a call cap (``max_calls``) plans these phases to fit it (``call_cap.py``): gates run
one at a time, best ranked first, and an edit the calls ran out for is left undecided, not accepted;
a later night resumes such edits before anything else (``pending_rules``).
The gate's sampling lives in ``val_gate.py``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from collections.abc import Callable

from skillopt_sleep import gate as gating
from skillopt_sleep.backends.models import Models, run_together
from skillopt_sleep.call_cap import (DREAM_SHARE, LOOKAHEAD_SHARE, CallCap, cap_note, in_turn, out_of_calls,
                                     undecided)
from skillopt_sleep.loop_settings import LoopSettings
from skillopt_sleep.val_gate import NightGate
from skillopt_sleep.documents import DocumentSet, EditRefused, apply_edit
from skillopt_sleep.dream import dream_by_kind, mean_soft, rubric_scorer
from skillopt_sleep.lookahead import SAMPLES as LOOKAHEAD_SAMPLES
from skillopt_sleep.lookahead import TASKS_PER_EDIT, look_ahead
from skillopt_sleep.retire import gate_removal
from skillopt_sleep.retire import tonight as tonight_evidence
from skillopt_sleep.rule_budget import apply_within_budget, fit_together
from skillopt_sleep.edit_evidence import EvidencePool, task_content_key, val_set_key
from skillopt_sleep.evaluator import Evaluator, mean_of, measure_test
from skillopt_sleep.pending_rules import evidence_kinds, resumable, resumed_note
from skillopt_sleep.reflect import kind_of, reflect
from skillopt_sleep.refusals import same_rule
from skillopt_sleep.together import gate_together
from skillopt_sleep.types import Attempt, Edit, GateDecision, TaskRecord
from skillopt_sleep.widen import widened

Progress = Callable[[str], None]


@dataclass
class Rejection:
    """An edit that did not make it into the proposal, and why.

    ``stage``: guardrail (reflect's checks), lookahead (fixed nothing on its own train tasks, and
    the night's slots went to rules that did),
    apply (the documents refused it), gate, unchanged
    (refused on an earlier night on these same val tasks, not re-tested), combination (passed
    alone, added nothing beside the others), budget (undecided when a capped night ran out of
    calls: no ban, tested again later) or unvalidated (no val tasks).
    ``ban``: the gate found it significantly harmful — the ledger keeps it from coming back.
    """

    edit: Edit
    reasons: list[str]
    stage: str = "gate"
    ban: bool = False


@dataclass
class Outcome:
    documents: DocumentSet  # the proposal (== the input when nothing was accepted)
    accepted: list[Edit] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    decisions: list[GateDecision] = field(default_factory=list)
    baseline: float | None = None  # val
    candidate: float | None = None  # val
    train_baseline: float | None = None
    test_baseline: float | None = None
    test_candidate: float | None = None
    train_attempts: dict[str, list[Attempt]] = field(default_factory=dict)
    phases: dict[str, int] = field(default_factory=dict)  # requests issued per phase
    notes: list[str] = field(default_factory=list)


def focus_for(edits: list[Edit], tasks: list[TaskRecord]) -> set[str]:
    """Val tasks of the kinds an edit's evidence comes from (the tasks it claims to help): a task's
    mined kind, else its skill hint (``reflect.kind_of``) — a skill serves several kinds, and a rule
    for one of them must not need luck on the others to show its gain."""
    kind = {t.id: kind_of(t) for t in tasks}
    kinds = {kind[e] for edit in edits for e in edit.evidence if e in kind}
    return {t.id for t in tasks if t.split == "val" and kind_of(t) in kinds}


def overlapping(val: list[TaskRecord], train: list[TaskRecord]) -> set[str]:
    """Val task ids that are also train tasks, by id or by normalised content (a verbatim copy
    under a new id is still the same task)."""
    train_ids = {t.id for t in train}
    train_content = {task_content_key(t) for t in train}
    return {t.id for t in val if t.id in train_ids or task_content_key(t) in train_content}


def consolidate(tasks: list[TaskRecord], docs: DocumentSet, models: Models,
                settings: LoopSettings = LoopSettings(), *,
                already_refused: Callable[[Edit], bool] = lambda e: False,
                pool: EvidencePool | None = None,
                progress: Progress = lambda msg: None) -> Outcome:
    """``pool``: val evidence from earlier nights for these documents and this target model; the
    night's samples are added to it (the caller saves it)."""
    train = [t for t in tasks if t.split == "train"]
    val = [t for t in tasks if t.split == "val"]
    test = [t for t in tasks if t.split == "test"]
    outcome = Outcome(documents=docs)
    if not train:
        outcome.notes.append("no train tasks: nothing to learn from")
        return outcome
    if not val:
        outcome.notes.append("no val tasks: the night cannot be validated, so no edit can be accepted")
    if pool is not None and pool.base != docs.fingerprint():
        raise ValueError("the evidence pool belongs to other documents")
    evaluator = Evaluator(models, val, outcome.phases, "val", pool)
    cap = CallCap.of(models)
    resumed = resumable(pool, docs, tasks, already_refused) if pool is not None and val else []
    if resumed:
        already_refused = _not_again(already_refused, [edit for edit, _ in resumed])
    night: NightGate | None = None
    winners: list[tuple[Edit, DocumentSet, GateDecision]] = []
    if resumed and cap.capped:  # the calls go to the rules already under test first
        night = NightGate(evaluator, settings, docs, tasks, overlapping(val, train), len(resumed), cap)
        winners = _gate_each(outcome, night, resumed, pool, progress, resumed=True)
    settings = _fit_reflection(outcome, cap, len(train), len({kind_of(t) for t in train}), settings)
    short = cap.too_small(len(train), len({kind_of(t) for t in train}), settings) if val else None
    if short and not resumed:
        outcome.notes.append(short)
        return outcome
    candidates: list[tuple[Edit, DocumentSet]] = []
    if short:
        outcome.notes.append(f"call cap: {cap.left()} call(s) left after the resumed rule(s): no new rule "
                             "started tonight")
    else:
        _dream(outcome, models, train, val, docs, settings, evaluator, progress, cap)
        candidates = _propose(outcome, models, train, docs, settings, already_refused, pool, progress, tasks, cap)
        if resumed and not cap.capped:  # an uncapped night gates them with tonight's rules, ranked first
            candidates = resumed + candidates
    final = docs
    together = False
    if candidates and not val:
        outcome.rejected.extend(Rejection(edit, ["no val tasks to validate it"], "unvalidated")
                                for edit, _ in candidates)
    elif candidates:
        candidates = _worth_testing(outcome, candidates, pool, val)
    if candidates and val:
        night = NightGate(evaluator, settings, docs, tasks, overlapping(val, train), len(candidates), cap)
        together = settings.together and len(candidates) > 1 and not cap.capped
        winners += _gate_each(outcome, night, candidates, pool, progress, own_only=together,
                              resumed=not cap.capped and bool(resumed))
    if night is not None:
        final = (gate_together(outcome, night, winners, pool, val_set_key(val), progress) if together
                 else _combine(outcome, night, winners, progress))
        undecided = sum(r.stage == "budget" for r in outcome.rejected)
        if undecided:
            outcome.notes.append(cap_note(cap, undecided, len(val), settings.max_val_samples))
    outcome.documents = final
    if val:
        # a capped night reports val on the samples its gates drew (it draws none for the report)
        first = 0 if cap.capped else settings.first_samples
        outcome.baseline = mean_of(evaluator.ensure(docs, first))
        outcome.candidate = mean_of(evaluator.ensure(final, first))
        evaluator.store()
    if test:
        measured = measure_test(models, test, docs, final, settings.val_samples, outcome.phases, cap)
        if isinstance(measured, str):
            outcome.notes.append(measured)
        else:
            outcome.test_baseline, outcome.test_candidate = measured
    return outcome


def _dream(outcome: Outcome, models: Models, train: list[TaskRecord], val: list[TaskRecord],
           docs: DocumentSet, settings: LoopSettings, evaluator: Evaluator, progress: Progress,
           cap: CallCap) -> None:
    """Phase 1: train attempts and the first val samples of tonight's documents, at once (a
    capped night: fewer train samples to fit, and no val sample before a gate asks for it)."""
    k = settings.k
    if cap.capped:  # two samples a task to contrast, unless that would take half of what is left
        least = min(2, k) if 2 * len(train) <= (cap.left() or 0) // 2 else 1
        k = cap.share(k, len(train), DREAM_SHARE, least=least)
    if k < settings.k:
        outcome.notes.append(f"call cap: {k} sample(s) per train task instead of {settings.k}")
    progress(f"dreaming {len(train)} train task(s) x {k}" + (
        f" and evaluating {len(val)} val task(s)" if val and not cap.capped else ""))
    rubric = rubric_scorer(models.optimizer)
    train_attempts, _ = run_together(
        lambda: dream_by_kind(models.target, train, docs, k, kind_of, settings.dream_kind_tasks, rubric,
                              settings.k_agree, always=widened),
        lambda: evaluator.ensure(docs, settings.first_samples) if val and not cap.capped else None,
    )
    outcome.phases["dream"] = sum(len(attempts) for attempts in train_attempts.values())
    outcome.train_attempts = train_attempts
    outcome.train_baseline = mean_soft(train_attempts)


def _propose(outcome: Outcome, models: Models, train: list[TaskRecord], docs: DocumentSet,
             settings: LoopSettings, already_refused: Callable[[Edit], bool], pool: EvidencePool | None,
             progress: Progress, tasks: list[TaskRecord], cap: CallCap) -> list[tuple[Edit, DocumentSet]]:
    """Phase 2: reflect, then apply each edit on its own. A rule banned by the ledger, or tested on
    enough earlier nights without proving itself, is not offered again. ``tasks``: all of tonight's
    (which kinds its work asks for: a full document may retire a rule that serves none)."""
    progress("reflecting on the train attempts")

    def refused(edit: Edit) -> bool:
        return already_refused(edit) or (pool is not None and pool.settled(edit))

    pool_size = settings.max_edits * max(1, settings.screen_pool)
    if cap.capped:  # the candidates' replays on their train tasks get a share of what is left
        pool_size = cap.share(pool_size, LOOKAHEAD_SAMPLES * TASKS_PER_EDIT, LOOKAHEAD_SHARE)
    proposal = reflect(models.optimizer, train, outcome.train_attempts, docs, max_edits=pool_size,
                       limits=docs.skill.limits, already_refused=refused, samples=settings.reflect_samples)
    outcome.phases["reflect"] = proposal.calls
    outcome.rejected.extend(Rejection(edit, [reason], "guardrail") for edit, reason in proposal.refused)
    ahead = look_ahead(models.target, models.optimizer, proposal.edits, train, outcome.train_attempts, docs,
                       rubric=rubric_scorer(models.optimizer), limits=docs.skill.limits)
    outcome.phases["lookahead"] = ahead.replays + ahead.calls
    outcome.notes.extend(ahead.notes())
    chosen, left_out = ahead.slots(min(settings.max_edits, pool_size), screen=settings.screen_pool > 1)
    outcome.rejected.extend(Rejection(edit, [reason], stage) for edit, reason, stage in left_out)
    candidates: list[tuple[Edit, DocumentSet]] = []
    evidence = tonight_evidence(tasks, outcome.train_attempts) if settings.retire_rules else None
    for edit in chosen:
        try:
            candidates.append(apply_within_budget(docs, edit, evidence))
        except EditRefused as exc:
            outcome.rejected.append(Rejection(edit, [str(exc)], "apply"))
    if not candidates:
        unusable = Counter(proposal.unusable)
        outcome.notes.append("no edit to try: " + "; ".join(f"{n} x {why}" for why, n in unusable.items())
                             if unusable else "the optimizer proposed no applicable edit")
    return candidates


def _worth_testing(outcome: Outcome, candidates: list[tuple[Edit, DocumentSet]], pool: EvidencePool | None,
                   val: list[TaskRecord]) -> list[tuple[Edit, DocumentSet]]:
    """The edits with something new to be tested on. One refused on an earlier night on exactly
    tonight's val tasks (the pool's scope fixes the documents and the model) is refused again
    without a draw: more samples of the same question would only give it another lottery ticket,
    and a night where nothing changed costs nothing. Such edits are not part of tonight's family
    (they spend none of its false-accept rate)."""
    if pool is None:
        return candidates
    val_set = val_set_key(val)
    keep = []
    for edit, cand in candidates:
        if not pool.accepted_before(edit) and pool.unchanged(edit, val_set):
            outcome.rejected.append(Rejection(edit, [
                "not re-tested: refused on an earlier night on these same val tasks, documents and model "
                "(tested again when the val tasks change)"], "unchanged"))
        else:
            keep.append((edit, cand))
    return keep


def _fit_reflection(outcome: Outcome, cap: CallCap, train: int, kinds: int, settings: LoopSettings) -> LoopSettings:
    """A capped night that could learn with one reading of each reflect request, but not with
    ``reflect_samples``, reads each once (as it dreams each train task once when calls are short)."""
    if (settings.reflect_samples <= 1 or not cap.too_small(train, kinds, settings)
            or cap.too_small(train, kinds, replace(settings, reflect_samples=1))):
        return settings
    outcome.notes.append(f"call cap: 1 reading of each reflect request instead of {settings.reflect_samples}")
    return replace(settings, reflect_samples=1)


def _not_again(refused: Callable[[Edit], bool], resumed: list[Edit]) -> Callable[[Edit], bool]:
    """``refused``, and the rules resumed tonight: reflection does not offer one of them again as
    a new rule (its test goes on under its pooled identity)."""
    return lambda edit: refused(edit) or any(same_rule(edit, r) for r in resumed)


def gate_alone(night: NightGate, pool: EvidencePool | None, edit: Edit, cand: DocumentSet,
               own_tasks_only: bool = False) -> GateDecision:
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

    def gate() -> GateDecision:
        if going_on is not None:
            return night.gate(cand, focus, share=going_on[1], looks_before=going_on[0], identity=identity,
                              targets=edit.targets, own_tasks_only=own_tasks_only)
        return night.gate(cand, focus, share=share, identity=identity, targets=edit.targets,
                          own_tasks_only=own_tasks_only)

    return gate_removal(night, edit, cand, focus, gate, identity)


def _gate_each(outcome: Outcome, night: NightGate, candidates: list[tuple[Edit, DocumentSet]],
               pool: EvidencePool | None, progress: Progress,
               own_only: bool = False, resumed: bool = False) -> list[tuple[Edit, DocumentSet, GateDecision]]:
    """Phase 3: every edit alone against tonight's documents, concurrently. ``own_only``: on its
    own tasks only; a winner's test is then recorded in the pool once the night's rules have been
    measured together (``together.py``). ``resumed``: the candidates start with rules resumed from
    earlier nights (``pending_rules``): the notes say what their tests showed."""
    val_set = val_set_key(list(night.evaluator.tasks.values()))
    where = "their own val tasks" if own_only else f"{len(night.evaluator.tasks)} val task(s)"
    progress(f"gating {len(candidates)} edit(s) on {where}")
    gates = [(lambda edit=edit, cand=cand: gate_alone(night, pool, edit, cand, own_only))
             for edit, cand in candidates]
    # a capped night gates one edit at a time, best ranked first: the calls go to the edits most
    # likely to pass, and which edits get them does not depend on thread timing
    decisions = in_turn(gates, night.cap.limit) if night.cap.capped else run_together(*gates)
    winners = []
    was_pending = [pool is not None and pool.identity(edit) in {i for i, _ in pool.pending()} if resumed else False
                   for edit, _ in candidates]
    for (edit, cand), decision, again in zip(candidates, decisions, was_pending, strict=True):
        decision.edits = [edit]
        outcome.decisions.append(decision)
        if again:
            outcome.notes.append(resumed_note(edit, decision))
        kinds = evidence_kinds(edit, night.tasks)
        bound = decision.statistic.get("lower_bound")
        bound = float(bound) if isinstance(bound, (int, float)) else None
        if out_of_calls(decision):
            # undecided: no verdict, no ban; the samples it drew are kept, and it is tested again
            # on a later night, on these same val tasks too (``val_set`` unknown) — before new rules
            if pool is not None and decision.per_task:
                pool.record_test(edit, False, undecided=True, kinds=kinds, lower_bound=bound,
                                 looks=int(decision.statistic.get("look") or 0),
                                 share=decision.statistic.get("alpha_share"))
            elif pool is not None and any(night.evaluator.scores.get(cand.fingerprint(), {}).values()):
                pool.hold(edit, kinds)  # drew, but no look yet: resumed first, nothing spent
            outcome.rejected.append(Rejection(edit, list(decision.reasons), "budget"))
            continue
        if pool is not None and not (own_only and decision.accepted):
            pool.record_test(edit, decision.accepted, val_set, kinds=kinds, lower_bound=bound)
        if decision.accepted:
            winners.append((edit, cand, decision))
        else:
            outcome.rejected.append(Rejection(edit, list(decision.reasons), "gate",
                                              ban=gating.significant_harm(decision)))
    return winners


def apply_all(docs: DocumentSet, edits: list[Edit]) -> DocumentSet:
    for edit in edits:
        docs = apply_edit(docs, edit)
    return docs


def _combine(outcome: Outcome, night: NightGate,
             winners: list[tuple[Edit, DocumentSet, GateDecision]], progress: Progress) -> DocumentSet:
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
            outcome.rejected.append(Rejection(edit, [
                "accepted alone, but the combination did not hold up: " + "; ".join(decision.reasons)],
                "budget" if out_of_calls(decision) else "combination"))
    outcome.accepted = [best[0]]
    return best[1]


def joint_targets(edits: list[Edit]) -> list[str] | None:
    """The checks a set of edits fixes together (None when one of them names none: the score)."""
    return sorted({c for e in edits for c in e.targets}) if all(e.targets for e in edits) else None


def fitting(outcome: Outcome, night: NightGate,
            winners: list[tuple[Edit, DocumentSet, GateDecision]]) -> list[tuple[Edit, DocumentSet, GateDecision]]:
    """The winners that fit in the documents together, best gain first; the others refused."""
    best_first = sorted(winners, key=lambda w: -w[2].statistic.get("gain", 0))
    fits, no_room = fit_together(night.base, [w[0] for w in best_first])
    outcome.rejected.extend(Rejection(e, [f"accepted alone, but no room beside the other accepted edits: {why}"],
                                      "combination") for e, why in no_room)
    return [w for w in winners if any(w[0] is e for e in fits)]


def leave_one_out(outcome: Outcome, night: NightGate, winners: list[tuple[Edit, DocumentSet, GateDecision]],
                  progress: Progress) -> list[Edit]:
    """The winners that add something beside the others: one whose own tasks another also claims
    must gain there in the combination against the combination without it (its own tasks only);
    the others are refused (stage combination, or budget when a capped night ran out)."""
    edits = [w[0] for w in winners]
    combined = apply_all(night.base, edits)
    focus = {id(e): focus_for([e], night.tasks) for e in edits}
    progress(f"checking what each of {len(winners)} accepted edits adds beside the others")
    survivors, spent = [], False
    for edit in edits:
        if not any(focus[id(edit)] & focus[id(e)] for e in edits if e is not edit):
            survivors.append(edit)  # no other claims its tasks; the combination's gate guards the rest
            continue
        rest = apply_all(night.base, [e for e in edits if e is not edit])
        decision = undecided(None, night.cap.limit, behind=True) if spent else night.gate(
            combined, focus[id(edit)], base=rest, own_tasks_only=True, targets=edit.targets)
        spent = spent or out_of_calls(decision)
        if decision.accepted:
            survivors.append(edit)
        else:
            why = ("could not be checked beside the other accepted edits" if out_of_calls(decision)
                   else "adds nothing beside the other accepted edits")
            outcome.rejected.append(Rejection(edit, [f"accepted alone, but {why}: " + "; ".join(decision.reasons)],
                                              "budget" if out_of_calls(decision) else "combination"))
    return survivors
