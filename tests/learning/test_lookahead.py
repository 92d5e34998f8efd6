from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.documents.managed_block import DocumentSet, load_documents
from skillopt_sleep.replay.dream import run_attempts
from skillopt_sleep.checks.judges import check_id, validate_check
from skillopt_sleep.learning.lookahead import clear, fixed, look_ahead, newly_broken
from skillopt_sleep.types import Attempt, Edit, TaskRecord

from tests.support.fake_backend import FakeBackend, forward

CAP = validate_check({"op": "max_chars", "arg": 400})
FLOOR = validate_check({"op": "min_chars", "arg": 120})
CAP_RULE = "When working on a changelog entry task, keep the response to at most 400 characters."


def failing(*checks: dict, n: int = 1) -> list[Attempt]:
    return [
        Attempt(task_id="t", sample=i, response="r", hard=0.0, soft=0.5, failed_checks=[check_id(c) for c in checks])
        for i in range(n)
    ]


def passing(n: int) -> list[Attempt]:
    return [Attempt(task_id="t", sample=i, response="r", hard=1.0, soft=1.0) for i in range(n)]


def test_a_check_that_passed_reliably_and_now_fails_often_is_newly_broken() -> None:
    assert newly_broken(passing(6), failing(FLOOR, n=4) + passing(2)) == [check_id(FLOOR)]
    assert newly_broken(failing(CAP, n=6), failing(CAP, FLOOR, n=3) + passing(3)) == [check_id(FLOOR)]


def test_a_check_that_failed_often_already_or_rarely_now_is_not_newly_broken() -> None:
    assert newly_broken(failing(FLOOR, n=3) + passing(3), failing(FLOOR, n=6)) == [], "it failed before"
    assert newly_broken(passing(6), failing(FLOOR, n=1) + passing(5)) == [], "one failure is noise"
    assert newly_broken(passing(6), failing(FLOOR, n=2) + passing(4)) == [], "a third of the replays is not half"


def changelog(i: int) -> TaskRecord:
    return TaskRecord(
        id=f"changelog-{i}",
        intent=f"Write the changelog entry for the {i}.0 release.",
        kind="changelog entry",
        split="train",
        judge={"kind": "rule", "checks": [CAP, FLOOR]},
    )


def clients(spec: str) -> tuple[FakeBackend, Client, Client]:
    backend = FakeBackend(forward(make_backend(spec)))
    retry = RetryPolicy(attempts=1, sleep=lambda s: None)
    return backend, Client(backend, retry=retry), Client(backend, retry=retry, role="optimizer")


@pytest.fixture
def docs(tmp_path: Path) -> DocumentSet:
    return load_documents(tmp_path)


def ahead(docs: DocumentSet, spec: str, rule: str = CAP_RULE):
    backend, target, optimizer = clients(spec)
    tasks = [changelog(i) for i in range(3)]
    attempts = run_attempts(target, tasks, docs, range(4))
    edit = Edit(
        target="skill",
        op="add",
        content=rule,
        scope="working on a changelog entry task",
        evidence=[t.id for t in tasks],
    )
    backend.requests.clear()
    return look_ahead(target, optimizer, [edit], tasks, attempts, docs), backend, edit


def test_a_cap_that_cuts_replies_below_their_floor_is_rewritten_to_keep_both(docs: DocumentSet) -> None:
    # a verbose model passes the floor by padding; obeying the cap drops the padding and the floor fails
    out, backend, edit = ahead(docs, "sim:follow=1,base=0,correct=1,harmful=0,verbose=700,seed=3")
    [refine] = [r for r in backend.requests if r.purpose == "refine"]
    assert [c for t in refine.payload["tasks"] for c in t["failed_checks"]] and all(
        c == FLOOR for t in refine.payload["tasks"] for c in t["failed_checks"]
    )
    assert "at least 120 characters" in refine.user
    assert {r.payload["task"]["id"] for r in backend.requests if r.purpose == "attempt"} <= set(edit.evidence)
    [rewritten] = out.edits
    assert rewritten.content == (
        "When working on a changelog entry task, keep the response to at most 400 "
        "characters; write at least 120 characters."
    )
    assert rewritten.evidence == edit.evidence and "rewritten" in rewritten.rationale
    assert out.rewritten == [(CAP_RULE, rewritten.content)] and out.calls == 1 and out.replays == 6
    assert edit.content == CAP_RULE, "the proposed edit itself is not changed in place"


def test_a_rule_that_breaks_nothing_costs_its_replays_and_no_request(docs: DocumentSet) -> None:
    out, backend, edit = ahead(docs, "sim:follow=1,base=0,correct=1,harmful=0,seed=3")  # not verbose
    assert [r.purpose for r in backend.requests] == ["attempt"] * 6
    assert [replace(e, targets=[]) for e in out.edits] == [edit] and out.rewritten == [] and out.calls == 0


def test_an_unusable_rewrite_keeps_the_rule_as_proposed_and_is_counted(docs: DocumentSet) -> None:
    sim = make_backend("sim:follow=1,base=0,correct=1,harmful=0,verbose=700,seed=3")
    backend = FakeBackend(lambda r: "I would keep it as it is." if r.purpose == "refine" else sim.complete(r))
    retry = RetryPolicy(attempts=1, sleep=lambda s: None)
    target, optimizer = Client(backend, retry=retry), Client(backend, retry=retry, role="optimizer")
    tasks = [changelog(i) for i in range(3)]
    attempts = run_attempts(target, tasks, docs, range(4))
    edit = Edit(target="skill", op="add", content=CAP_RULE, evidence=[t.id for t in tasks])
    out = look_ahead(target, optimizer, [edit], tasks, attempts, docs)
    assert [replace(e, targets=[]) for e in out.edits] == [edit] and out.calls == 2  # the request and its one repair
    assert out.edits[0].targets == [check_id(CAP)], "the cap it fixes (the verbose model failed it) is its target"
    assert out.unusable and "not JSON" in out.unusable[0]


