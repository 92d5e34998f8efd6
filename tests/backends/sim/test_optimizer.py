"""The simulator as the optimizer (backends/sim/optimizer.py): it turns the failed checks it is
shown into covering rules at rate ``correct`` and harmful ones at rate ``harmful``, reads only the
payload, names a hand-written line a rule supersedes, and as a ranker orders candidates by the
failures they address, with noise. Statistical tests are seeded."""

from __future__ import annotations

import json
import random

from skillopt_sleep.checks import judges
from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.sim import SimBackend, SimKnobs, coverage, covering_rule, harmful_rule

from tests.backends.sim.test_target import N, NO_TOOLS, SEARCH, SIGNOFF, sim


def reflect_request(
    checks: list[dict], sample: int, current: list[str] = (), max_edits: int = 4, user: str = "evidence"
) -> Request:
    payload = {
        "mode": "failure",
        "max_edits": max_edits,
        "tasks": [
            {
                "task_id": "t1",
                "intent": "write the commit message",
                "fail_reasons": [judges.describe_check(c) for c in checks if isinstance(c, dict)],
                "failed_checks": checks,
            }
        ],
        "current_rules": {"skill": list(current), "memory": []},
    }
    return Request("reflect", "sys", user, sample=sample, payload=payload)


def proposed(backend: SimBackend, request: Request) -> list[dict]:
    c = backend.complete(request)
    assert c.ok
    return json.loads(c.text)["edits"]


def test_optimizer_rates():
    backend = sim(correct=0.6, harmful=0.2, seed=3)
    good = covering_rule(SIGNOFF)
    n_good = n_harm = 0
    for s in range(N):
        edits = proposed(backend, reflect_request([SIGNOFF], s))
        contents = [e["content"] for e in edits]
        n_good += good in contents
        n_harm += any(c != good for c in contents)
        for e in edits:
            assert e["evidence"] == ["t1"] and e["op"] == "add" and e["target"] in ("skill", "memory")
    assert 0.52 < n_good / N < 0.68
    assert 0.14 < n_harm / N < 0.26


def test_a_rule_the_documents_hold_for_the_failing_work_is_not_proposed_again():
    backend = sim(correct=1.0, harmful=0.0, seed=3)
    good = covering_rule(SIGNOFF)
    body = good[:1].lower() + good[1:]
    for current, again in [
        ([good], False),
        ([f"When writing a commit message, {body}"], False),
        ([f"When writing release notes, {body}"], True),
        ([], True),
    ]:
        contents = [e["content"] for e in proposed(backend, reflect_request([SIGNOFF], 0, current=current))]
        assert (good in contents) is again, current


def test_covering_rules_cover_and_harmful_rules_hurt():
    for raw in [
        SIGNOFF,
        {"op": "not_contains", "arg": "WIP"},
        {"op": "section_present", "arg": "Testing"},
        {"op": "section_contains", "arg": "Summary::retries"},
        {"op": "max_chars", "arg": 72},
        {"op": "min_chars", "arg": 20},
        {"op": "regex", "arg": r"^feat: "},
        {"op": "tool_called", "arg": "Bash"},
    ]:
        check = judges.validate_check(raw)
        rule = covering_rule(check)
        assert rule is not None
        assert coverage(check, [rule]) == "covered", (raw, rule)
    rng = random.Random(0)
    inverted = {harmful_rule(SIGNOFF, rng) for _ in range(20)}
    assert 'Never include "Signed-off-by:" in the response; keep it out.' in inverted
    assert coverage(SIGNOFF, ['Never include "Signed-off-by:" in the response; keep it out.']) == "conflict"


def test_optimizer_reads_only_the_payload():
    backend = sim(correct=1.0, harmful=1.0, seed=0)
    reason = judges.describe_check(SIGNOFF)
    for s in range(20):
        # the failed checks as data, never the judges' wording: reasons alone give nothing
        wording_only = reflect_request([SIGNOFF], s)
        wording_only.payload["tasks"][0].pop("failed_checks")
        assert proposed(backend, wording_only) == []
        request = Request(
            "reflect",
            "sys",
            f"Failed checks: {reason}",
            sample=s,
            payload={"mode": "failure", "tasks": [], "current_rules": {}, "max_edits": 4},
        )
        assert proposed(backend, request) == []
        assert proposed(backend, Request("reflect", "sys", f"Failed checks: {reason}", sample=s)) == []


