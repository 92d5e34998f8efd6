"""Dreams: the attempt prompt, which tasks a target can be scored on, K samples per task scored by
each task's judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.backends.anthropic_api import AnthropicBackend
from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.claude_cli import ClaudeCliBackend
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.documents.managed_block import DocumentSet, load_documents
from skillopt_sleep.replay.dream import attempt_request, mean_soft, run_attempts, run_train_attempts, split_measurable
from skillopt_sleep.types import Attempt, TaskRecord, Usage

from tests.support.fake_backend import FakeBackend

REFS = {"kind": "rule", "checks": [{"op": "contains", "arg": "Refs:"}]}
TOOL = {"kind": "rule", "checks": [{"op": "tool_called", "arg": "run_tests"}, {"op": "contains", "arg": "passed"}]}


def task(task_id: str, judge: dict | None = None, **fields) -> TaskRecord:
    return TaskRecord(
        id=task_id, intent=f"write the commit message for {task_id}", project="/p", judge=judge or REFS, **fields
    )


def client(backend: FakeBackend) -> Client:
    return Client(backend, retry=RetryPolicy(attempts=1, sleep=lambda s: None), cache=False)


@pytest.fixture
def docs(tmp_path: Path) -> DocumentSet:
    (tmp_path / "CLAUDE.md").write_text("# Acme\n\nAlways cite the ticket.\n", encoding="utf-8")
    return load_documents(tmp_path)


def test_the_documents_are_one_system_prefix_shared_by_every_task(docs: DocumentSet) -> None:
    a = attempt_request(task("a"), docs, 0)
    b = attempt_request(task("b", context_excerpt="diff --git a/x b/x", system="Return JSON only."), docs, 3)
    assert a.system == b.system and "Always cite the ticket." in a.system  # cacheable across tasks
    assert a.purpose == "attempt" and b.sample == 3
    assert "write the commit message for a" in a.user and "Always cite" not in a.user
    assert "diff --git a/x b/x" in b.user and "Return JSON only." in b.user
    assert "Context:" not in a.user and "Output contract:" not in a.user
    assert b.payload["task"]["id"] == "b" and b.payload["documents"] == docs.prompt_prefix()


def test_an_attempt_request_names_the_tools_its_checks_need(tmp_path: Path) -> None:
    docs = load_documents(tmp_path)
    assert attempt_request(task("t", TOOL), docs, 0).tools == ("run_tests",)
    assert attempt_request(task("t", REFS), docs, 0).tools == ()


def test_split_measurable_leaves_out_tool_tasks_on_a_cli_backend() -> None:
    tasks = [task("tool", TOOL), task("plain", REFS)]
    kept, left_out = split_measurable(tasks, Client(ClaudeCliBackend()))
    assert [t.id for t in kept] == ["plain"] and [t.id for t in left_out] == ["tool"]
    kept, left_out = split_measurable(tasks, Client(AnthropicBackend("claude-haiku-4-5", api_key="k")))
    assert len(kept) == 2 and left_out == []


def test_every_task_and_sample_is_scored_by_its_own_judge_in_sample_order(docs: DocumentSet) -> None:
    def reply(request: Request) -> Completion:
        task_id = request.payload["task"]["id"]
        # task "a" cites the ticket on even samples only; "tool" runs the tests every time
        text = "Fix it\n\nRefs: ACME-1" if task_id == "a" and request.sample % 2 == 0 else "tests passed"
        return Completion(
            text=text,
            usage=Usage(input_tokens=7, output_tokens=3),
            tools_called=["run_tests"] if task_id == "tool" else [],
        )

    backend = FakeBackend(reply, tools=True)
    out = run_attempts(client(backend), [task("a"), task("tool", TOOL)], docs, range(4))
    assert list(out) == ["a", "tool"] and len(backend.requests) == 8
    assert [a.sample for a in out["a"]] == [0, 1, 2, 3]
    assert [a.hard for a in out["a"]] == [1.0, 0.0, 1.0, 0.0]
    assert out["a"][1].fail_reasons and not out["a"][0].fail_reasons
    assert all(a.hard == 1.0 and a.tools_called == ["run_tests"] for a in out["tool"])
    assert out["a"][0].usage == Usage(input_tokens=7, output_tokens=3)


def test_no_samples_means_no_calls(docs: DocumentSet) -> None:
    backend = FakeBackend()
    assert not any(run_attempts(client(backend), [task("a")], docs, range(0)).values())
    assert backend.requests == []


def attempts(task_id: str, softs: list[float]) -> list[Attempt]:
    return [Attempt(task_id=task_id, sample=i, response="", hard=float(s == 1.0), soft=s) for i, s in enumerate(softs)]


def test_mean_soft_weighs_every_task_alike_whatever_its_sample_count() -> None:
    scores = {"a": attempts("a", [1.0, 1.0, 1.0, 0.0]), "b": attempts("b", [0.0]), "empty": []}
    assert mean_soft(scores) == pytest.approx((0.75 + 0.0) / 2)
    assert mean_soft({}) is None and mean_soft({"empty": []}) is None


# -- adaptive K: a train task whose first samples agree gets no more ---------------------


def pass_task(task_id: str) -> TaskRecord:
    return TaskRecord(
        id=task_id,
        intent=f"do {task_id}",
        project="/p",
        judge={"kind": "rule", "checks": [{"op": "contains", "arg": "PASS"}]},
    )


def steady_and_flaky(request) -> str:
    """``steady`` always passes; ``flaky`` passes on even samples only."""
    task_id = request.payload["task"]["id"]
    return "PASS" if task_id == "steady" or request.sample % 2 == 0 else "nope"


def test_a_task_whose_samples_agree_stops_early_the_others_get_k(tmp_path: Path) -> None:
    backend = FakeBackend(steady_and_flaky)
    out = run_train_attempts(Client(backend), [pass_task("steady"), pass_task("flaky")], load_documents(tmp_path), 5)
    assert [a.sample for a in out["steady"]] == [0, 1]
    assert [a.sample for a in out["flaky"]] == [0, 1, 2, 3, 4]
    assert len(backend.requests) == 7


def test_agree_after_zero_draws_k_for_every_task(tmp_path: Path) -> None:
    backend = FakeBackend(steady_and_flaky)
    out = run_train_attempts(
        Client(backend), [pass_task("steady"), pass_task("flaky")], load_documents(tmp_path), 5, agree_after=0
    )
    assert {tid: len(xs) for tid, xs in out.items()} == {"steady": 5, "flaky": 5}


def test_failing_in_different_ways_is_not_agreement(tmp_path: Path) -> None:
    two_checks = TaskRecord(
        id="t",
        intent="do t",
        project="/p",
        judge={"kind": "rule", "checks": [{"op": "contains", "arg": "A"}, {"op": "contains", "arg": "B"}]},
    )
    backend = FakeBackend(lambda r: "A" if r.sample % 2 == 0 else "B")  # same score, different failure
    out = run_train_attempts(Client(backend), [two_checks], load_documents(tmp_path), 4)
    assert len(out["t"]) == 4


def test_k_below_agree_after_is_just_k(tmp_path: Path) -> None:
    backend = FakeBackend(steady_and_flaky)
    out = run_train_attempts(Client(backend), [pass_task("flaky")], load_documents(tmp_path), 1)
    assert len(out["flaky"]) == 1


def test_a_sample_left_out_is_not_agreement(tmp_path: Path) -> None:
    from skillopt_sleep.backends.base import Completion

    def cut_first(request):
        if request.sample == 0:
            return Completion(text="PA", truncated=True)
        return "PASS"

    out = run_train_attempts(Client(FakeBackend(cut_first)), [pass_task("steady")], load_documents(tmp_path), 4)
    assert [a.sample for a in out["steady"]] == [1, 2, 3]


def kind_task(kind: str, i: int) -> TaskRecord:
    return TaskRecord(
        id=f"{kind}-{i}",
        intent=f"do {kind} {i}",
        project="/p",
        skill_hint=kind,
        judge={"kind": "rule", "checks": [{"op": "contains", "arg": "PASS"}]},
    )


def test_a_kind_stops_being_dreamed_once_enough_of_its_tasks_teach_something(tmp_path: Path) -> None:
    """``failing`` always fails (every task teaches), ``passing`` always passes (none does),
    ``mixed`` teaches on odd tasks only: each is dreamed just until it has 2 tasks that teach."""
    from skillopt_sleep.replay.dream import dream_by_kind

    def reply(request) -> str:
        kind, i = request.payload["task"]["id"].split("-")
        return "PASS" if kind == "passing" or (kind == "mixed" and int(i) % 2 == 0) else "nope"

    tasks = [kind_task(kind, i) for kind in ("failing", "passing", "mixed") for i in range(5)]
    backend = FakeBackend(reply)
    out = dream_by_kind(Client(backend), tasks, load_documents(tmp_path), 3, lambda t: t.skill_hint, enough=2)
    assert sorted(out) == [
        "failing-0",
        "failing-1",
        "mixed-0",
        "mixed-1",
        "mixed-2",
        "mixed-3",
        "passing-0",
        "passing-1",
        "passing-2",
        "passing-3",
        "passing-4",
    ]
    assert all(len(xs) == 2 for xs in out.values()), "agreeing samples stop at agree_after"
    assert len(backend.requests) == 2 * len(out)
    recalled = dream_by_kind(
        Client(FakeBackend(reply)),
        tasks,
        load_documents(tmp_path),
        3,
        lambda t: t.skill_hint,
        enough=2,
        always=lambda t: t.id == "failing-4",
    )
    assert sorted(recalled) == sorted([*out, "failing-4"]), "a task the night added on purpose is always dreamed"
    everything = dream_by_kind(
        Client(FakeBackend(reply)), tasks, load_documents(tmp_path), 3, lambda t: t.skill_hint, enough=0
    )
    assert sorted(everything) == sorted(t.id for t in tasks)


def test_teaches_is_what_reflection_can_show() -> None:
    from skillopt_sleep.replay.dream import teaches

    def att(*softs: float) -> list[Attempt]:
        return [Attempt(task_id="t", sample=i, response="", hard=int(s == 1), soft=s) for i, s in enumerate(softs)]

    assert teaches(att(1.0, 0.0)) and teaches(att(0.5, 0.5)) and teaches(att(0.0))
    assert not teaches(att(1.0, 1.0)) and not teaches([])