def test_the_checks_a_rule_fixes_are_those_that_failed_clearly_less_under_it() -> None:
    before = failing(CAP, n=4) + failing(CAP, FLOOR, n=1)  # the cap fails 5/5, the floor 1/5
    after = passing(5) + failing(FLOOR, n=1)  # the cap never, the floor 1/6
    assert fixed(before, after) == [check_id(CAP)], "the floor's small wobble does not dilute the target"
    assert fixed(failing(CAP, n=5), failing(CAP, n=6)) == [], "nothing failed less: no target"
    assert fixed([], after) == [] and fixed(before, []) == []
    both = passing(6)
    assert fixed(failing(CAP, FLOOR, n=4), both) == sorted([check_id(CAP), check_id(FLOOR)])


def test_rules_that_fixed_something_take_the_slots_first_and_the_rest_wait_in_rank_order() -> None:
    from skillopt_sleep.learning.lookahead import Lookahead

    a, b, c, d = (Edit(target="skill", op="add", content=x) for x in "abcd")
    ahead = Lookahead(edits=[a, replace(b, targets=["t"]), c, replace(d, targets=["t"])], replayed={0, 1, 2, 3})
    chosen, left = ahead.slots(2)
    assert [e.content for e in chosen] == ["b", "d"]
    assert [(e.content, stage) for e, _, stage in left] == [("a", "lookahead"), ("c", "lookahead")]
    assert [e.content for e in ahead.slots(3)[0]] == ["b", "d", "a"], "a slot left: gated, not vetoed"
    assert [e.content for e in ahead.slots(2, screen=False)[0]] == ["a", "b"], "no screen: rank order"
    not_replayed = Lookahead(edits=[a, b], replayed=set())
    assert [e.content for e in not_replayed.slots(1)[0]] == ["a"], "a rule not replayed fixed nothing? unknown"


def test_one_replay_per_task_is_enough_only_for_a_clean_fix() -> None:
    assert clear(failing(CAP, n=6), passing(3)), "the cap failed in every attempt and passed in every replay"
    assert not clear(failing(CAP, n=6), passing(2) + failing(CAP)), "it still failed once"
    assert not clear(failing(CAP, n=6), passing(2) + failing(FLOOR)), "a check that passed before now fails"
    assert not clear(failing(CAP, n=2) + passing(4), passing(3)), "a check that failed now and then is no clear fix"
    assert not clear(failing(CAP, n=6), []) and not clear(passing(6), passing(3)), "nothing fixed"
    assert clear(failing(CAP, FLOOR, n=6), failing(FLOOR, n=3)), "the floor failed as often before"


def test_a_clean_fix_costs_one_replay_per_task_and_a_breakage_the_full_replays(docs: DocumentSet) -> None:
    refs = validate_check({"op": "contains", "arg": "Refs:"})
    tasks = [
        TaskRecord(
            id=f"commit-{i}",
            intent=f"Write the commit message for change {i}.",
            kind="commit message",
            split="train",
            judge={"kind": "rule", "checks": [refs]},
        )
        for i in range(3)
    ]
    refs_rule = 'When working on a commit message task, always include "Refs:" in the response.'

    def replays(spec: str, rule: str, task_list: list[TaskRecord]) -> int:
        backend, target, optimizer = clients(spec)
        attempts = run_attempts(target, task_list, docs, range(4))
        edit = Edit(target="skill", op="add", content=rule, evidence=[t.id for t in task_list])
        backend.requests.clear()
        out = look_ahead(target, optimizer, [edit], task_list, attempts, docs)
        assert out.replays == sum(r.purpose == "attempt" for r in backend.requests)
        return out.replays

    assert replays("sim:follow=1,base=0,correct=1,harmful=0,seed=3", refs_rule, tasks) == 3, "a clean fix"
    verbose = "sim:follow=1,base=0,correct=1,harmful=0,verbose=700,seed=3"
    assert replays(verbose, CAP_RULE, [changelog(i) for i in range(3)]) == 6, "it fixes the cap and breaks the floor"


def test_rules_are_replayed_only_as_far_as_the_slots_need(docs: DocumentSet) -> None:
    """With screening, the rules ranked below the slots' replayed fixes are never replayed, and
    the slots are those a replay of every rule gives."""
    backend, target, optimizer = clients("sim:follow=1,base=0,correct=1,harmful=0,verbose=700,seed=3")
    tasks = [changelog(i) for i in range(3)]
    attempts = run_attempts(target, tasks, docs, range(4))
    nothing = "When working on a changelog entry task, use British spelling."
    below = "When working on a changelog entry task, end with a blank line."
    edits = [
        Edit(target="skill", op="add", content=rule, evidence=[t.id for t in tasks])
        for rule in (nothing, CAP_RULE, below)
    ]

    def run(slots: int | None):
        backend.requests.clear()
        out = look_ahead(target, optimizer, edits, tasks, attempts, docs, slots=slots)
        replayed = {r.payload["documents"] for r in backend.requests if r.purpose == "attempt"}
        return out, out.slots(1)[0], replayed

    everything, chosen, _ = run(None)
    lazy, lazy_chosen, _ = run(1)
    assert everything.replayed == {0, 1, 2} and lazy.replayed == {0, 1}, "the rule below the slot is not replayed"
    assert [e.content for e in lazy_chosen] == [e.content for e in chosen]
    assert chosen[0].content.startswith(CAP_RULE[:40]), "the rule that fixed something takes the slot"
    assert lazy.replays < everything.replays
