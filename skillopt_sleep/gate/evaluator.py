"""Val (and test) scores per document set, grown on demand, so every comparison of a night reuses
the samples drawn for another (``learning/loop.py``)."""

from __future__ import annotations

import threading

from skillopt_sleep.backends.models import Models, run_together
from skillopt_sleep.backends.base import BudgetExceeded
from skillopt_sleep.gate.call_cap import CallCap
from skillopt_sleep.documents.managed_block import DocumentSet
from skillopt_sleep.replay.dream import attempt_request, rubric_scorer, run_attempts
from skillopt_sleep.checks.judges import check_id
from skillopt_sleep.store.rule_evidence import EvidencePool, task_content_key
from skillopt_sleep.types import TaskRecord


def _check_ids(task: TaskRecord) -> frozenset[str]:
    """The ids of a task's rule checks (none for a rubric or reference task)."""
    judge = task.judge or {}
    if judge.get("kind", "rule") != "rule":
        return frozenset()
    out = set()
    for check in judge.get("checks") or []:
        try:
            out.add(check_id(check))
        except (KeyError, TypeError):
            continue
    return frozenset(out)


class Evaluator:
    """Val scores per document set, grown on demand, so every comparison reuses samples.

    With a pool, a re-tested edit starts from its samples of earlier nights (``identity``) and new
    samples are drawn after them. Tonight's documents are not pooled: their earlier draws come
    back through the score cache, answers and all (sample ``i`` is the same draw).
    """

    def __init__(
        self,
        models: Models,
        tasks: list[TaskRecord],
        phases: dict[str, int],
        phase: str,
        pool: EvidencePool | None = None,
    ):
        self.models = models
        self.tasks = {t.id: t for t in tasks}
        self.content = {t.id: task_content_key(t) for t in tasks}
        self.phases = phases  # requests issued per phase, counted here under ``phase``
        self.phase = phase
        self.pool = pool
        self.rubric = rubric_scorer(models.optimizer)
        # per document set, per task: one entry per sample drawn, None where the reply could not
        # be scored (left out, ``scoring.py``), so sample numbers and "the first n" stay exact
        self.scores: dict[str, dict[str, list[float | None]]] = {}
        # beside each score, the rule checks that sample failed (None: not known — a pooled
        # sample the pool kept no checks for, or one that could not be scored), for the targeted gain
        self.failed: dict[str, dict[str, list[frozenset[str] | None]]] = {}
        # beside each score, the answer itself (None for a pooled sample: the pool keeps no
        # answers), for the quality guard (``gate/quality.py``)
        self.answers: dict[str, dict[str, list[str | None]]] = {}
        self.checks = {t.id: _check_ids(t) for t in tasks}
        self.calls_per_sample = {t.id: 2 if (t.judge or {}).get("kind") == "rubric" else 1 for t in tasks}
        self.identities: dict[str, str] = {}  # docs fingerprint -> pooled identity
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _have(self, docs: DocumentSet, identity: str | None) -> tuple[str, dict[str, list[float | None]]]:
        key = docs.fingerprint()
        with self._guard:
            if key not in self.scores:
                pool = self.pool
                if pool is not None and identity is not None:
                    self.scores[key] = {tid: list(pool.stored(identity, self.content[tid])) for tid in self.tasks}
                    self.failed[key] = {
                        tid: list(pool.stored_failed(identity, self.content[tid])) for tid in self.tasks
                    }
                else:
                    self.scores[key] = {tid: [] for tid in self.tasks}
                    self.failed[key] = {tid: [] for tid in self.tasks}
                self.answers[key] = {tid: [None] * len(self.scores[key][tid]) for tid in self.tasks}
                if pool is not None and identity is not None:
                    self.identities[key] = identity
            self._locks.setdefault(key, threading.Lock())
            return key, self.scores[key]

    def count(self, docs: DocumentSet, identity: str | None, task_ids: list[str]) -> int:
        """Fewest samples any of ``task_ids`` has for ``docs`` (pooled ones included)."""
        _, have = self._have(docs, identity)
        return min((len(have[tid]) for tid in task_ids), default=0)

    def most(self, docs: DocumentSet, identity: str | None, task_ids: list[str]) -> int:
        """Most samples any of ``task_ids`` has for ``docs`` (pooled ones included)."""
        _, have = self._have(docs, identity)
        return max((len(have[tid]) for tid in task_ids), default=0)

    def cost(self, docs: DocumentSet, n: int, task_ids: list[str], identity: str | None = None) -> int:
        """Calls ``ensure(docs, n, task_ids)`` would make, before repairs and retries: one per
        sample whose answer must come from the provider, none for one the client already holds
        (this night's memory, the score cache, the interrupted night's journal), and one more for
        each sample of a rubric-judged task (the optimizer grades each answer; counted even when
        the grade may be cached, so this stays an upper bound)."""
        _, have = self._have(docs, identity)
        has = getattr(self.models.target, "has", None)
        total = 0
        for tid in task_ids:
            for sample in range(len(have[tid]), n):
                answered = callable(has) and has(attempt_request(self.tasks[tid], docs, sample))
                total += self.calls_per_sample[tid] - (1 if answered else 0)
        return total

    def ensure(
        self, docs: DocumentSet, n: int, task_ids: list[str] | None = None, identity: str | None = None
    ) -> dict[str, list[float | None]]:
        """At least ``n`` samples per task (all tasks, or ``task_ids``) for ``docs``."""
        key, have = self._have(docs, identity)
        with self._locks[key]:
            return self._fill(docs, have, n, task_ids)

    def _fill(
        self, docs: DocumentSet, have: dict[str, list[float | None]], n: int, task_ids: list[str] | None
    ) -> dict[str, list[float | None]]:
        wanted = task_ids if task_ids is not None else list(self.tasks)
        groups: dict[int, list[TaskRecord]] = {}
        for tid in wanted:
            start = len(have[tid])
            if start < n:
                groups.setdefault(start, []).append(self.tasks[tid])
        for start, tasks in groups.items():
            with self._guard:
                self.phases[self.phase] = self.phases.get(self.phase, 0) + len(tasks) * (n - start)
            got = run_attempts(self.models.target, tasks, docs, range(start, n), self.rubric)
            failed = self.failed[docs.fingerprint()]
            answers = self.answers[docs.fingerprint()]
            for tid, attempts in got.items():
                scored = {a.sample: a for a in attempts}
                for sample in range(start, n):
                    a = scored.get(sample)
                    have[tid].append(a.soft if a is not None else None)
                    failed[tid].append(frozenset(a.failed_checks) if a is not None else None)
                    answers[tid].append(a.response if a is not None else None)
        return {tid: list(v) for tid, v in have.items()}

    def answered(self, docs: DocumentSet, task_id: str) -> list[str]:
        """The answers drawn for ``docs`` on ``task_id`` so far whose text this night holds."""
        with self._guard:
            return [a for a in self.answers.get(docs.fingerprint(), {}).get(task_id, []) if a is not None]

    def targeted(self, docs: DocumentSet, targets: list[str]) -> dict[str, list[float | None]]:
        """Per task that has any of ``targets`` among its rule checks, per sample drawn for ``docs``
        so far: the share of those checks it passed (None where not known). Tasks without them
        are left out: the gain a rule claims is measured where its checks are asked."""
        key = docs.fingerprint()
        with self._guard:
            failed = self.failed.get(key, {})
        wanted = set(targets)
        out: dict[str, list[float | None]] = {}
        for tid, samples in failed.items():
            asked = wanted & self.checks[tid]
            if asked:
                out[tid] = [None if f is None else 1.0 - len(asked & f) / len(asked) for f in samples]
        return out

    def store(self) -> None:
        """Hand every pooled identity's samples back to the pool (saved by the night)."""
        if self.pool is None:
            return
        for key, identity in self.identities.items():
            for tid, scores in self.scores[key].items():
                kept = [i for i, x in enumerate(scores) if x is not None]
                failed = self.failed[key][tid]
                self.pool.record_samples(
                    identity,
                    self.content[tid],
                    [x for x in scores if x is not None],
                    [failed[i] if i < len(failed) else None for i in kept],
                )


