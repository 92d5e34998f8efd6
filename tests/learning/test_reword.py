"""Rules in plain words: a proposed rule that quotes regex syntax or a check's internal form is
reworded once by the optimizer, and refused when it still quotes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.backends.sim import SimBackend, SimKnobs
from skillopt_sleep.documents.managed_block import DocumentSet, load_documents
from skillopt_sleep.checks.judges import check_id, describe_check
from skillopt_sleep.learning.reflect import reflect
from skillopt_sleep.types import Attempt, TaskRecord

from tests.support.fake_backend import FakeBackend

PATTERN = r"[Cc]onfidence\s*[:=]"
CHECK = {"op": "regex", "arg": PATTERN}
WORDY = f"Make the response match the pattern {PATTERN} on its own line."
PLAIN = "End with a line `Confidence: <level>`."
TASKS = [TaskRecord(id="t1", intent="advise on the decision", kind="advice", judge={"kind": "rule", "checks": [CHECK]})]
ATTEMPTS = {
    "t1": [
        Attempt(
            task_id="t1",
            sample=i,
            response="It depends.",
            hard=0.0,
            soft=0.0,
            fail_reasons=[describe_check(CHECK)],
            failed_checks=[check_id(CHECK)],
        )
        for i in range(2)
    ]
}


@pytest.fixture
def docs(tmp_path: Path) -> DocumentSet:
    return load_documents(tmp_path)


def optimizer(reword_reply: object) -> FakeBackend:
    def answer(request):
        if request.purpose == "reword":
            return reword_reply
        return {"edits": [{"target": "skill", "op": "add", "content": WORDY, "evidence": ["t1"]}]}

    return FakeBackend(answer)


def client(backend) -> Client:
    return Client(backend, retry=RetryPolicy(attempts=1, sleep=lambda s: None), cache=False, role="optimizer")


def test_a_rule_that_quotes_a_pattern_is_reworded_once(docs: DocumentSet):
    backend = optimizer({"content": PLAIN})
    proposal = reflect(client(backend), TASKS, ATTEMPTS, docs)
    [rewording] = [r for r in backend.requests if r.purpose == "reword"]
    assert "a regex class escape" in rewording.user and "Confidence:" in rewording.user
    assert rewording.payload["failed_checks"] == [CHECK]
    [rule] = proposal.edits
    assert rule.content.endswith("end with a line `Confidence: <level>`.") and rule.content.startswith("When ")
    assert proposal.calls == len(backend.requests)


def test_a_reword_that_still_quotes_the_pattern_is_mended_with_the_text_it_asks_for(docs: DocumentSet):
    backend = optimizer({"content": WORDY})
    [rule] = reflect(client(backend), TASKS, ATTEMPTS, docs).edits
    assert rule.content.endswith('make the response match the pattern "Confidence:" on its own line.')


OPAQUE = {"op": "regex", "arg": r"[A-Z]{2,}-\d+"}
OPAQUE_TASKS = [
    TaskRecord(id="t1", intent="write the commit", kind="commit", judge={"kind": "rule", "checks": [OPAQUE]})
]
OPAQUE_ATTEMPTS = {
    "t1": [
        Attempt(
            task_id="t1",
            sample=0,
            response="done",
            hard=0.0,
            soft=0.0,
            fail_reasons=[describe_check(OPAQUE)],
            failed_checks=[check_id(OPAQUE)],
        )
    ]
}


@pytest.mark.parametrize("reply", [{"content": "End with [A-Z]{2,}-\\d+."}, "no json here"])
def test_a_rule_still_quoting_syntax_is_refused(docs: DocumentSet, reply: object):
    def answer(request):
        if request.purpose == "reword":
            return reply
        return {"edits": [{"target": "skill", "op": "add", "content": r"End with [A-Z]{2,}-\d+.", "evidence": ["t1"]}]}

    backend = FakeBackend(answer)
    proposal = reflect(client(backend), OPAQUE_TASKS, OPAQUE_ATTEMPTS, docs)
    assert proposal.edits == []
    [(refused, reason)] = proposal.refused
    assert "where a person writes plain words, also after one rewording" in reason
    # one reword request, and one repair of it when the reply was not the JSON asked for
    assert sum(r.purpose == "reword" for r in backend.requests) == (2 if reply == "no json here" else 1)


def test_a_plain_rule_costs_no_reword(docs: DocumentSet):
    backend = FakeBackend(lambda r: {"edits": [{"target": "skill", "op": "add", "content": PLAIN, "evidence": ["t1"]}]})
    proposal = reflect(client(backend), TASKS, ATTEMPTS, docs)
    assert [r.purpose for r in backend.requests] == ["reflect"] and len(proposal.edits) == 1


def test_the_simulated_optimizer_writes_plain_words(docs: DocumentSet):
    """The sim proposes the covering rule in words, so nothing is left to reword; asked to reword
    a rule that quotes the pattern, it says it in words (at correct 1)."""
    sim = SimBackend(SimKnobs(correct=1.0, harmful=0.0, seed=3))
    proposal = reflect(client(sim), TASKS, ATTEMPTS, docs)
    assert proposal.edits and all("\\" not in e.content for e in proposal.edits)
    assert any('"Confidence:"' in e.content for e in proposal.edits)
    reply = sim.complete(
        Request(
            purpose="reword",
            system="s",
            user="u",
            payload={"rule": WORDY, "scope": "giving advice", "failed_checks": [CHECK]},
        )
    )
    assert json.loads(reply.text)["content"] == 'When giving advice, always include a line like "Confidence:".'


def test_the_simulated_optimizer_restates_what_a_superseding_rule_keeps():
    sim = SimBackend(SimKnobs(correct=1.0, harmful=0.0, seed=3))
    reply = sim.complete(
        Request(
            purpose="reword",
            system="s",
            user="u",
            payload={
                "rule": "Use the search tool before answering.",
                "scope": "",
                "keep": ["just reply directly and concisely"],
                "failed_checks": [],
            },
        )
    )
    assert (
        json.loads(reply.text)["content"] == "Use the search tool before answering; just reply directly and concisely."
    )
