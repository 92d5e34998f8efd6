"""Checks from a user's complaints."""

from __future__ import annotations


import pytest

from skillopt_sleep.mining import (
    checks_from_feedback,
)
from tests.mining.builders import (
    SIGNOFF,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (SIGNOFF, [{"op": "contains", "arg": "Signed-off-by:"}]),
        ("it's missing “Closes #12”", [{"op": "contains", "arg": "Closes #12"}]),
        ("you should include `make lint` in the steps", [{"op": "contains", "arg": "make lint"}]),
        ('never put "WIP" in the subject', [{"op": "not_contains", "arg": "WIP"}]),
        ('please remove the "Co-authored-by" trailer', [{"op": "not_contains", "arg": "Co-authored-by"}]),
        ("there should be a ## Testing section", [{"op": "section_present", "arg": "Testing"}]),
        ("add a section called Risks.", [{"op": "section_present", "arg": "Risks"}]),
        ('the "## Summary" heading is missing', [{"op": "section_present", "arg": "Summary"}]),
        ("keep it under 72 characters", [{"op": "max_chars", "arg": 72}]),
        # a limit on the subject line checks the first line, not the whole reply
        ("the subject must be no more than 50 chars!", [{"op": "regex", "arg": r"\A[^\n]{1,50}(?:\n|\Z)"}]),
        ("write at least 200 characters", [{"op": "min_chars", "arg": 200}]),
    ],
)
def test_checks_from_feedback(text, expected):
    assert checks_from_feedback([text]) == expected


@pytest.mark.parametrize(
    "text",
    [
        "that looks weird",
        "no, not like that",
        "make it better",
        'I said "hello" to the team',  # quoted, but no cue saying it belongs in the answer
        "keep it short",  # no number
        "under 72 words",  # words are not characters
    ],
)
def test_unclear_feedback_gives_no_checks(text):
    assert checks_from_feedback([text]) == []


def test_checks_from_feedback_dedupes_and_combines():
    got = checks_from_feedback([SIGNOFF, SIGNOFF + ". Also keep it under 72 characters.",
                                'never use "WIP"'])
    assert got == [{"op": "contains", "arg": "Signed-off-by:"}, {"op": "max_chars", "arg": 72},
                   {"op": "not_contains", "arg": "WIP"}]


def test_cue_is_read_per_sentence():
    # "never" in the first sentence must not turn the second sentence's request negative
    got = checks_from_feedback(['Never mind. You forgot "Signed-off-by:" again'])
    assert got == [{"op": "contains", "arg": "Signed-off-by:"}]


def test_dont_forget_is_a_positive_request():
    assert checks_from_feedback(['Don\'t forget the "Signed-off-by:" line']) == [
        {"op": "contains", "arg": "Signed-off-by:"}]


@pytest.mark.parametrize(
    "text",
    ["Don't add 'WIP', it's noise",
     "You didn't include the 'Closes' line, it's required"],
)
def test_contractions_do_not_become_quoted_values(text):
    values = {c["arg"] for c in checks_from_feedback([text])}
    assert values <= {"WIP", "Closes"}
