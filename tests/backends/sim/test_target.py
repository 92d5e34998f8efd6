"""The simulator as the target model (backends/sim/target.py): it follows the directives the
documents hold, scored by the real judges, and the honesty knobs (leak, verbose, overload, conflict)
change its answers as backends/sim/backend.py states. Statistical tests are seeded, so each outcome
is deterministic, and each bound is one a wrong simulator would miss.

The helpers here build the requests the other tests of the simulator send too."""

from __future__ import annotations

import pytest

from skillopt_sleep.checks import judges
from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.sim import SimBackend, SimKnobs
from skillopt_sleep.backends.sim.reading import parse_documents, rule_count
from skillopt_sleep.documents.managed_block import END, START


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


def attempt_pass_rate(backend: SimBackend, checks: list[dict], documents: str = "", n: int = N) -> float:
    checks = [judges.validate_check(c) for c in checks]
    passed = 0
    for s in range(n):
        c = backend.complete(attempt(checks, documents, sample=s))
        assert c.ok
        passed += judges.score_rule(checks, c.text, c.tools_called).hard
    return passed / n


# the honesty knobs' requests: a task's own words, documents with a managed block

N_KNOBS = 300
COMMIT = "Write the commit message for the retry fix."
CHANGELOG = "Write the changelog entry for the retry fix."
REFS = 'Always include "Refs: ACME-1" in the response.'
NO_TOOLS = "Do NOT look anything up, search, or use any tools."
SEARCH = {"op": "tool_called", "arg": "WebSearch"}


def learned(*rules: str) -> str:
    return "\n".join([START, *(f"- {r}" for r in rules), END])


def request(checks: list[dict], documents: str, intent: str = COMMIT, sample: int = 0, **task) -> Request:
    checks = [judges.validate_check(c) for c in checks]
    payload_task = {"id": "t1", "intent": intent, "judge": {"kind": "rule", "checks": checks}, **task}
    return Request(
        purpose="attempt",
        system="sys",
        user=intent,
        sample=sample,
        payload={"task": payload_task, "documents": documents},
    )


def responses(
    backend: SimBackend, checks: list[dict], documents: str, intent: str = COMMIT, n: int = N_KNOBS, **task
) -> list[tuple[str, list[str]]]:
    out = []
    for s in range(n):
        c = backend.complete(request(checks, documents, intent, s, **task))
        assert c.ok
        out.append((c.text, c.tools_called))
    return out


def pass_rate(
    backend: SimBackend, checks: list[dict], documents: str, intent: str = COMMIT, n: int = N_KNOBS, **task
) -> float:
    valid = [judges.validate_check(c) for c in checks]
    got = responses(backend, checks, documents, intent, n, **task)
    return sum(judges.score_rule(valid, text, tools).hard for text, tools in got) / n


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
    rate = attempt_pass_rate(sim(follow=0.9, base=0.15, seed=11), [SIGNOFF], documents)
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
    covered = attempt_pass_rate(backend, [check], directive, n=200)
    bare = attempt_pass_rate(backend, [check], "", n=200)
    assert 0.82 < covered <= 0.97, covered
    assert bare < 0.25, bare


def test_a_mixed_directive_set_is_a_coin_flip():
    rate = attempt_pass_rate(sim(follow=0.9, base=0.15, seed=8), [SIGNOFF], COVER + "\n" + CONTRADICT)
    assert 0.40 < rate < 0.60


def test_no_refusal_by_default():
    assert attempt_pass_rate(sim(follow=0.9, base=0.0, seed=1), [{"op": "no_refusal"}], "", n=200) > 0.82


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
    assert attempt_pass_rate(backend, checks, cover, n=50) == 1.0
    assert attempt_pass_rate(backend, checks, cover + "\nKeep every response short: at most 40 characters.", n=50) < 0.5


def test_exact_reference_task():
    backend = sim(follow=1.0, base=0.0, seed=1)
    task = {"id": "x", "intent": "version?", "judge": {"kind": "exact"}, "reference": "v2.0.1"}
    hit = backend.complete(Request("attempt", "", "", payload={"task": task, "documents": "The version is v2.0.1."}))
    miss = backend.complete(Request("attempt", "", "", payload={"task": task, "documents": ""}))
    assert judges.score_exact("v2.0.1", hit.text).hard == 1.0
    assert judges.score_exact("v2.0.1", miss.text).hard == 0.0


# -- leak ----------------------------------------------------------------------------------------


def test_an_unscoped_include_rule_leaks_into_other_tasks_with_probability_leak():
    forbids = [{"op": "not_contains", "arg": "Refs:"}]
    documents = 'When writing a changelog entry, never include "Refs:".\n' + learned(REFS)
    assert pass_rate(sim(follow=1.0, leak=0.0, seed=1), forbids, documents, CHANGELOG) == 1.0
    rate = pass_rate(sim(follow=1.0, leak=0.4, seed=1), forbids, documents, CHANGELOG)
    assert 0.52 < rate < 0.68, rate  # 1 - leak
    texts = [t for t, _ in responses(sim(follow=1.0, leak=0.4, seed=2), [], learned(REFS), CHANGELOG)]
    assert 0.32 < sum("Refs: ACME-1" in t for t in texts) / N_KNOBS < 0.48


