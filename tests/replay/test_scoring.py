"""Scored attempts: failed checks carried as data, and replies that cannot be scored left out
(counted) without disturbing the sample numbering of later draws."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from skillopt_sleep.config import GateSettings, LearningSettings
from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.client import Client, Stats
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.models import Models
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.backends.sim import SimBackend, SimKnobs
from skillopt_sleep.learning.loop import LoopSettings, consolidate
from skillopt_sleep.documents.managed_block import load_documents
from skillopt_sleep.replay.dream import run_attempts
from skillopt_sleep.checks.judges import check_from_id
from skillopt_sleep.replay.scoring import CUT_OFF, left_out_notes
from skillopt_sleep.types import Attempt

from tests.support.fake_backend import FakeBackend
from tests.support.tasks import make_tasks


def cuts_off_sample_one(sim: SimBackend) -> FakeBackend:
    """The simulator, except that every attempt with sample index 1 is cut off at the token limit."""

    def handler(request: Request) -> Completion:
        if request.purpose == "attempt" and request.sample == 1:
            return Completion(text="", model="sim", truncated=True)
        return sim.complete(request)

    return FakeBackend(handler, id=sim.id, price=sim.price, offline=sim.offline)


def models_for(backend) -> Models:
    stats, limiter = Stats(), Limiter(4)
    retry = RetryPolicy(attempts=1, sleep=lambda s: None)
    return Models(
        Client(backend, limiter=limiter, stats=stats, retry=retry, cache=False),
        Client(backend, limiter=limiter, stats=stats, retry=retry, cache=False, role="optimizer"),
    )


def test_attempts_carry_their_failed_checks_as_data(tmp_path: Path):
    tasks = [t for t in make_tasks() if t.skill_hint == "pr"][:1]
    models = models_for(SimBackend(SimKnobs(base=0.0, seed=2)))
    (attempt,) = run_attempts(models.target, tasks, load_documents(tmp_path), range(1))[tasks[0].id]
    failed = [check_from_id(c) for c in attempt.failed_checks]
    assert failed and all(c in tasks[0].judge["checks"] for c in failed)
    assert len(failed) == len(attempt.fail_reasons)
    assert Attempt.from_dict(attempt.to_dict()).failed_checks == attempt.failed_checks


def test_left_out_samples_are_never_drawn_again_under_the_same_number(tmp_path: Path):
    backend = cuts_off_sample_one(SimBackend(SimKnobs(correct=1.0, harmful=0.0, seed=4)))
    models = models_for(backend)
    tasks = make_tasks()
    outcome = consolidate(
        tasks,
        load_documents(tmp_path),
        models,
        LoopSettings(learning=LearningSettings(k=3), gate=GateSettings(val_samples=2, max_val_samples=6)),
    )
    drawn = Counter((r.system, r.user, r.sample) for r in backend.requests if r.purpose == "attempt")
    assert max(drawn.values()) == 1, [k[2] for k, n in drawn.items() if n > 1]
    n_train = sum(t.split == "train" for t in tasks)
    assert models.left_out()[CUT_OFF] >= n_train  # one of the K=3 train samples of every task
    assert all(len(xs) == 2 and {a.sample for a in xs} == {0, 2} for xs in outcome.train_attempts.values())
    for decision in outcome.decisions:
        assert all(d.n_baseline >= 1 and d.n_candidate >= 1 for d in decision.per_task)


def test_left_out_notes():
    assert left_out_notes({}) == []
    assert left_out_notes({"b why": 1, "a why": 3}) == ["left out, not scored: 3 x a why; 1 x b why"]


def prose_optimizer(sim: SimBackend) -> FakeBackend:
    """The simulator, except that the optimizer answers in prose, repair or not."""

    def handler(request: Request) -> Completion:
        if request.purpose == "reflect":
            return Completion(text="The agent should simply try harder next time.", model="sim")
        return sim.complete(request)

    return FakeBackend(handler, id=sim.id, price=sim.price, offline=sim.offline)


def test_a_night_whose_optimizer_never_answers_json_says_so(tmp_path: Path):
    models = models_for(prose_optimizer(SimBackend(SimKnobs(seed=3))))
    outcome = consolidate(make_tasks(), load_documents(tmp_path), models, LoopSettings(learning=LearningSettings(k=2)))
    # every kind fits one reflect request, read twice (``reflect_samples``), each repaired once
    assert outcome.accepted == [] and outcome.phases["reflect"] == 2 * 2
    assert models.left_out() == {"reflect: optimizer reply was not JSON after one repair": 2}
    assert "no edit to try: 2 x optimizer reply was not JSON after one repair (the reply is not JSON)" in outcome.notes
    assert "the optimizer proposed no applicable edit" not in outcome.notes
