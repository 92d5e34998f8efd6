"""One night's learning loop: tasks + documents + models -> candidate documents + decisions.

  1. dream the train tasks (up to K samples; a task whose first samples agree gets no more) and
     evaluate the current documents on val — at once;
  2. reflect on the train attempts -> bounded edits, each replayed on its own train tasks and
     rewritten when it breaks a check that passed there (``lookahead.py``); a rule for a document
     that holds its rule budget is merged into one of its scope (``rules/budget.py``), or else takes
     the line of a learned rule that no longer earns its place (``retire.py``: the removal must also
     pass the gate's "no worse" test on the tasks that rule served);
  3. gate every edit on its own against the current documents (all edits at once), on the tasks
     it claims to help first, drawing more val samples while a verdict is uncertain; the night's
     edits share the gate's false-accept rate (Bonferroni), and an edit re-tested on a later night
     adds to its pooled evidence (``edit_evidence``) with a smaller share still — but only when the
     val tasks changed since its last test: on the same tasks it stays refused without a draw.
     Several edits are each gated on their own tasks only, and measured on the others together
     (``together.py``); a single edit on every val task;
  4. when several edits pass, keep only those that add something beside the others (leave-one-out)
     and gate their combination too (falling back to the best single edit if it does not hold up);
  5. measure the test split (never used for decisions).

A night under a call cap (``max_calls``) plans these phases to fit it (``call_cap.py``): gates run
one at a time, best ranked first, and an edit the calls ran out for is left undecided, not accepted;
a later night resumes such edits before anything else (``pending_rules``).
The gate (its statistics, its sampling and its phases) lives in ``gate/``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import cast

from skillopt_sleep.backends.models import Models, run_together
from skillopt_sleep.gate.call_cap import DREAM_SHARE, LOOKAHEAD_SHARE, CallCap, cap_note
from skillopt_sleep.documents.managed_block import DocumentSet, EditRefused
from skillopt_sleep.replay.dream import dream_by_kind, mean_soft, rubric_scorer
from skillopt_sleep.store.rule_evidence import EvidencePool, task_content_key, val_set_key
from skillopt_sleep.gate.evaluator import Evaluator, mean_of, measure_test
from skillopt_sleep.gate.phases import combine, focus_for, gate_each
from skillopt_sleep.gate.sampling import NightGate
from skillopt_sleep.gate.together import gate_together
from skillopt_sleep.learning.lookahead import SAMPLES as LOOKAHEAD_SAMPLES
from skillopt_sleep.learning.lookahead import TASKS_PER_EDIT, look_ahead
from skillopt_sleep.gate.settings import LoopSettings
from skillopt_sleep.gate.outcome import Outcome, Rejection
from skillopt_sleep.gate.pending_rules import earlier_val, resumable
from skillopt_sleep.learning.reflect import reflect
from skillopt_sleep.store.refusals import same_rule
from skillopt_sleep.rules.retire import tonight as tonight_evidence
from skillopt_sleep.rules.budget import apply_within_budget
from skillopt_sleep.types import Attempt, Edit, GateDecision, TaskRecord, kind_of
from skillopt_sleep.learning.train_set import widened

__all__ = ["LoopSettings", "Outcome", "Rejection", "consolidate", "focus_for", "overlapping"]

Progress = Callable[[str], None]


def overlapping(val: list[TaskRecord], train: list[TaskRecord]) -> set[str]:
    """Val task ids that are also train tasks, by id or by normalised content (a verbatim copy
    under a new id is still the same task)."""
    train_ids = {t.id for t in train}
    train_content = {task_content_key(t) for t in train}
    return {t.id for t in val if t.id in train_ids or task_content_key(t) in train_content}


def consolidate(
    tasks: list[TaskRecord],
    docs: DocumentSet,
    models: Models,
    settings: LoopSettings = LoopSettings(),
    *,
    already_refused: Callable[[Edit], bool] = lambda e: False,
    pool: EvidencePool | None = None,
    progress: Progress = lambda msg: None,
    archived_val: list[tuple[str, TaskRecord]] | None = None,
) -> Outcome:
    """``pool``: val evidence from earlier nights for these documents and this target model; the
    night's samples are added to it (the caller saves it). ``archived_val``: the project's earlier
    val tasks as (content key, task), oldest first: a rule resumed under a cap goes on over those
    its test drew on too (``pending_rules.earlier_val``)."""
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
    together = False
    if resumed and cap.capped:  # the calls go to the rules already under test first
        night = resumed_night = NightGate(evaluator, settings, docs, tasks, overlapping(val, train), len(resumed), cap)
        assert pool is not None
        widened_gates = _over_earlier_tasks(outcome, night, resumed, pool, archived_val or [])
        # several resumed rules on tonight's val tasks: each on its own tasks, then together
        # (``together.py``), so what they do to the other tasks is measured once for all of them
        together = settings.together and len(resumed) > 1 and not widened_gates
        winners = gate_each(
            outcome,
            night,
            resumed,
            pool,
            progress,
            own_only=together,
            resumed=True,
            night_for=lambda edit: widened_gates.get(id(edit), resumed_night),
        )
        for gate in widened_gates.values():
            gate.evaluator.store()
        if together and (winners or any(r.stage == "budget" for r in outcome.rejected)):
            # the rules under test are measured together before any new one is dreamt: the
            # calls go to finishing what earlier nights began
            final = gate_together(outcome, night, winners, pool, val_set_key(val), progress)
            return _finish(outcome, evaluator, docs, final, val, test, models, settings, cap, resumed=len(resumed))
    settings = _fit_reflection(outcome, cap, len(train), len({kind_of(t) for t in train}), settings)
    short = cap.too_small(len(train), len({kind_of(t) for t in train}), settings) if val else None
    if short and not resumed:
        outcome.notes.append(short)
        return outcome
    candidates: list[tuple[Edit, DocumentSet]] = []
    if short:
        outcome.notes.append(
            f"call cap: {cap.left()} call(s) left after the resumed rule(s): no new rule started tonight"
        )
    else:
        _dream(outcome, models, train, val, docs, settings, evaluator, progress, cap)
        candidates = _propose(outcome, models, train, docs, settings, already_refused, pool, progress, tasks, cap)
        if resumed and not cap.capped:  # an uncapped night gates them with tonight's rules, ranked first
            candidates = resumed + candidates
    final = docs
    if candidates and not val:
        outcome.rejected.extend(
            Rejection(edit, ["no val tasks to validate it"], "unvalidated") for edit, _ in candidates
        )
    elif candidates:
        candidates = _worth_testing(outcome, candidates, pool, val)
    if candidates and val:
        night = NightGate(evaluator, settings, docs, tasks, overlapping(val, train), len(candidates), cap)
        together = together or (settings.together and len(candidates) > 1)
        winners += gate_each(
            outcome, night, candidates, pool, progress, own_only=together, resumed=not cap.capped and bool(resumed)
        )
    if night is not None:
        final = (
            gate_together(outcome, night, winners, pool, val_set_key(val), progress)
            if together
            else combine(outcome, night, winners, progress)
        )
    return _finish(outcome, evaluator, docs, final, val, test, models, settings, cap, gated=night is not None)


def _finish(
    outcome: Outcome,
    evaluator: Evaluator,
    docs: DocumentSet,
    final: DocumentSet,
    val: list[TaskRecord],
    test: list[TaskRecord],
    models: Models,
    settings: LoopSettings,
    cap: CallCap,
    gated: bool = True,
    resumed: int = 0,
) -> Outcome:
    """The night's outcome once its gates are done: why a cap left edits undecided, the val
    scores of tonight's and the proposed documents, and the test split's when it fits.
    ``resumed``: the night went to that many rules resumed from earlier nights only."""
    if resumed:
        outcome.notes.append(
            f"call cap: tonight's calls went to the {resumed} rule(s) resumed from earlier nights; "
            "no new rule is started while they are under test"
        )
    if gated:
        undecided = sum(r.stage == "budget" for r in outcome.rejected)
        if undecided:
            outcome.notes.append(cap_note(cap, undecided, len(val), settings.gate.max_val_samples))
    outcome.documents = final
    if val:
        # a capped night reports val on the samples its gates drew (it draws none for the report)
        first = 0 if cap.capped else settings.first_samples
        outcome.baseline = mean_of(evaluator.ensure(docs, first))
        outcome.candidate = mean_of(evaluator.ensure(final, first))
        evaluator.store()
    if test:
        measured = measure_test(models, test, docs, final, settings.gate.val_samples, outcome.phases, cap)
        if isinstance(measured, str):
            outcome.notes.append(measured)
        else:
            outcome.test_baseline, outcome.test_candidate = measured
    return outcome


def _over_earlier_tasks(
    outcome: Outcome,
    night: NightGate,
    resumed: list[tuple[Edit, DocumentSet]],
    pool: EvidencePool,
    archived_val: list[tuple[str, TaskRecord]],
) -> dict[int, NightGate]:
    """For each resumed rule whose test drew on val tasks of earlier nights that tonight does not
    have, a gate over tonight's val tasks and those (``earlier_val``); keyed by the rule's id()."""
    gates: dict[int, NightGate] = {}
    for edit, _ in resumed:
        earlier = earlier_val(pool, edit, night.tasks, archived_val)
        if not earlier:
            continue
        val = list(night.evaluator.tasks.values()) + earlier
        outcome.earlier_val.extend(t for t in earlier if all(t.id != o.id for o in outcome.earlier_val))
        evaluator = Evaluator(night.evaluator.models, val, outcome.phases, "val", pool)
        gates[id(edit)] = replace(night, evaluator=evaluator, tasks=night.tasks + earlier)
        outcome.notes.append(
            f"resumed rule {edit.content[:60]!r} goes on over {len(earlier)} val task(s) "
            "of earlier nights as well as tonight's"
        )
    return gates


def _dream(
    outcome: Outcome,
    models: Models,
    train: list[TaskRecord],
    val: list[TaskRecord],
    docs: DocumentSet,
    settings: LoopSettings,
    evaluator: Evaluator,
    progress: Progress,
    cap: CallCap,
) -> None:
    """Phase 1: train attempts and the first val samples of tonight's documents, at once (a
    capped night: fewer train samples to fit, and no val sample before a gate asks for it)."""
    k = settings.learning.k
    if cap.capped:  # two samples a task to contrast, unless that would take half of what is left
        least = min(2, k) if 2 * len(train) <= (cap.left() or 0) // 2 else 1
        k = cap.share(k, len(train), DREAM_SHARE, least=least)
    if k < settings.learning.k:
        outcome.notes.append(f"call cap: {k} sample(s) per train task instead of {settings.learning.k}")
    progress(
        f"dreaming {len(train)} train task(s) x {k}"
        + (f" and evaluating {len(val)} val task(s)" if val and not cap.capped else "")
    )
    rubric = rubric_scorer(models.optimizer)
    dreamt, _ = run_together(
        lambda: dream_by_kind(
            models.target,
            train,
            docs,
            k,
            kind_of,
            settings.learning.dream_kind_tasks,
            rubric,
            settings.learning.k_agree,
            always=widened,
        ),
        lambda: evaluator.ensure(docs, settings.first_samples) if val and not cap.capped else None,
    )
    train_attempts = cast("dict[str, list[Attempt]]", dreamt)  # run_together joins both thunks' types
    outcome.phases["dream"] = sum(len(attempts) for attempts in train_attempts.values())
    outcome.train_attempts = train_attempts
    outcome.train_baseline = mean_soft(train_attempts)


def _propose(
    outcome: Outcome,
    models: Models,
    train: list[TaskRecord],
    docs: DocumentSet,
    settings: LoopSettings,
    already_refused: Callable[[Edit], bool],
    pool: EvidencePool | None,
    progress: Progress,
    tasks: list[TaskRecord],
    cap: CallCap,
) -> list[tuple[Edit, DocumentSet]]:
    """Phase 2: reflect, then apply each edit on its own. A rule banned by the ledger, or tested on
    enough earlier nights without proving itself, is not offered again. ``tasks``: all of tonight's
    (which kinds its work asks for: a full document may retire a rule that serves none)."""
    progress("reflecting on the train attempts")

    def refused(edit: Edit) -> bool:
        return already_refused(edit) or (pool is not None and pool.settled(edit))

    pool_size = settings.learning.max_edits * max(1, settings.learning.screen_pool)
    # a capped night with an evidence pool keeps the night's best edits however few it can test
    # tonight: the ones its calls do not reach are held and resumed first on a later night
    # (``pending_rules``), instead of being proposed, dreamt and ranked again
    keep = settings.learning.max_edits if cap.capped and pool is not None else None
    if cap.capped:  # the candidates' replays on their train tasks get a share of what is left
        pool_size = cap.share(pool_size, LOOKAHEAD_SAMPLES * TASKS_PER_EDIT, LOOKAHEAD_SHARE)
    proposal = reflect(
        models.optimizer,
        train,
        outcome.train_attempts,
        docs,
        max_edits=max(pool_size, keep or 0),
        limits=docs.skill.limits,
        already_refused=refused,
        samples=settings.learning.reflect_samples,
    )
    outcome.phases["reflect"] = proposal.calls
    outcome.rejected.extend(Rejection(edit, [reason], "guardrail") for edit, reason in proposal.refused)
    ahead = look_ahead(
        models.target,
        models.optimizer,
        proposal.edits,
        train,
        outcome.train_attempts,
        docs,
        rubric=rubric_scorer(models.optimizer),
        limits=docs.skill.limits,
        slots=min(settings.learning.max_edits, pool_size) if settings.learning.screen_pool > 1 else None,
    )
    outcome.phases["lookahead"] = ahead.replays + ahead.calls
    outcome.notes.extend(ahead.notes())
    chosen, left_out = ahead.slots(
        keep or min(settings.learning.max_edits, pool_size), screen=settings.learning.screen_pool > 1
    )
    outcome.rejected.extend(Rejection(edit, [reason], stage) for edit, reason, stage in left_out)
    candidates: list[tuple[Edit, DocumentSet]] = []
    evidence = tonight_evidence(tasks, outcome.train_attempts) if settings.documents.retire_rules else None
    for edit in chosen:
        try:
            candidates.append(apply_within_budget(docs, edit, evidence))
        except EditRefused as exc:
            outcome.rejected.append(Rejection(edit, [str(exc)], "apply"))
    if not candidates:
        unusable = Counter(proposal.unusable)
        outcome.notes.append(
            "no edit to try: " + "; ".join(f"{n} x {why}" for why, n in unusable.items())
            if unusable
            else "the optimizer proposed no applicable edit"
        )
    return candidates


def _worth_testing(
    outcome: Outcome, candidates: list[tuple[Edit, DocumentSet]], pool: EvidencePool | None, val: list[TaskRecord]
) -> list[tuple[Edit, DocumentSet]]:
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
            outcome.rejected.append(
                Rejection(
                    edit,
                    [
                        "not re-tested: refused on an earlier night on these same val tasks, documents and model "
                        "(tested again when the val tasks change)"
                    ],
                    "unchanged",
                )
            )
        else:
            keep.append((edit, cand))
    return keep


def _fit_reflection(outcome: Outcome, cap: CallCap, train: int, kinds: int, settings: LoopSettings) -> LoopSettings:
    """A capped night that could learn with one reading of each reflect request, but not with
    ``reflect_samples``, reads each once (as it dreams each train task once when calls are short)."""
    one_reading = replace(settings, learning=replace(settings.learning, reflect_samples=1))
    if (
        settings.learning.reflect_samples <= 1
        or not cap.too_small(train, kinds, settings)
        or cap.too_small(train, kinds, one_reading)
    ):
        return settings
    outcome.notes.append(f"call cap: 1 reading of each reflect request instead of {settings.learning.reflect_samples}")
    return one_reading


def _not_again(refused: Callable[[Edit], bool], resumed: list[Edit]) -> Callable[[Edit], bool]:
    """``refused``, and the rules resumed tonight: reflection does not offer one of them again as
    a new rule (its test goes on under its pooled identity)."""
    return lambda edit: refused(edit) or any(same_rule(edit, r) for r in resumed)
