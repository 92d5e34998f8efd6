"""Requests and the feedback attached to each."""

from __future__ import annotations


from skillopt_sleep.mining import requests_from
from skillopt_sleep.types import Feedback, SessionDigest
from tests.mining.builders import PROJECT, SIGNOFF, digest


def test_feedback_messages_are_not_requests():
    d = digest(
        "s1",
        [
            ("write the commit message", "feat: x"),
            (SIGNOFF, "fixed"),
            ("add a unit test for the parser", "done"),
            ("great, thanks", "you're welcome"),
        ],
        [Feedback("negative", SIGNOFF, 0), Feedback("positive", "great, thanks", 2)],
    )
    reqs = requests_from([d])
    assert [r.text for r in reqs] == ["write the commit message", "add a unit test for the parser"]
    assert [r.index for r in reqs] == [0, 2]


def test_feedback_attaches_to_the_request_it_reacts_to():
    d = digest(
        "s1",
        [
            ("write the commit message", "feat: x"),
            ("add a unit test for the parser", "def test_x(): ..."),
            ('tests go in tests/unit, and include "pytest.mark.unit"', "ok"),
            ("summarize the PR", "It adds x."),
        ],
        [
            Feedback("negative", 'tests go in tests/unit, and include "pytest.mark.unit"', 1),
            Feedback("positive", "perfect", 3),
        ],
    )
    reqs = {r.text: r for r in requests_from([d])}
    assert set(reqs) == {"write the commit message", "add a unit test for the parser", "summarize the PR"}
    assert reqs["add a unit test for the parser"].feedback == ['tests go in tests/unit, and include "pytest.mark.unit"']
    assert reqs["write the commit message"].feedback == []
    assert reqs["summarize the PR"].feedback == [] and reqs["summarize the PR"].praised
    assert not reqs["add a unit test for the parser"].praised
    assert reqs["add a unit test for the parser"].reply == "def test_x(): ..."


def test_positive_feedback_is_not_a_complaint():
    d = digest(
        "s1",
        [("write the commit message", "x"), ("nice, always include that", "")],
        [Feedback("positive", "nice, always include that", 0)],
    )
    (req,) = requests_from([d])
    assert req.feedback == [] and req.praised


def test_blank_prompts_and_missing_finals():
    d = SessionDigest(
        "claude", "s1", PROJECT, "/t", user_prompts=["   ", "write the commit message"], assistant_finals=["x"]
    )
    (req,) = requests_from([d])
    assert req.text == "write the commit message" and req.index == 1 and req.reply == ""
