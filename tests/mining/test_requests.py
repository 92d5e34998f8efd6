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


def test_a_follow_up_to_a_follow_up_is_about_the_same_request():
    d = digest(
        "s1",
        [
            ("add logging to the export job", "done"),
            ("use logger.exception in the except block", "changed"),
            ("and no print() calls", "removed"),
            ("thanks", ""),
        ],
        [
            Feedback("negative", "use logger.exception in the except block", 0),
            Feedback("negative", "and no print() calls", 1),
            Feedback("positive", "thanks", 2),
        ],
    )
    [request] = requests_from([d])
    assert request.text == "add logging to the export job"
    assert request.feedback == ["use logger.exception in the except block", "and no print() calls"]
    assert request.praised


def test_a_feedback_message_longer_than_its_opening_is_not_a_request():
    complaint = "you forgot the Signed-off-by line\nit is in CONTRIBUTING.md, every commit needs it"
    d = digest(
        "s1",
        [("write the commit message", "feat: x"), (complaint, "fixed")],
        [Feedback("negative", "you forgot the Signed-off-by line", 0)],  # the harvest keeps the opening
    )
    assert [r.text for r in requests_from([d])] == ["write the commit message"]


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