def measure_test(
    models: Models,
    test: list[TaskRecord],
    base: DocumentSet,
    final: DocumentSet,
    samples: int,
    phases: dict[str, int],
    cap: CallCap,
) -> tuple[float | None, float | None] | str:
    """The test split's mean under ``base`` and ``final`` (``samples`` per task), or why it was
    not measured. Test tasks are measured, never used by the gate, and only when the documents
    changed: with nothing proposed there is no change to measure."""
    if final.fingerprint() == base.fingerprint():
        return f"{len(test)} test task(s) not measured: the documents did not change"
    evaluator = Evaluator(models, test, phases, "test")
    drawn = draw_within(cap, evaluator, [(base, None), (final, None)], samples, [t.id for t in test])
    if drawn is None:
        return f"{len(test)} test task(s) not measured: the night's call cap has no room for them"
    return mean_of(drawn[0]), mean_of(drawn[1])


def mean_of(scores: dict[str, list[float | None]]) -> float | None:
    """Mean over tasks of each task's mean scored sample (None when nothing could be scored)."""
    per_task = [sum(xs) / len(xs) for v in scores.values() if (xs := [x for x in v if x is not None])]
    return sum(per_task) / len(per_task) if per_task else None


def draw_within(
    cap: CallCap, evaluator: Evaluator, sets: list[tuple[DocumentSet, str | None]], n: int, task_ids: list[str]
) -> list[dict[str, list[float | None]]] | None:
    """``n`` samples of each of ``task_ids`` under each (documents, pooled identity) of ``sets``,
    or ``None`` when a capped night cannot afford them. A draw the plan thought would fit but the
    budget's backstop stopped (more repairs than reserved) is also ``None``: the gate it was for
    stays undecided, and the calls that finished are kept by the client for a later draw."""
    if cap.capped and not cap.afford(sum(evaluator.cost(docs, n, task_ids, ident) for docs, ident in sets)):
        return None
    return _ensure_all(evaluator, sets, n, task_ids)


