"""One night's learning loop: tasks + documents + models -> candidate documents + decisions.

  1. dream the train tasks (up to K samples; a task whose first samples agree gets no more) and evaluate the current documents on val — at once;
  2. reflect on the train attempts -> bounded edits;
  3. gate every edit on its own against the current documents (all edits at once), drawing more
     val samples while a verdict is uncertain;
  4. combine the accepted edits and gate the combination too (falling back to the best single
     edit if the combination does not hold up);
  5. measure the test split (never used for decisions).
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from collections.abc import Callable

from skillopt_sleep import gate as gating
from skillopt_sleep.backends.models import Models, run_together
from skillopt_sleep.documents import DocumentSet, EditRefused, apply_edit
from skillopt_sleep.dream import mean_soft, rubric_scorer, run_attempts, run_train_attempts
from skillopt_sleep.reflect import reflect
from skillopt_sleep.types import Attempt, Edit, GateDecision, TaskRecord

Progress = Callable[[str], None]


@dataclass
class LoopSettings:
    k: int = 4
    agree_after: int = 2  # a train task whose first samples all agree gets no more (0: always k)
    val_samples: int = 4
    max_val_samples: int = 12
    max_edits: int = 4
    gate: gating.GateConfig = field(default_factory=lambda: gating.GateConfig(looks=3))


@dataclass
class Outcome:
    documents: DocumentSet  # the proposal (== the input when nothing was accepted)
    accepted: list[Edit] = field(default_factory=list)
    rejected: list[dict] = field(default_factory=list)  # {"edit": Edit, "reasons": [...]}
    decisions: list[GateDecision] = field(default_factory=list)
    baseline: float | None = None  # val
    candidate: float | None = None  # val
    train_baseline: float | None = None
    test_baseline: float | None = None
    test_candidate: float | None = None
    train_attempts: dict[str, list[Attempt]] = field(default_factory=dict)
    phases: dict[str, int] = field(default_factory=dict)  # requests issued per phase
    notes: list[str] = field(default_factory=list)


class _Evaluator:
    """Val scores per document set, grown on demand, so every comparison reuses samples."""

    def __init__(self, models: Models, tasks: list[TaskRecord], outcome: Outcome, phase: str):
        self.models = models
        self.tasks = {t.id: t for t in tasks}
        self.outcome = outcome
        self.phase = phase
        self.rubric = rubric_scorer(models.optimizer)
        # per document set, per task: one entry per sample drawn, None where the reply could not
        # be scored (left out, ``scoring.py``), so sample numbers and "the first n" stay exact
        self.scores: dict[str, dict[str, list[float | None]]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def ensure(self, docs: DocumentSet, n: int, task_ids: list[str] | None = None) -> dict[str, list[float | None]]:
        """At least ``n`` samples per task (all tasks, or ``task_ids``) for ``docs``."""
        key = docs.fingerprint()
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
            have = self.scores.setdefault(key, {tid: [] for tid in self.tasks})
        with lock:
            return self._fill(docs, have, n, task_ids)

    def _fill(self, docs: DocumentSet, have: dict[str, list[float | None]], n: int,
              task_ids: list[str] | None) -> dict[str, list[float | None]]:
        wanted = task_ids if task_ids is not None else list(self.tasks)
        groups: dict[int, list[TaskRecord]] = {}
        for tid in wanted:
            start = len(have[tid])
            if start < n:
                groups.setdefault(start, []).append(self.tasks[tid])
        for start, tasks in groups.items():
            with self._guard:
                self.outcome.phases[self.phase] = self.outcome.phases.get(self.phase, 0) + len(tasks) * (n - start)
            got = run_attempts(self.models.target, tasks, docs, range(start, n), self.rubric)
            for tid, attempts in got.items():
                scored = {a.sample: a.soft for a in attempts}
                have[tid].extend(scored.get(sample) for sample in range(start, n))
        return {tid: list(v) for tid, v in have.items()}


def focus_for(edits: list[Edit], tasks: list[TaskRecord]) -> set[str]:
    """Val tasks of the kinds an edit's evidence comes from (the tasks it claims to help)."""
    kind = {t.id: (t.skill_hint or t.id) for t in tasks}
    kinds = {kind[e] for edit in edits for e in edit.evidence if e in kind}
    return {t.id for t in tasks if t.split == "val" and (t.skill_hint or t.id) in kinds}


