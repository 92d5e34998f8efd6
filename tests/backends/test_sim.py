from __future__ import annotations

import json
import random
import re

import pytest

from skillopt_sleep.checks import judges
from skillopt_sleep.backends import BackendSpecError, make_backend
from skillopt_sleep.backends.base import ProviderError, Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.backends.sim import (
    SimBackend,
    SimKnobs,
    coverage,
    covering_rule,
    from_options,
    harmful_rule,
    regex_example,
)

N = 400  # samples for the statistical tests; seeded, so the outcome is deterministic
SIGNOFF = {"op": "contains", "arg": "Signed-off-by:"}


def sim(**knobs) -> SimBackend:
    return SimBackend(SimKnobs(**knobs))


def attempt(checks: list[dict], documents: str = "", sample: int = 0, task_id: str = "t1") -> Request:
    checks = [judges.validate_check(c) for c in checks]
    task = {"id": task_id, "intent": "write the commit message", "judge": {"kind": "rule", "checks": checks}}
    return Request(
        purpose="attempt",
        system="sys",
        user="write the commit message",
        sample=sample,
        payload={"task": task, "documents": documents},
    )


def pass_rate(backend: SimBackend, checks: list[dict], documents: str = "", n: int = N) -> float:
    checks = [judges.validate_check(c) for c in checks]
    passed = 0
    for s in range(n):
        c = backend.complete(attempt(checks, documents, sample=s))
        assert c.ok
        passed += judges.score_rule(checks, c.text, c.tools_called).hard
    return passed / n


# -- knobs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "knobs",
    [{"follow": 1.5}, {"follow": -0.1}, {"base": 2}, {"correct": -1}, {"harmful": 1.01}, {"latency": -1}],
)
def test_knobs_are_validated(knobs):
    with pytest.raises(ValueError):
        SimKnobs(**knobs)


def test_from_options_rejects_unknown_options():
    with pytest.raises(ValueError, match="folow") as info:
        from_options({"folow": 0.9}, None)
    assert "follow" in str(info.value)  # lists the known ones


def test_from_options_coerces_values():
    backend = from_options({"follow": "0.5", "base": 0, "seed": "7", "down": 0}, None)
    assert backend.knobs == SimKnobs(follow=0.5, base=0.0, seed=7, down=False)
    assert "follow=0.5" in backend.id and "seed=7" in backend.id


def test_from_options_rejects_bad_values():
    with pytest.raises(ValueError):
        from_options({"follow": "lots"}, None)
    with pytest.raises(ValueError):
        from_options({"follow": 3}, None)


def test_spec_strings():
    backend = make_backend("sim:follow=0.8,base=0.1,seed=3")
    assert backend.knobs == SimKnobs(follow=0.8, base=0.1, seed=3)
    assert make_backend("sim:down=0").knobs.down is False
    assert make_backend("sim:down=1").knobs.down is True
    with pytest.raises(BackendSpecError, match="bogus"):
        make_backend("sim:bogus=1")
    with pytest.raises(BackendSpecError):
        make_backend("sim:follow=7")


# -- determinism ---------------------------------------------------------------------------------


def test_same_seed_and_sample_give_the_same_response():
    request = attempt([SIGNOFF, {"op": "section_present", "arg": "Testing"}], sample=3)
    a, b = sim(seed=5).complete(request), sim(seed=5).complete(request)
    assert (a.text, a.tools_called) == (b.text, b.tools_called)
    assert a.text


def test_seed_changes_the_draws():
    texts = {sim(seed=seed).complete(attempt([SIGNOFF], sample=0)).text for seed in range(10)}
    assert len(texts) > 1


def test_samples_are_independent_draws():
    backend = sim(follow=0.9, base=0.5, seed=1)
    outcomes = []
    for s in range(N):
        c = backend.complete(attempt([SIGNOFF], sample=s))
        outcomes.append(judges.score_rule([SIGNOFF], c.text).hard)
    rate = sum(outcomes) / N
    assert 0.42 < rate < 0.58
    same_as_next = sum(a == b for a, b in zip(outcomes, outcomes[1:], strict=False)) / (N - 1)
    assert 0.40 < same_as_next < 0.60  # neither copies nor alternation
    assert len({backend.complete(attempt([SIGNOFF], sample=s)).text for s in range(20)}) > 5