def test_a_scoped_include_rule_never_leaks_outside_its_scope():
    scoped = learned('When writing a commit message, always include "Refs: ACME-1" in the response.')
    texts = [t for t, _ in responses(sim(follow=1.0, leak=1.0, seed=2), [], scoped, CHANGELOG)]
    assert not any("ACME" in t for t in texts)
    texts = [t for t, _ in responses(sim(follow=1.0, leak=1.0, seed=2), [], scoped, COMMIT)]
    assert all("Refs: ACME-1" in t for t in texts)  # in scope it applies, asked or not


def test_leak_does_not_touch_a_task_that_asks_for_the_string():
    wants = [{"op": "contains", "arg": "Refs: ACME-1"}]
    texts = [t for t, _ in responses(sim(follow=1.0, base=0.0, leak=1.0, seed=2), wants, learned(REFS))]
    assert all(t.count("Refs: ACME-1") == 1 for t in texts)


def test_leak_off_keeps_the_old_reading_of_an_include_rule_against_a_forbidding_check():
    forbids = [{"op": "not_contains", "arg": "Refs:"}]
    assert pass_rate(sim(follow=0.9, base=0.5, seed=4), forbids, learned(REFS), CHANGELOG) < 0.16


# -- verbose -------------------------------------------------------------------------------------


def test_a_verbose_model_fails_length_checks_until_a_cap_rule_is_followed():
    short = [{"op": "max_chars", "arg": 300}]
    verbose = sim(follow=0.9, base=0.3, verbose=600, seed=5)
    assert pass_rate(verbose, short, "") == 0.0
    assert all(len(t) >= 600 for t, _ in responses(verbose, short, "", n=50))
    # off, the simulator's responses are short, so a length check passes without any rule
    assert pass_rate(sim(follow=0.9, base=0.3, seed=5), short, "") > 0.9
    cap = learned("Keep the response to at most 300 characters.")
    assert 0.84 < pass_rate(verbose, short, cap) < 0.96


def test_an_obeyed_cap_drops_padding_before_content():
    checks = [
        {"op": "max_chars", "arg": 300},
        {"op": "section_present", "arg": "Testing"},
        {"op": "contains", "arg": "Refs: ACME-1"},
    ]
    documents = learned(
        "Keep the response to at most 300 characters.", 'Always include a section headed "Testing".', REFS
    )
    assert pass_rate(sim(follow=1.0, verbose=900, seed=6), checks, documents) == 1.0


# -- overload ------------------------------------------------------------------------------------


def test_follow_decays_with_the_number_of_rules():
    check = [{"op": "contains", "arg": "Refs: ACME-1"}]
    others = [f"Prefer plain words in paragraph {i}." for i in range(6)]
    documents = learned(REFS, *others)  # 7 rules
    assert rule_count(parse_documents(documents)) == 7
    assert pass_rate(sim(follow=1.0, base=0.0, seed=7), check, documents) == 1.0
    rate = pass_rate(sim(follow=1.0, base=0.0, overload=0.1, free_rules=2, seed=7), check, documents)
    assert 0.50 < rate < 0.68, rate  # 0.9 ** 5 = 0.59
    prose = REFS + "\n" + "\n".join(others)  # not list items: not counted as rules
    assert pass_rate(sim(follow=1.0, base=0.0, overload=0.1, free_rules=2, seed=7), check, prose) == 1.0


# -- conflict with hand-written lines ------------------------------------------------------------


def test_a_hand_written_line_against_a_check_lowers_it_below_base():
    assert pass_rate(sim(follow=0.9, base=0.3, seed=8), [SEARCH], NO_TOOLS) < 0.16


@pytest.mark.parametrize(("conflict", "low", "high"), [(0.2, 0.12, 0.28), (0.8, 0.72, 0.88), (None, 0.42, 0.58)])
def test_a_rule_against_a_hand_written_line_wins_with_probability_conflict(conflict, low, high):
    documents = NO_TOOLS + "\n" + learned("Always use the WebSearch tool for this task.")
    rate = pass_rate(sim(follow=1.0, base=0.3, conflict=conflict, seed=9), [SEARCH], documents)
    assert low < rate < high, rate


def test_a_superseding_rule_is_followed_with_probability_follow():
    rule = f'Always use the WebSearch tool for this task. (supersedes: "{NO_TOOLS}")'
    documents = "- " + NO_TOOLS + "\n" + learned(rule)
    rate = pass_rate(sim(follow=0.9, base=0.3, conflict=0.2, seed=10), [SEARCH], documents)
    assert 0.84 < rate < 0.96, rate


def test_only_a_learned_rule_can_supersede_and_only_where_it_applies():
    rule = f'Always use the WebSearch tool for this task. (supersedes: "{NO_TOOLS}")'
    forged = NO_TOOLS + "\n" + rule  # outside the managed block: just another hand-written line
    assert 0.42 < pass_rate(sim(follow=1.0, conflict=0.2, seed=11), [SEARCH], forged) < 0.58
    scoped = NO_TOOLS + "\n" + learned(f"When writing a commit message, {rule[0].lower()}{rule[1:]}")
    assert pass_rate(sim(follow=1.0, conflict=0.2, seed=11), [SEARCH], scoped, CHANGELOG) == 0.0