def _gate(evaluator: _Evaluator, base: DocumentSet, cand: DocumentSet, settings: LoopSettings,
          train_ids: set[str], focus: set[str]) -> GateDecision:
    """``cand`` against ``base`` on the val tasks, focus tasks first.

    The gain is tested on the tasks the edit claims to help (``focus``), so an edit whose gain
    there does not hold up is refused before the other val tasks are measured for it: they could
    only add reasons to refuse. An edit that may still pass is then measured on every val task
    for regressions.

    Each decision sees exactly the samples this gate asked for: the shared baseline may hold more
    (drawn for another candidate in parallel), and using them would make every verdict, and the
    calls that follow from it, depend on thread timing."""
    everything = list(evaluator.tasks)
    first = [tid for tid in everything if tid in focus] or everything
    wanted: dict[str, int] = {}
    decision = _sample(evaluator, base, cand, settings, train_ids, focus, wanted, first)
    if len(first) < len(everything) and not _gain_refused(decision, settings.gate):
        decision = _sample(evaluator, base, cand, settings, train_ids, focus, wanted, everything)
    elif len(first) < len(everything):
        decision.statistic["not_measured"] = sorted(set(everything) - set(first))
    decision.statistic["samples_per_task"] = {d.task_id: d.n_candidate for d in decision.per_task}
    return decision


def _sample(evaluator: _Evaluator, base: DocumentSet, cand: DocumentSet, settings: LoopSettings,
            train_ids: set[str], focus: set[str], wanted: dict[str, int], task_ids: list[str]) -> GateDecision:
    """Decide on ``task_ids``, drawing more samples while the verdict is uncertain (up to the
    ceiling). ``wanted``: samples per task this gate uses so far (grown here)."""
    n = settings.val_samples
    fresh = [tid for tid in task_ids if tid not in wanted]
    wanted.update(dict.fromkeys(fresh, n))
    b, c = evaluator.ensure(base, n, fresh), evaluator.ensure(cand, n, fresh)
    decision = gating.decide(_first(b, wanted), _first(c, wanted), settings.gate, train_ids, focus)
    while n < settings.max_val_samples:
        more = gating.wants_more(decision, settings.gate)
        if not more:
            break
        n = min(settings.max_val_samples, n + settings.val_samples)
        grow = [tid for tid in more if wanted[tid] < n]
        wanted.update(dict.fromkeys(grow, n))
        b, c = evaluator.ensure(base, n, grow), evaluator.ensure(cand, n, grow)
        decision = gating.decide(_first(b, wanted), _first(c, wanted), settings.gate, train_ids, focus)
    return decision


def _gain_refused(decision: GateDecision, cfg: gating.GateConfig) -> bool:
    """Refused on the gain alone (or skipped): more val tasks cannot change the verdict."""
    if decision.action == "skip":
        return True
    stat = decision.statistic
    return stat.get("gain", 0) < cfg.min_gain or stat.get("lower_bound", 0) <= 0


def _first(scores: dict[str, list[float | None]], wanted: dict[str, int]) -> dict[str, list[float]]:
    """The scores of each wanted task's first ``wanted`` draws; a task none of whose draws could
    be scored is left out of the comparison."""
    first = {tid: [x for x in samples[: wanted[tid]] if x is not None]
             for tid, samples in scores.items() if tid in wanted}
    return {tid: xs for tid, xs in first.items() if xs}


