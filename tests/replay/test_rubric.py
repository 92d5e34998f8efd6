"""Rubric judging in a night: concurrent, one repair of a reply that is not JSON, then the sample
left out and counted — never a crash of the night, never a 0."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

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
from skillopt_sleep.replay.rubric import RubricJudge
from skillopt_sleep.types import TaskRecord

from tests.support.fake_backend import FakeBackend, ok

NOT_JSON = "judge reply was not JSON after one repair"
VERDICT = json.dumps({"score": 1, "reason": "covers it"})


def rubric_task(tid: str) -> TaskRecord:
    return TaskRecord(id=tid, intent=f"explain {tid}", judge={"kind": "rubric", "rubric": f'Mentions "{tid}".'})


def client(backend, limit: int = 4) -> Client:
    return Client(backend, limiter=Limiter(limit), retry=RetryPolicy(attempts=1, sleep=lambda s: None), cache=False)


class JudgeReplies:
    """Target answers anything; judge calls answer from ``judge(request)``."""

    def __init__(self, judge):
        self.judge = judge

    def __call__(self, request: Request) -> Completion:
        if request.purpose == "judge":
            return ok(self.judge(request))
        return ok(f"an answer about {request.user[-20:]}")


def test_rubric_judge_calls_of_a_phase_run_together(tmp_path: Path):
    tasks = [rubric_task(f"t{i}") for i in range(3)]
    together = threading.Barrier(3, timeout=20)  # broken (the test fails) if judges run one at a time

    def judge(request: Request) -> str:
        together.wait()
        return VERDICT

    backend = FakeBackend(JudgeReplies(judge))
    models = client(backend)
    got = run_attempts(models, tasks, load_documents(tmp_path), range(1), RubricJudge(models))
    assert {tid: [a.soft for a in xs] for tid, xs in got.items()} == {"t0": [1.0], "t1": [1.0], "t2": [1.0]}
    assert backend.max_in_flight >= 3


def test_a_reply_that_is_not_json_is_repaired_once(tmp_path: Path):
    def judge(request: Request) -> str:
        return VERDICT if request.payload.get("repair") else "It mentions it, so full marks."

    backend = FakeBackend(JudgeReplies(judge))
    c = client(backend)
    got = run_attempts(c, [rubric_task("t0")], load_documents(tmp_path), range(1), RubricJudge(c))
    assert [a.soft for a in got["t0"]] == [1.0]
    repair = [r for r in backend.requests if r.payload.get("repair")]
    assert len(repair) == 1
    assert "It mentions it, so full marks." in repair[0].user  # the model sees its reply ...
    assert 'no {"score", "reason"} object' in repair[0].user  # ... and why it was unusable
    assert 'Mentions "t0".' in repair[0].user and repair[0].temperature == 0.0
    assert c.stats.left_out == {}


def test_still_not_json_leaves_the_sample_out_and_counts_it(tmp_path: Path):
    def judge(request: Request) -> str:
        return "I would rather not say." if "t0" in request.user else VERDICT

    backend = FakeBackend(JudgeReplies(judge))
    c = client(backend)
    tasks = [rubric_task("t0"), rubric_task("t1")]
    got = run_attempts(c, tasks, load_documents(tmp_path), range(2), RubricJudge(c))
    assert got["t0"] == [] and [a.soft for a in got["t1"]] == [1.0, 1.0]
    assert c.stats.left_out == {NOT_JSON: 2}
    assert sum(r.purpose == "judge" for r in backend.requests) == 4 + 2  # one repair per bad reply


def test_a_cut_off_judge_reply_is_repaired_not_parsed(tmp_path: Path):
    def judge(request: Request) -> Completion:
        return ok(VERDICT) if request.payload.get("repair") else Completion(text='{"score": 0, "rea', truncated=True)

    backend = FakeBackend(lambda r: judge(r) if r.purpose == "judge" else ok("answer"))
    c = client(backend)
    got = run_attempts(c, [rubric_task("t0")], load_documents(tmp_path), range(1), RubricJudge(c))
    assert [a.soft for a in got["t0"]] == [1.0]


def garbled_judge(sim: SimBackend) -> FakeBackend:
    """The simulator, except that the judge never answers in JSON."""

    def handler(request: Request) -> Completion:
        if request.purpose == "judge":
            return Completion(text="Looks fine to me!", model="sim")
        return sim.complete(request)

    return FakeBackend(handler, id=sim.id, price=sim.price, offline=sim.offline)


def test_a_night_with_a_judge_that_never_answers_json_finishes_and_says_so(tmp_path: Path):
    tasks = [
        TaskRecord(
            id=f"t{i}",
            intent=f"explain retries {i}",
            split=split,
            reference="Retries back off.",
            judge={"kind": "rubric", "rubric": 'Mentions "retries".'},
        )
        for i, split in enumerate(["train", "train", "val", "val"])
    ]
    backend = garbled_judge(SimBackend(SimKnobs(seed=1)))
    stats, limiter = Stats(), Limiter(4)
    retry = RetryPolicy(attempts=1, sleep=lambda s: None)
    models = Models(
        Client(backend, limiter=limiter, stats=stats, retry=retry),
        Client(backend, limiter=limiter, stats=stats, retry=retry, role="optimizer"),
    )
    outcome = consolidate(
        tasks,
        load_documents(tmp_path),
        models,
        LoopSettings(learning=LearningSettings(k=2), gate=GateSettings(val_samples=2)),
    )
    assert outcome.accepted == [] and outcome.baseline is None  # nothing measured, nothing invented
    assert models.left_out() == {NOT_JSON: 2 * 2 + 2 * 2}


@pytest.mark.parametrize("reply", ['{"score": "high"}', '{"reason": "no score"}', "[]"])
def test_json_of_the_wrong_shape_is_repaired_too(tmp_path: Path, reply: str):
    backend = FakeBackend(JudgeReplies(lambda r: VERDICT if r.payload.get("repair") else reply))
    c = client(backend)
    got = run_attempts(c, [rubric_task("t0")], load_documents(tmp_path), range(1), RubricJudge(c))
    assert [a.soft for a in got["t0"]] == [1.0]


def test_the_night_report_counts_what_it_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from skillopt_sleep.backends import assembly
    from skillopt_sleep.config import Config
    from skillopt_sleep.mining import assign_splits
    from skillopt_sleep.night import NightOptions, run_night
    from tests.support.tasks import write_tasks_file

    tasks = [
        TaskRecord(
            id=f"t{i}",
            intent=f"explain retries {i}",
            reference="Retries back off.",
            judge={"kind": "rubric", "rubric": 'Mentions "retries".'},
            skill_hint="explain",
        )
        for i in range(8)
    ]
    assign_splits(tasks, seed=0)
    real = assembly.make_backend
    monkeypatch.setattr(assembly, "make_backend", lambda *a, **k: garbled_judge(real(*a, **k)))
    project = tmp_path / "proj"
    project.mkdir()
    config = Config(backend="sim:seed=1", agent="claude", retries=1, k=2, val_samples=2, max_val_samples=2)
    report = run_night(
        NightOptions(
            project=project, config=config, mode="dry-run", tasks_file=write_tasks_file(tmp_path / "tasks.json", tasks)
        )
    )
    n_samples = 2 * len(tasks)
    assert report.status == "no-change" and report.baseline is None
    assert report.left_out == {NOT_JSON: n_samples}
    assert f"left out, not scored: {n_samples} x {NOT_JSON}" in report.notes


def test_what_goes_back_to_the_model_and_into_the_reasons_is_clean_text(tmp_path: Path):
    def judge(request: Request) -> str:
        if request.payload.get("repair"):
            return json.dumps({"score": 0.5, "reason": "too \x1b[31mred\u202e and \x00 long"})
        return "nope \x1b]8;;http://x\x07link\x1b]8;;\x07 \u200b"

    backend = FakeBackend(JudgeReplies(judge))
    c = client(backend)
    got = run_attempts(c, [rubric_task("t0")], load_documents(tmp_path), range(1), RubricJudge(c))
    (repair,) = [r for r in backend.requests if r.payload.get("repair")]
    assert "nope link" in repair.user and not any(ch in repair.user for ch in "\x1b\x07\u200b")
    assert got["t0"][0].fail_reasons == ["too red and  long"]
