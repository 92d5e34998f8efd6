"""A rule against a person's line: it must name the line it contradicts (supersedes), and a
superseding rule must restate what of the line it does not override."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.rules.conflicts import contradiction, dropped
from skillopt_sleep.backends.sim.reading import applicable, parse_documents
from skillopt_sleep.documents.managed_block import END, START, apply_edit, load_documents
from skillopt_sleep.documents.handwritten import split_supersedes
from skillopt_sleep.learning.reflect import reflect
from skillopt_sleep.types import Attempt, TaskRecord

from tests.support.fake_backend import FakeBackend

NO_SEARCH = "Do NOT look anything up, search, or use any tools — just reply directly and concisely from memory."
EXHAUSTIVE = "Be exhaustive and detailed. Write multiple paragraphs."


@pytest.mark.parametrize(
    ("rule", "line", "what"),
    [
        ("Keep every response short: at most 60 characters.", EXHAUSTIVE, "length"),
        ("Write at least 300 words with examples.", "Keep answers brief.", "length"),
        ("Use the search tool before answering.", NO_SEARCH, "tools"),
        ("Do not use any tools for this task.", "Always run the search tool first.", "tools"),
        ('Always include "WIP" in the title.', "Never put WIP in a commit title.", '"wip"'),
        ('Never include "TODO" in the response.', "Always list every TODO left.", '"todo"'),
        ("Keep the response to at most 1200 characters.", "Keep it concise.", None),
        ('Always include "Refs:".', "Write a Refs: trailer.", None),
        ("When writing a brief, include a Key Risks section.", "Write a short brief.", None),
        ("Use the search tool before answering.", "Cite the sources you used.", None),
    ],
)
def test_contradiction(rule: str, line: str, what: str | None):
    assert contradiction(rule, line) == what


def test_a_superseding_rule_must_restate_what_it_keeps():
    assert dropped("Use the search tool before answering.", NO_SEARCH) == [
        ("just reply directly and concisely from memory", "just reply directly and concisely")
    ]
    assert dropped("Use the search tool before answering, then reply directly and concisely.", NO_SEARCH) == []
    assert dropped("Keep it to at most 60 characters.", "Be exhaustive and detailed, and cite sources.") == [
        ("Be exhaustive and detailed, and cite sources", "cite sources")
    ]
    assert dropped("Keep it to at most 60 characters.", EXHAUSTIVE) == []
    # the whole "do not ..., search, or use any tools" is what a tool rule overrides
    assert (
        dropped("Always use the WebSearch tool for this task.", "- Do NOT look anything up, search, or use any tools.")
        == []
    )


TASKS = [
    TaskRecord(
        id="t1",
        intent="answer the question",
        kind="quick answer",
        judge={"kind": "rule", "checks": [{"op": "tool_called", "arg": "search"}]},
    )
]
ATTEMPTS = {
    "t1": [
        Attempt(
            task_id="t1",
            sample=i,
            response="From memory: yes.",
            hard=0.0,
            soft=0.0,
            fail_reasons=['must call the tool "search"'],
        )
        for i in range(2)
    ]
}


def night(tmp_path: Path, memory: str, proposed: dict, reworded: object = None):
    (tmp_path / "CLAUDE.md").write_text(f"# Project\n\n{memory}\n", encoding="utf-8")
    backend = FakeBackend(lambda r: reworded if r.purpose == "reword" else {"edits": [proposed]})
    client = Client(backend, retry=RetryPolicy(attempts=1, sleep=lambda s: None), cache=False, role="optimizer")
    return reflect(client, TASKS, ATTEMPTS, load_documents(tmp_path)), backend


def test_a_rule_that_contradicts_a_line_without_naming_it_is_refused(tmp_path: Path):
    rule = {
        "target": "memory",
        "op": "add",
        "content": "Keep every response short: at most 60 characters.",
        "evidence": ["t1"],
    }
    proposal, _ = night(tmp_path, EXHAUSTIVE, rule)
    assert proposal.edits == []
    [(_, reason)] = proposal.refused
    assert reason.startswith(f'contradicts the hand-written line "{EXHAUSTIVE}" (length)')
    proposal, _ = night(tmp_path, EXHAUSTIVE, {**rule, "supersedes": EXHAUSTIVE})
    assert [e.supersedes for e in proposal.edits] == [EXHAUSTIVE]


def test_a_superseding_rule_that_drops_part_of_the_line_restates_it(tmp_path: Path):
    """What the rule drops is appended to it exactly, without a model call."""
    rule = {
        "target": "skill",
        "op": "add",
        "content": "Use the search tool before answering.",
        "supersedes": NO_SEARCH,
        "evidence": ["t1"],
    }
    proposal, backend = night(tmp_path, NO_SEARCH, rule)
    assert [r.purpose for r in backend.requests] == ["reflect"]
    [edit] = proposal.edits
    assert edit.content.endswith("use the search tool before answering; just reply directly and concisely.")
    assert edit.supersedes == NO_SEARCH and dropped(edit.content, NO_SEARCH) == []


LENGTH_LINES = (
    "When asked, analyze the decision as thoroughly and completely as you can.\n"
    "Explore every angle, consider many scenarios, and be exhaustive and detailed. Write multiple paragraphs."
)


def test_a_rule_must_name_every_line_it_contradicts(tmp_path: Path):
    """A cap that supersedes one of two lines asking for length still stands beside the other: it
    is refused until it names both, and then both are shown overridden in the document."""
    first, second = LENGTH_LINES.split("\n")
    rule = {
        "target": "skill",
        "op": "add",
        "content": "Keep the response to at most 1200 characters.",
        "supersedes": first,
        "evidence": ["t1"],
    }
    proposal, _ = night(tmp_path, LENGTH_LINES, rule)
    assert proposal.edits == [] and proposal.refused[0][1].startswith(f'contradicts the hand-written line "{second}"')
    proposal, _ = night(tmp_path, LENGTH_LINES, {**rule, "supersedes": [first, second]})
    [edit] = proposal.edits
    assert edit.supersedes == LENGTH_LINES
    written = apply_edit(load_documents(tmp_path), edit).skill.rules()[-1]
    assert written.endswith(f'at most 1200 characters. (supersedes: "{first}"; "{second}")')
    assert split_supersedes(written)[1] == LENGTH_LINES


def test_the_simulator_reads_both_lines_as_overridden():
    first, second = LENGTH_LINES.split("\n")
    documents = (
        f"# Skill\n\n{first}\n{second}\nCite your sources.\n\n{START}\n"
        f'- Keep the response to at most 1200 characters. (supersedes: "{first}"; "{second}")\n{END}\n'
    )
    read = [d.text for d in applicable(parse_documents(documents), "analyze this")]
    assert first not in read and second not in read and "Cite your sources." in read