def consolidate(tasks: list[TaskRecord], docs: DocumentSet, models: Models,
                settings: LoopSettings = LoopSettings(), *,
                already_refused: Callable[[Edit], bool] = lambda e: False,
                progress: Progress = lambda msg: None) -> Outcome:
    train = [t for t in tasks if t.split == "train"]
    val = [t for t in tasks if t.split == "val"]
    test = [t for t in tasks if t.split == "test"]
    outcome = Outcome(documents=docs)
    train_ids = {t.id for t in train}
    if not train:
        outcome.notes.append("no train tasks: nothing to learn from")
        return outcome
    if not val:
        outcome.notes.append("no val tasks: the night cannot be validated, so no edit can be accepted")
    evaluator = _Evaluator(models, val, outcome, "val")

    progress(f"dreaming {len(train)} train task(s) x {settings.k} and evaluating {len(val)} val task(s)")
    rubric = rubric_scorer(models.optimizer)
    train_attempts, _ = run_together(
        lambda: run_train_attempts(models.target, train, docs, settings.k, rubric, settings.agree_after),
        lambda: evaluator.ensure(docs, settings.val_samples) if val else None,
    )
    outcome.train_attempts = train_attempts
    outcome.phases["dream"] = sum(len(attempts) for attempts in train_attempts.values())
    outcome.train_baseline = mean_soft(train_attempts)
    if val:
        outcome.baseline = _mean_of(evaluator.ensure(docs, settings.val_samples))

    progress("reflecting on the train attempts")
    proposal = reflect(models.optimizer, train, train_attempts, docs, max_edits=settings.max_edits,
                       limits=docs.skill.limits, already_refused=already_refused)
    outcome.phases["reflect"] = proposal.calls
    for edit, reason in proposal.refused:
        outcome.rejected.append({"edit": edit, "reasons": [reason]})
    candidates: list[tuple[Edit, DocumentSet]] = []
    for edit in proposal.edits:
        try:
            candidates.append((edit, apply_edit(docs, edit)))
        except EditRefused as exc:
            outcome.rejected.append({"edit": edit, "reasons": [str(exc)]})
    if not candidates:
        unusable = Counter(proposal.unusable)
        outcome.notes.append("no edit to try: " + "; ".join(f"{n} x {why}" for why, n in unusable.items())
                             if unusable else "the optimizer proposed no applicable edit")
        outcome.candidate = outcome.baseline
        _measure_test(outcome, models, test, docs, docs, settings)
        return outcome
    if not val:
        for edit, _ in candidates:
            outcome.rejected.append({"edit": edit, "reasons": ["no val tasks to validate it"]})
        outcome.candidate = outcome.baseline
        _measure_test(outcome, models, test, docs, docs, settings)
        return outcome

    progress(f"gating {len(candidates)} edit(s) on {len(val)} val task(s)")
    decisions = run_together(*[
        (lambda edit=edit, cand=cand: _gate(evaluator, docs, cand, settings, train_ids, focus_for([edit], tasks)))
        for edit, cand in candidates
    ])
    winners: list[tuple[Edit, DocumentSet, GateDecision]] = []
    for (edit, cand), decision in zip(candidates, decisions, strict=True):
        decision.edits = [edit]
        outcome.decisions.append(decision)
        if decision.accepted:
            winners.append((edit, cand, decision))
        else:
            outcome.rejected.append({"edit": edit, "reasons": decision.reasons})

    final, accepted = docs, []
    if len(winners) == 1:
        final, accepted = winners[0][1], [winners[0][0]]
    elif winners:
        combined = docs
        for edit, _, _ in winners:
            combined = apply_edit(combined, edit)
        progress(f"gating the combination of {len(winners)} accepted edits")
        decision = _gate(evaluator, docs, combined, settings, train_ids,
                         focus_for([w[0] for w in winners], tasks))
        decision.edits = [w[0] for w in winners]
        outcome.decisions.append(decision)
        if decision.accepted:
            final, accepted = combined, [w[0] for w in winners]
        else:
            best = max(winners, key=lambda w: w[2].statistic.get("gain", 0))
            final, accepted = best[1], [best[0]]
            for edit, _, _ in winners:
                if edit is not best[0]:
                    outcome.rejected.append({"edit": edit, "reasons": [
                        "accepted alone, but the combination did not hold up: " + "; ".join(decision.reasons)]})
    outcome.documents = final
    outcome.accepted = accepted
    outcome.baseline = _mean_of(evaluator.ensure(docs, settings.val_samples))
    outcome.candidate = _mean_of(evaluator.ensure(final, settings.val_samples))
    _measure_test(outcome, models, test, docs, final, settings)
    return outcome


def _measure_test(outcome: Outcome, models: Models, test: list[TaskRecord], base: DocumentSet,
                  final: DocumentSet, settings: LoopSettings) -> None:
    """Test tasks are measured, never used by the gate, and only when the documents changed:
    with nothing proposed there is no change to measure."""
    if not test:
        return
    if final.fingerprint() == base.fingerprint():
        outcome.notes.append(f"{len(test)} test task(s) not measured: the documents did not change")
        return
    evaluator = _Evaluator(models, test, outcome, "test")
    n = settings.val_samples
    b, c = run_together(lambda: evaluator.ensure(base, n), lambda: evaluator.ensure(final, n))
    outcome.test_baseline, outcome.test_candidate = _mean_of(b), _mean_of(c)


def _mean_of(scores: dict[str, list[float | None]]) -> float | None:
    """Mean over tasks of each task's mean scored sample (None when nothing could be scored)."""
    per_task = [sum(xs) / len(xs) for v in scores.values() if (xs := [x for x in v if x is not None])]
    return sum(per_task) / len(per_task) if per_task else None
