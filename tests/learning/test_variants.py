from __future__ import annotations

import json

from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.backends.sim import SimBackend, SimKnobs
from skillopt_sleep.store.rule_evidence import task_content_key
from skillopt_sleep.types import TaskRecord
from skillopt_sleep.learning.variants import dream_variants, variants_from_reply

from tests.support.fake_backend import FakeBackend, forward, script

CHECKS = {"kind": "rule", "checks": [{"op": "contains", "arg": "Refs: ACME-"}, {"op": "max_chars", "arg": 400}]}


def client(backend) -> Client:
    return Client(backend, retry=RetryPolicy(attempts=1, sleep=lambda s: None), cache=False, role="optimizer")


def tasks() -> list[TaskRecord]:
    return [
        TaskRecord(
            id="c1",
            intent="Write the commit message for change 12",
            split="train",
            judge=CHECKS,
            system="Plain text, one subject line.",
            skill_hint="commit",
            tags=["commit"],
        ),
        TaskRecord(id="c2", intent="Write the commit message for change 40", split="val", judge=CHECKS),
        TaskRecord(id="c3", intent="Write the commit message for change 7", split="test", judge=CHECKS),
        TaskRecord(
            id="x1",
            intent="What does this regex match?",
            split="train",
            reference_kind="exact",
            reference="digits",
            judge={"kind": "exact"},
        ),
    ]


def test_only_real_train_tasks_are_varied_and_checks_carry_over() -> None:
    backend = FakeBackend(forward(SimBackend(SimKnobs(seed=4))))
    got = dream_variants(client(backend), tasks(), 2)
    asked = [r.payload["task"]["id"] for r in backend.requests]
    assert asked == ["c1"], "val, test and exact-reference tasks are never sent to be varied"
    assert all(r.purpose == "vary" for r in backend.requests)
    assert [t.id for t in got.tasks] == ["c1~dream1", "c1~dream2"]
    for variant in got.tasks:
        assert variant.split == "train" and variant.origin == "dream" and variant.derived_from == "c1"
        assert variant.judge == CHECKS and variant.system == "Plain text, one subject line."
        assert variant.skill_hint == "commit" and "dream" in variant.tags
        assert variant.intent != "Write the commit message for change 12"
    assert got.calls == 1


def test_a_variant_that_copies_one_of_tonights_tasks_is_dropped() -> None:
    reply = {
        "variants": [
            {"intent": "Write the commit message for change 40"},  # the val task
            {"intent": "Write the commit message for change 12"},  # its source
            {"intent": "   "},
            {"intent": "Write the commit message for change 99"},
        ]
    }
    got = dream_variants(client(FakeBackend(lambda r: reply)), tasks(), 3)
    assert [t.intent for t in got.tasks] == ["Write the commit message for change 99"]
    assert got.dropped == 3
    assert not {task_content_key(t) for t in got.tasks} & {task_content_key(t) for t in tasks()}


def test_at_most_factor_variants_per_task() -> None:
    reply = {"variants": [{"intent": f"Write the commit message for change {n}"} for n in range(100, 110)]}
    got = dream_variants(client(FakeBackend(lambda r: reply)), tasks(), 2)
    assert len(got.tasks) == 2


def test_prose_is_repaired_once_then_reported() -> None:
    good = {"variants": [{"intent": "Write the commit message for change 77"}]}
    repaired = FakeBackend(script("Sure! Here are some ideas.", good))
    got = dream_variants(client(repaired), tasks(), 1)
    assert [t.intent for t in got.tasks] == ["Write the commit message for change 77"]
    assert got.calls == 2 and repaired.requests[1].payload.get("repair") is True

    broken = client(FakeBackend(lambda r: "no JSON here"))
    got = dream_variants(broken, tasks(), 1)
    assert got.tasks == [] and got.calls == 2
    assert got.unusable and "not JSON after one repair" in got.unusable[0]
    assert any(k.startswith("vary:") for k in broken.stats.left_out)


def test_secrets_and_escapes_in_a_variant_are_cleaned() -> None:
    secret = "ghp_" + "a1B2" * 9
    reply = {
        "variants": [{"intent": f"Write the commit message \x1b[31mfor token {secret}", "context_excerpt": "diff\x07"}]
    }
    got = dream_variants(client(FakeBackend(lambda r: reply)), tasks(), 1)
    assert secret not in got.tasks[0].intent and "\x1b" not in got.tasks[0].intent
    assert "\x07" not in got.tasks[0].context_excerpt


def test_factor_zero_makes_no_call() -> None:
    backend = FakeBackend(lambda r: {"variants": []})
    assert dream_variants(client(backend), tasks(), 0).tasks == []
    assert backend.requests == []


def test_reply_parsing() -> None:
    assert variants_from_reply(json.dumps({"variants": [{"intent": "a"}, "junk", {"intent": 3}]})) == [
        {"intent": "a", "context_excerpt": ""}
    ]
    for bad in ("[]", "{}", "prose"):
        try:
            variants_from_reply(bad)
        except ValueError:
            continue
        raise AssertionError(bad)


def test_the_simulator_answers_a_variant_as_it_answers_its_source() -> None:
    """The sim's variants are neither easier nor harder: over many draws a variant passes its
    checks as often as its source does (the target reads checks and documents, not wording)."""
    from skillopt_sleep.replay.dream import attempt_request
    from skillopt_sleep.documents.managed_block import DocumentSet, Document
    from skillopt_sleep.checks.judges import score
    from pathlib import Path

    sim = SimBackend(SimKnobs(base=0.3, seed=1))
    source = tasks()[0]
    variants = dream_variants(client(sim), [source], 5).tasks
    docs = DocumentSet(Document("skill", Path("SKILL.md"), None, ""), Document("memory", Path("CLAUDE.md"), None, ""))

    def pass_rate(task: TaskRecord) -> float:
        results = [
            score(task.judge, task.reference, sim.complete(attempt_request(task, docs, s)).text) for s in range(300)
        ]
        return sum(r.soft for r in results) / len(results)

    base = pass_rate(source)
    for variant in variants:
        assert abs(pass_rate(variant) - base) < 0.08


def test_kinds_seen_often_enough_and_recalled_tasks_are_not_varied() -> None:
    many = [
        TaskRecord(
            id=f"n{i}", intent=f"Draft release notes for version {i}", split="train", judge=CHECKS, skill_hint="notes"
        )
        for i in range(4)
    ]
    recalled = TaskRecord(
        id="recalled-c0",
        intent="Write the commit message for change 3",
        split="train",
        judge=CHECKS,
        skill_hint="commit",
        tags=["recalled"],
    )
    backend = FakeBackend(lambda r: {"variants": [{"intent": r.payload["task"]["intent"] + " again"}]})
    got = dream_variants(client(backend), tasks() + many + [recalled], 1)
    assert [r.payload["task"]["id"] for r in backend.requests] == ["c1"]
    assert [t.derived_from for t in got.tasks] == ["c1"]
    # the recalled commit task counts towards its kind: with enough=2, commit has enough
    backend.requests.clear()
    assert dream_variants(client(backend), tasks() + [recalled], 1, enough=2).tasks == []
