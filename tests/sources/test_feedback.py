"""Feedback phrase classification: precision over recall."""

from __future__ import annotations

import pytest

from skillopt_sleep.sources.feedback import classify


@pytest.mark.parametrize(
    "text, expected",
    [
        ("thanks!", "positive"),
        ("perfect", "positive"),
        ("lgtm, ship it", "positive"),
        ("works now", "positive"),
        ("exactly what I needed", "positive"),
        ("Great", "positive"),
        ("Thanks, but you forgot the tests", "negative"),  # a complaint wins over praise
        ("no, use pytest", "negative"),
        ("it still fails", "negative"),
        ("that's not what I asked for", "negative"),
        ("don't use tabs", "negative"),
        ("you should have run the linter first", "negative"),
        ("Not great.", None),
        ("No thanks", None),
        ("How does this work?", None),
        ("Add a test for the login flow", None),
        ("notice the bug in knowledge.py", None),
        # a long new request that merely contains weak words is not feedback
        ("Now fix how the parser works in module X and then write docs for all the functions that "
         "still need them, and check again that every example in the README runs", None),
        ("", None),
    ],
)
def test_classify(text, expected):
    assert classify(text) == expected


def test_only_the_opening_line_counts():
    assert classify("Add the retry flag\nthanks in advance for the help") is None
