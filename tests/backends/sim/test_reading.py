"""How the simulator reads documents (backends/sim/reading.py), scope: a scoped line applies to a
task only when more than half of the scope's content words are in the task's own text, never an
engine label."""

from __future__ import annotations

import pytest

from tests.backends.sim.test_target import CHANGELOG, COMMIT, learned, pass_rate, sim

from skillopt_sleep.backends.sim.reading import content_words, scope_applies


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
