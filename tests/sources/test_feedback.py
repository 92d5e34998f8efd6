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
        (
            "Now fix how the parser works in module X and then write docs for all the functions that "
            "still need them, and check again that every example in the README runs",
            None,
        ),
        ("", None),
        # corrections in people's own words
        ("no TODOs in the changelog, please", "negative"),
        ("never use console.log in examples", "negative"),
        ("please never add emojis", "negative"),
        ("way too verbose - max 300 chars", "negative"),
        ("keep it to 3 lines", "negative"),
        ("where's the ## Testing section? we always have one", "negative"),
        ("Forgot the ticket trailer again", "negative"),
        ("the Known issues section is missing", "negative"),
        ("great, but the subject is too long", "negative"),
        # praise that opens the message wins over a weak complaint word later in it
        ("lgtm, nice that you kept it under 72 chars", "positive"),
        # courtesies and questions are not corrections
        ("no worries, take your time", None),
        ("no problem", None),
        ("never mind, I found it", None),
        ("where is the config loaded?", None),
        ("I never understood the cache", None),
        # demands in other words: no apostrophe, "get rid of", "it has to", a ## heading asked for
        ("dont add a footer", "negative"),
        ("get rid of the emojis", "negative"),
        ("it has to link the ticket", "negative"),
        ("no ## Install section?", "negative"),
        ("not more than 2 lines", "negative"),
        ("limit it to 3 bullets", "negative"),
        ("you left off the trailer", "negative"),
        ("where is the ticket id?", "negative"),
        ("make it async", None),
        # naming the code idiom to use corrects the reply; naming a tool or a file asks for work
        ("use pytest.mark.parametrize for the cases", "negative"),
        ("pls use `logger.exception` there", "negative"),
        ("use COPY --chown for the app dir", "negative"),
        ("use @pytest.fixture instead of setUp", "negative"),
        ("we always use structlog.get_logger here", "negative"),
        ("you should use op.execute for the data part", "negative"),
        ("thanks! next time use pytest.mark.parametrize though", "negative"),  # the correction wins
        ("lgtm, nice use of logger.exception", "positive"),  # "use" as a noun
        ("refactor the loader to use functools.cache", None),
        ("use ripgrep to find every caller of parse_amount", None),
        ("use NOTES.md for the release notes", None),
        ("use the deploy token from the vault for the release job", None),
        # a demand on literal text that opens with a mark
        ("no :latest tags please", "negative"),
    ],
)
def test_classify(text, expected):
    assert classify(text) == expected


def test_only_the_opening_line_counts():
    assert classify("Add the retry flag\nthanks in advance for the help") is None