def test_documents_change_the_draw_stream():
    a = sim(seed=2).complete(attempt([SIGNOFF], documents="", sample=0)).text
    b = sim(seed=2).complete(attempt([SIGNOFF], documents="Be careful.", sample=0)).text
    c = [sim(seed=2).complete(attempt([SIGNOFF], documents=f"Note {i}.", sample=0)).text for i in range(10)]
    assert len({a, b, *c}) > 1


# -- following directives (scored by the real judges) --------------------------------------------

COVER = 'Always include "Signed-off-by:" in the response.'
CONTRADICT = 'Never include "Signed-off-by:" in the response.'


@pytest.mark.parametrize(
    ("documents", "low", "high"),
    [
        (COVER, 0.84, 0.96),  # follow = 0.9
        ("", 0.09, 0.21),  # base = 0.15
        ("Write clear commit messages.", 0.09, 0.21),  # a directive that does not mention the check
        (CONTRADICT, 0.05, 0.16),  # 1 - follow = 0.1
    ],
)
def test_contains_follows_the_documents(documents: str, low: float, high: float):
    rate = pass_rate(sim(follow=0.9, base=0.15, seed=11), [SIGNOFF], documents)
    assert low < rate < high, rate


@pytest.mark.parametrize(
    ("check", "directive"),
    [
        ({"op": "not_contains", "arg": "WIP"}, 'Never include "WIP" in the response.'),
        ({"op": "section_present", "arg": "Testing"}, 'Always include a section headed "Testing".'),
        ({"op": "section_contains", "arg": "Summary::retries"}, 'In the "Summary" section, always mention "retries".'),
        ({"op": "tool_called", "arg": "Bash"}, "Always use the Bash tool for this task."),
        ({"op": "regex", "arg": r"^JIRA-\d+"}, r"Make the response match the pattern ^JIRA-\d+ on its own line."),
        ({"op": "min_chars", "arg": 500}, "Write at least 500 characters."),
    ],
)
def test_each_op_follows_a_covering_directive(check: dict, directive: str):
    backend = sim(follow=0.9, base=0.15, seed=4)
    covered = pass_rate(backend, [check], directive, n=200)
    bare = pass_rate(backend, [check], "", n=200)
    assert 0.82 < covered <= 0.97, covered
    assert bare < 0.25, bare


def test_a_mixed_directive_set_is_a_coin_flip():
    rate = pass_rate(sim(follow=0.9, base=0.15, seed=8), [SIGNOFF], COVER + "\n" + CONTRADICT)
    assert 0.40 < rate < 0.60


def test_no_refusal_by_default():
    assert pass_rate(sim(follow=0.9, base=0.0, seed=1), [{"op": "no_refusal"}], "", n=200) > 0.82


def test_perfect_follower_satisfies_every_covered_check():
    checks = [
        SIGNOFF,
        {"op": "not_contains", "arg": "WIP"},
        {"op": "section_present", "arg": "Testing"},
        {"op": "section_contains", "arg": "Summary::retries"},
        {"op": "regex", "arg": r"^feat(\(\w+\))?: \w+"},
        {"op": "min_chars", "arg": 40},
        {"op": "max_chars", "arg": 400},
        {"op": "no_refusal"},
        {"op": "tool_called", "arg": "Bash"},
    ]
    documents = "\n".join(
        [
            COVER,
            'Never include "WIP" in the response.',
            'Always include a section headed "Testing".',
            'In the "Summary" section, always mention "retries".',
            r"Make the response match the pattern ^feat(\(\w+\))?: \w+ on its own line.",
            "Write at least 40 characters.",
            "Keep the response to at most 400 characters.",
            "Always use the Bash tool for this task.",
        ]
    )
    backend = sim(follow=1.0, base=0.0, seed=9)
    checks = [judges.validate_check(c) for c in checks]
    for s in range(30):
        c = backend.complete(attempt(checks, documents, sample=s))
        result = judges.score_rule(checks, c.text, c.tools_called)
        assert result.fail_reasons == [], (c.text, result.fail_reasons)
    # and with no documents, everything that needs a directive fails
    for s in range(10):
        c = backend.complete(attempt(checks, "", sample=s))
        failed = set(judges.score_rule(checks, c.text, c.tools_called).fail_reasons)
        assert {judges.describe_check(x) for x in checks[:5]} | {judges.describe_check(checks[8])} <= failed
        assert judges.describe_check(checks[7]) not in failed  # no refusal unprompted


