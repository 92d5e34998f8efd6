"""The simulator's honesty knobs (leak, verbose, overload, conflict) and how it reads scopes and
superseding rules. Statistical tests are seeded, so each outcome is deterministic, and each bound
is one a wrong simulator would miss."""

from __future__ import annotations

import json

import pytest

from skillopt_sleep.checks import judges
from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.sim import SimBackend, SimKnobs
from skillopt_sleep.backends.sim.reading import content_words, parse_documents, rule_count, scope_applies
from skillopt_sleep.documents.managed_block import END, START

N = 300
COMMIT = "Write the commit message for the retry fix."
CHANGELOG = "Write the changelog entry for the retry fix."
REFS = 'Always include "Refs: ACME-1" in the response.'
NO_TOOLS = "Do NOT look anything up, search, or use any tools."
SEARCH = {"op": "tool_called", "arg": "WebSearch"}


def sim(**knobs) -> SimBackend:
    return SimBackend(SimKnobs(**knobs))


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
    backend: SimBackend, checks: list[dict], documents: str, intent: str = COMMIT, n: int = N, **task
) -> list[tuple[str, list[str]]]:
    out = []
    for s in range(n):
        c = backend.complete(request(checks, documents, intent, s, **task))
        assert c.ok
        out.append((c.text, c.tools_called))
    return out


def pass_rate(
    backend: SimBackend, checks: list[dict], documents: str, intent: str = COMMIT, n: int = N, **task
) -> float:
    valid = [judges.validate_check(c) for c in checks]
    got = responses(backend, checks, documents, intent, n, **task)
    return sum(judges.score_rule(valid, text, tools).hard for text, tools in got) / n


# -- knobs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "knobs", [{"leak": 1.5}, {"leak": -0.1}, {"overload": 2}, {"conflict": -1}, {"verbose": -5}, {"free_rules": -1}]
)
def test_honesty_knobs_are_validated(knobs):
    with pytest.raises(ValueError):
        SimKnobs(**knobs)


def test_honesty_knobs_default_off_and_the_id_names_only_those_on():
    assert SimKnobs().honesty() == {}
    assert SimBackend().id == "sim(follow=0.9,base=0.15,correct=0.6,harmful=0.2,seed=0)"
    backend = make_backend("sim:leak=0.5,verbose=600,overload=0.02,free_rules=4,conflict=0.3")
    assert backend.knobs.honesty() == {"leak": 0.5, "verbose": 600, "overload": 0.02, "free_rules": 4, "conflict": 0.3}
    assert backend.id.endswith(",leak=0.5,verbose=600,overload=0.02,free_rules=4,conflict=0.3)")
    assert make_backend("sim:leak=off").knobs.leak is None


# -- scope ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scope", "text", "applies"),
    [
        ("writing a commit message", COMMIT, True),
        ("writing a commit message", "Draft commit messages for these three changes.", True),
        ("writing a commit message", CHANGELOG, False),
        ("working on a release notes task", "Prepare the release notes for 2.1.", True),
        ("working on a release notes task", "Prepare the notes from today's meeting.", False),
        ("working on any task", CHANGELOG, True),  # no content word: applies everywhere
    ],
)
def test_scope_applies_by_content_word_overlap(scope: str, text: str, applies: bool):
    assert scope_applies(scope, text) is applies


def test_content_words_drop_function_and_generic_work_words():
    assert content_words("When writing a commit message") == {"commit", "messag"}


def test_a_scoped_rule_covers_only_tasks_whose_text_is_in_scope():
    check = {"op": "contains", "arg": "Refs: ACME-"}
    rule = learned('When writing a commit message, always include "Refs: ACME-" in the response.')
    backend = sim(follow=0.9, base=0.1, seed=3)
    assert 0.84 < pass_rate(backend, [check], rule, COMMIT) < 0.96
    assert pass_rate(backend, [check], rule, CHANGELOG) < 0.16


def test_scope_reads_the_task_text_never_the_engine_labels():
    check = {"op": "contains", "arg": "Refs: ACME-"}
    rule = learned('When writing a commit message, always include "Refs: ACME-" in the response.')
    backend = sim(follow=1.0, base=0.0, seed=3)
    labels = {"kind": "commit message", "skill_hint": "commit message", "tags": ["commit message"]}
    assert pass_rate(backend, [check], rule, CHANGELOG, n=50, **labels) == 0.0
    assert (
        pass_rate(
            backend,
            [check],
            rule,
            "Fix the flaky test.",
            n=50,
            context_excerpt="the commit message must name the ticket",
        )
        == 1.0
    )


# -- leak ----------------------------------------------------------------------------------------


def test_an_unscoped_include_rule_leaks_into_other_tasks_with_probability_leak():
    forbids = [{"op": "not_contains", "arg": "Refs:"}]
    documents = 'When writing a changelog entry, never include "Refs:".\n' + learned(REFS)
    assert pass_rate(sim(follow=1.0, leak=0.0, seed=1), forbids, documents, CHANGELOG) == 1.0
    rate = pass_rate(sim(follow=1.0, leak=0.4, seed=1), forbids, documents, CHANGELOG)
    assert 0.52 < rate < 0.68, rate  # 1 - leak
    texts = [t for t, _ in responses(sim(follow=1.0, leak=0.4, seed=2), [], learned(REFS), CHANGELOG)]
    assert 0.32 < sum("Refs: ACME-1" in t for t in texts) / N < 0.48


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


def test_effective_follow_formula():
    knobs = SimKnobs(follow=0.9, overload=0.05, free_rules=8)
    assert knobs.effective_follow(8) == pytest.approx(0.9)
    assert knobs.effective_follow(12) == pytest.approx(0.9 * 0.95**4)


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