def test_optimizer_skips_rules_already_present():
    good = covering_rule(SIGNOFF)
    backend = sim(correct=1.0, harmful=0.0, seed=0)
    assert [e["content"] for e in proposed(backend, reflect_request([SIGNOFF], 0))] == [good]
    assert proposed(backend, reflect_request([SIGNOFF], 0, current=[good.upper()])) == []


def test_optimizer_respects_max_edits():
    checks = [judges.validate_check({"op": "contains", "arg": f"token{i}"}) for i in range(6)]
    backend = sim(correct=1.0, harmful=1.0, seed=0)
    assert len(proposed(backend, reflect_request(checks, 0, max_edits=3))) == 3
    assert len(proposed(backend, reflect_request(checks, 0, max_edits=20))) > 3  # the limit did the cutting


def test_optimizer_ignores_checks_it_has_no_rule_for():
    backend = sim(correct=1.0, harmful=1.0, seed=0)
    unknown = [{"op": "no_refusal", "arg": None}, {"op": "is_helpful", "arg": True}, "must not refuse"]
    assert proposed(backend, reflect_request(unknown, 0)) == []


# -- the optimizer names the line it supersedes --------------------------------------------------


def test_reflect_names_a_conflicting_hand_written_line_in_supersedes():
    check = judges.validate_check(SEARCH)
    payload = {
        "mode": "failure",
        "max_edits": 4,
        "current_rules": {"skill": [], "memory": []},
        "tasks": [{"task_id": "t1", "intent": "look up the latest release", "failed_checks": [check]}],
    }
    backend = sim(correct=1.0, harmful=0.0)
    plain = json.loads(backend.complete(Request("reflect", "s", "u", payload=payload)).text)["edits"]
    assert [e.get("supersedes") for e in plain] == [None]
    payload["documents"] = {
        "skill": {"hand_written": ["# Research", "- " + NO_TOOLS], "whole_skill": False},
        "memory": {"hand_written": [], "whole_skill": False},
    }
    edits = json.loads(backend.complete(Request("reflect", "s", "u", payload=payload)).text)["edits"]
    assert [e.get("supersedes") for e in edits] == ["- " + NO_TOOLS]


# -- the simulator as a ranker -------------------------------------------------------------------


FAILING = [
    {"task_id": "a", "failed_checks": [{"op": "contains", "arg": "Refs:"}]},
    {"task_id": "b", "failed_checks": [{"op": "contains", "arg": "Refs:"}]},
    {"task_id": "c", "failed_checks": [{"op": "section_present", "arg": "Testing"}]},
]


CANDIDATES = [
    "Keep every response short: at most 40 characters.",  # addresses nothing
    'Never include "Refs:" in the response.',  # contradicts two failures
    'Always include a section headed "Testing".',  # addresses one
    'Always include "Refs:" in the response.',
]  # addresses two


def order(knobs: SimKnobs, salt: str) -> list[int]:
    request = Request(
        purpose="rank",
        system="s",
        user=f"rank {salt}",
        payload={"candidates": [{"content": c} for c in CANDIDATES], "tasks": FAILING, "keep": 2},
    )
    return json.loads(SimBackend(knobs).complete(request).text)["order"]


def test_without_misjudgement_the_rules_addressing_most_failures_come_first():
    for salt in range(40):
        assert order(SimKnobs(harmful=0.0, seed=salt), str(salt)) == [4, 3, 1, 2]


def test_misjudgement_puts_another_candidate_first_at_about_the_harmful_rate():
    firsts = [order(SimKnobs(harmful=0.5, seed=salt), str(salt))[0] for salt in range(400)]
    wrong = sum(f != 4 for f in firsts) / len(firsts)
    # a misjudged pick is uniform over 4 candidates, so 0.5 * 3/4 of the time another comes first
    assert 0.28 < wrong < 0.47
    assert all(sorted(order(SimKnobs(harmful=0.5, seed=s), "x")) == [1, 2, 3, 4] for s in range(20))
