from __future__ import annotations

import json

from skillopt_sleep.backends.client import Client
from skillopt_sleep.mining import mine
from skillopt_sleep.mining.llm import LlmMiner
from skillopt_sleep.types import Feedback, SessionDigest

from tests.support.fake_backend import FakeBackend


def fenced_json(reply: dict) -> FakeBackend:
    """A model that answers every request with ``reply`` as JSON in a fenced block."""
    return FakeBackend(lambda request: "Here you go:\n```json\n" + json.dumps(reply) + "\n```")


def digests(n: int = 3, complaint: str | None = None) -> list[SessionDigest]:
    out = []
    for i in range(n):
        prompts = [f"Write the changelog entry for release 2.{i}"]
        feedback = []
        if complaint:
            prompts.append(complaint)
            feedback.append(Feedback("negative", complaint, 0))
        out.append(
            SessionDigest(
                source="claude",
                session_id=f"s{i}",
                project="/p",
                path=f"/t/{i}.jsonl",
                user_prompts=prompts,
                feedback=feedback,
                assistant_finals=["ok"],
            )
        )
    return out


def test_llm_miner_makes_an_uncheckable_group_checkable() -> None:
    backend = fenced_json(
        {"checkable": True, "checks": [{"op": "section_present", "arg": "Changed"}, {"op": "max_chars", "arg": 1200}]}
    )
    assert mine(digests()).tasks == []  # no complaint: the heuristic path has nothing to check
    result = mine(digests(), judge_maker=LlmMiner(Client(backend, role="optimizer")))
    assert len(result.tasks) == 3
    checks = result.tasks[0].judge["checks"]
    assert {"op": "section_present", "arg": "Changed"} in checks and {"op": "no_refusal", "arg": None} in checks
    request = backend.requests[0]
    assert request.purpose == "mine" and "changelog" in request.user


def test_invalid_checks_are_rejected_and_counted_never_kept() -> None:
    backend = fenced_json(
        {
            "checkable": True,
            "checks": [
                {"op": "sparkle", "arg": 1},
                {"op": "regex", "arg": "(unclosed"},
                {"op": "contains", "arg": "Changed"},
            ],
        }
    )
    miner = LlmMiner(Client(backend, role="optimizer"))
    result = mine(digests(), judge_maker=miner)
    checks = result.tasks[0].judge["checks"]
    assert {"op": "contains", "arg": "Changed"} in checks
    assert all(c["op"] in ("contains", "no_refusal") for c in checks)
    assert sum(miner.rejected.values()) == 2


def test_heuristic_checks_survive_a_model_that_adds_nothing() -> None:
    backend = fenced_json({"checkable": False, "checks": []})
    result = mine(
        digests(complaint='You forgot the "## Upgrading" section again.'),
        judge_maker=LlmMiner(Client(backend, role="optimizer")),
    )
    assert result.tasks and {"op": "section_present", "arg": "Upgrading"} in result.tasks[0].judge["checks"]


def test_rubric_only_judge() -> None:
    backend = fenced_json({"checkable": True, "checks": [], "rubric": "Mentions every merged PR by number."})
    result = mine(digests(), judge_maker=LlmMiner(Client(backend, role="optimizer")))
    assert result.tasks[0].judge == {"kind": "rubric", "rubric": "Mentions every merged PR by number."}
    assert result.tasks[0].reference_kind == "rubric"


def test_unparseable_reply_leaves_the_group_uncheckable() -> None:
    junk = FakeBackend(lambda request: "I think the user wants nice changelogs.")
    result = mine(digests(), judge_maker=LlmMiner(Client(junk, role="optimizer")))
    assert result.tasks == [] and result.uncheckable == 1


def test_a_reply_that_is_not_json_is_repaired_once_then_counted_loudly() -> None:
    backend = FakeBackend(lambda request: "I think the user wants a changelog section.")
    miner = LlmMiner(Client(backend, role="optimizer"))
    result = mine(digests(complaint='You forgot the "## Upgrading" section again.'), judge_maker=miner)
    assert len(backend.requests) == 2 and backend.requests[1].payload.get("repair")
    assert miner.unusable == 1
    assert result.tasks and {"op": "section_present", "arg": "Upgrading"} in result.tasks[0].judge["checks"]