def test_length_cap_directive_truncates():
    backend = sim(follow=0.9, base=0.15, seed=6)
    capped = [
        len(backend.complete(attempt([SIGNOFF], "Keep the response to at most 40 characters.", s)).text)
        for s in range(N)
    ]
    free = [len(backend.complete(attempt([SIGNOFF], "", s)).text) for s in range(N)]
    assert 0.84 < sum(n <= 40 for n in capped) / N < 0.96
    assert sum(n <= 40 for n in free) / N < 0.02


def test_length_cap_can_cost_other_checks():
    # a too-tight cap is the harmful rule the gate must catch: content gets cut off
    checks = [judges.validate_check({"op": "section_present", "arg": "Testing"})]
    backend = sim(follow=1.0, base=0.0, seed=6)
    cover = 'Always include a section headed "Testing".'
    assert pass_rate(backend, checks, cover, n=50) == 1.0
    assert pass_rate(backend, checks, cover + "\nKeep every response short: at most 40 characters.", n=50) < 0.5


def test_exact_reference_task():
    backend = sim(follow=1.0, base=0.0, seed=1)
    task = {"id": "x", "intent": "version?", "judge": {"kind": "exact"}, "reference": "v2.0.1"}
    hit = backend.complete(Request("attempt", "", "", payload={"task": task, "documents": "The version is v2.0.1."}))
    miss = backend.complete(Request("attempt", "", "", payload={"task": task, "documents": ""}))
    assert judges.score_exact("v2.0.1", hit.text).hard == 1.0
    assert judges.score_exact("v2.0.1", miss.text).hard == 0.0


# -- failures ------------------------------------------------------------------------------------


@pytest.mark.parametrize("purpose", ["attempt", "reflect", "judge", "preflight"])
def test_down_returns_an_error_completion(purpose: str):
    c = sim(down=True).complete(Request(purpose, "s", "u", payload={"task": {}, "tasks": []}))
    assert not c.ok and c.error == "server" and c.text == ""


def test_down_through_the_client_raises():
    sleeps = []
    client = Client(sim(down=True), retry=RetryPolicy(attempts=3, sleep=sleeps.append))
    with pytest.raises(ProviderError) as info:
        client.complete(attempt([SIGNOFF]))
    assert info.value.kind == "server" and len(sleeps) == 2


def test_unknown_purpose_is_a_bad_request():
    c = sim().complete(Request("no-such-purpose", "s", "u"))
    assert c.error == "bad_request" and c.text == ""


def test_usage_is_reported():
    c = sim().complete(attempt([SIGNOFF]))
    assert c.usage.input_tokens > 0 and c.usage.output_tokens > 0 and c.model == "sim"


# -- the optimizer -------------------------------------------------------------------------------


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


def test_sim_rubric_judge():
    rubric = 'Mentions "retries" and "backoff".'
    c = sim().complete(Request("judge", "", "", payload={"rubric": rubric, "response": "Adds retries."}))
    assert judges.parse_rubric_reply(c.text)[0] == 0.5


# -- regex_example -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern",
    [
        r"^feat(\(\w+\))?: .+$",
        r"\d{3}-\d{4}",
        r"(fix|feat): [a-z]+",
        r"JIRA-[0-9]+",
        r"^Signed-off-by: .+ <.+@.+>$",
        r"v\d+\.\d+\.\d+",
        r"[A-Z][a-z]{2,5}\s+\S+",
        r"\bcloses #\d+\b",
        r"[^x]y",
    ],
)
def test_regex_example_matches(pattern: str):
    example = regex_example(pattern, random.Random(0))
    assert example is not None
    assert re.search(pattern, example, re.MULTILINE)


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?<=x)y", r"^a(?=b)$"])
def test_regex_example_returns_none_when_unsupported(pattern: str):
    assert regex_example(pattern, random.Random(0)) is None