def _ensure_all(
    evaluator: Evaluator, sets: list[tuple[DocumentSet, str | None]], n: int, task_ids: list[str]
) -> list[dict[str, list[float | None]]] | None:
    """The sets at once (each waits for the others to finish, a failed one too); ``None`` when the
    call limit's backstop stopped a draw."""
    try:
        return run_together(
            *[
                (lambda docs=docs, ident=ident: evaluator.ensure(docs, n, task_ids, identity=ident))
                for docs, ident in sets
            ]
        )
    except BudgetExceeded as exc:
        if exc.limit != "calls":
            raise  # a token or cost budget still ends the night
        return None


def draw_what_fits(
    cap: CallCap, evaluator: Evaluator, sets: list[tuple[DocumentSet, str | None]], n: int, task_ids: list[str]
) -> int:
    """A capped night's partial round: when ``draw_within`` cannot afford all of ``task_ids``, the
    tasks (in order) whose ``n`` samples under every set still fit are drawn, and their number is
    returned. No decision uses them tonight; they are kept (the score cache, the evidence pool),
    so a later night's round costs that much less and the calls of a night are not left unspent."""
    if not cap.capped:
        return 0
    fits: list[str] = []
    spend = 0
    for tid in task_ids:
        more = sum(evaluator.cost(docs, n, [tid], ident) for docs, ident in sets)
        if more and not cap.afford(spend + more):
            break
        fits.append(tid)
        spend += more
    if not spend:
        return 0
    _ensure_all(evaluator, sets, n, fits)
    return len(fits)
