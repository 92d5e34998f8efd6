"""Checks from a user's complaints."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillopt_sleep.checks.judges import run_check
from skillopt_sleep.mining import checks_by_support, checks_from_feedback
from skillopt_sleep.mining.checks import complaint_for, limit_check
from tests.mining.builders import SIGNOFF


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (SIGNOFF, [{"op": "contains", "arg": "Signed-off-by:"}]),
        # a ticket number stands for the kind's pattern, not for that one ticket
        ("it's missing “Closes #12”", [{"op": "regex", "arg": r"Closes #\d+"}]),
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
        # the subject named inside the limit phrase itself; a limit said to be exceeded is a cap
        ("keep the title under 40 chars", [{"op": "regex", "arg": r"\A[^\n]{1,40}(?:\n|\Z)"}]),
        ("the reply is longer than 300 characters", [{"op": "max_chars", "arg": 300}]),
        ("make it longer than 300 characters", [{"op": "min_chars", "arg": 300}]),
        ("not more than 2 lines", [limit_check("lines", 2)]),
        # literal text that opens with a mark, and more verbs of putting something in
        ("don't pin :edge in the image", [{"op": "not_contains", "arg": ":edge"}]),
        ("never hardcode API_TOKEN here", [{"op": "not_contains", "arg": "API_TOKEN"}]),
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
        "under 3 sentences",  # sentences are not checkable
    ],
)
def test_unclear_feedback_gives_no_checks(text):
    assert checks_from_feedback([text]) == []


def test_checks_from_feedback_dedupes_and_combines():
    got = checks_from_feedback([SIGNOFF, SIGNOFF + ". Also keep it under 72 characters.", 'never use "WIP"'])
    assert got == [
        {"op": "contains", "arg": "Signed-off-by:"},
        {"op": "max_chars", "arg": 72},
        {"op": "not_contains", "arg": "WIP"},
    ]


def test_cue_is_read_per_sentence():
    # "never" in the first sentence must not turn the second sentence's request negative
    got = checks_from_feedback(['Never mind. You forgot "Signed-off-by:" again'])
    assert got == [{"op": "contains", "arg": "Signed-off-by:"}]


def test_dont_forget_is_a_positive_request():
    assert checks_from_feedback(['Don\'t forget the "Signed-off-by:" line']) == [
        {"op": "contains", "arg": "Signed-off-by:"}
    ]


@pytest.mark.parametrize(
    "text",
    ["Don't add 'WIP', it's noise", "You didn't include the 'Closes' line, it's required"],
)
def test_contractions_do_not_become_quoted_values(text):
    values = {c["arg"] for c in checks_from_feedback([text])}
    assert values <= {"WIP", "Closes"}


# -- how people write: tickets, headings, negations, numbers with units -----------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # ticket numbers become the kind's pattern
        ("you forgot the Refs: ACME-123 trailer again", [{"op": "regex", "arg": r"Refs: ACME-\d+"}]),
        ("every commit ends with Resolves #88", [{"op": "regex", "arg": r"Resolves #\d+"}]),
        ("the ticket key is missing, e.g. SHOP-12", [{"op": "regex", "arg": r"SHOP-\d+"}]),
        ("`Story: MOB-7` goes in the footer, you forgot it", [{"op": "regex", "arg": r"Story: MOB-\d+"}]),
        # headings with or without #
        ("where's the ## Testing section? we always have one", [{"op": "section_present", "arg": "Testing"}]),
        ("you forgot the Upgrade notes heading", [{"op": "section_present", "arg": "Upgrade notes"}]),
        ("it needs ## Alternatives considered", [{"op": "section_present", "arg": "Alternatives considered"}]),
        # negations of literal text
        ("no TODOs in the release notes, please", [{"op": "not_contains", "arg": "TODO"}]),
        ("without the Reviewed-by trailer", [{"op": "not_contains", "arg": "Reviewed-by"}]),
        ("don't include XXX anywhere", [{"op": "not_contains", "arg": "XXX"}]),
        ("no [ci skip] tags", [{"op": "not_contains", "arg": "[ci skip]"}]),
        # reminders of literal text
        ("you forgot the Acked-by line", [{"op": "contains", "arg": "Acked-by"}]),
        # numbers with units
        ("way too verbose - max 300 chars", [{"op": "max_chars", "arg": 300}]),
        ("250 characters max", [{"op": "max_chars", "arg": 250}]),
        ("keep it to 3 lines", [limit_check("lines", 3)]),
        ("at most 5 bullets", [limit_check("bullets", 5)]),
        ("4 bullet points or fewer", [limit_check("bullets", 4)]),
        ("under 72 words", [limit_check("words", 72)]),
        ("the title must fit in 60 chars", [limit_check("first_line_chars", 60)]),
        ("one line only", [limit_check("lines", 1)]),
        ("no longer than 90 characters", [{"op": "max_chars", "arg": 90}]),
        ("please make it at least 400 characters", [{"op": "min_chars", "arg": 400}]),
        # the code idiom to use
        ("use pytest.mark.parametrize for the cases", [{"op": "contains", "arg": "pytest.mark.parametrize"}]),
        ("pls use `logger.exception` there", [{"op": "contains", "arg": "logger.exception"}]),
        ("use COPY --chown=app:app, not a RUN chown", [{"op": "contains", "arg": "COPY --chown"}]),
        ("we use structlog.get_logger here", [{"op": "contains", "arg": "structlog.get_logger"}]),
        # what it replaces is named only when quoted after "instead of"
        ("use logger.exception, not logger.error", [{"op": "contains", "arg": "logger.exception"}]),
        (
            'use "pathlib.Path" instead of "os.path.join"',
            [{"op": "contains", "arg": "pathlib.Path"}, {"op": "not_contains", "arg": "os.path.join"}],
        ),
        ("don't use --force", [{"op": "not_contains", "arg": "--force"}]),
        # a call named with its parentheses stands for any call of it
        ("no print() calls in the library", [{"op": "not_contains", "arg": "print("}]),
    ],
)
def test_checks_in_peoples_own_words(text, expected):
    assert checks_from_feedback([text]) == expected


@pytest.mark.parametrize(
    "text",
    [
        "no emojis please",  # plain words are not literal text
        "don't mention the migration",
        "keep it to 2 sentences",  # not checkable
        "the logs show 300 characters of garbage",  # a number with a unit but no limit
        "please drop the ## Notes section",  # no op says a section must be absent
        "use UTF-8 everywhere",  # not a ticket
        "can you explain the ## syntax",
        "instead of using logger.error, log the traceback",  # what not to use, said as a reason
        "use NOTES.md for the notes",  # where to write, not what
        "use Python 3-style type hints",  # a hyphenated word is not code
    ],
)
def test_unclear_or_uncheckable_phrases_give_no_checks(text):
    assert checks_from_feedback([text]) == []


def _count_lines(text: str) -> int:
    return len(text.strip().split("\n")) if text.strip() else 0


@given(st.lists(st.text(alphabet="ab -*1.", max_size=12), max_size=8), st.integers(1, 6))
def test_limit_checks_count_what_they_say(lines, n):
    text = "\n".join(lines)
    bullets = sum(1 for line in lines if re.match(r"[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]", line))
    assert run_check(limit_check("bullets", n), text) == (bullets <= n)
    assert run_check(limit_check("lines", n), text) == (_count_lines(text) <= n)
    assert run_check(limit_check("words", n), text) == (len(text.split()) <= n)
    first = text.split("\n")[0]
    assert run_check(limit_check("first_line_chars", n), text) == (1 <= len(first) <= n)


@pytest.mark.parametrize("unit", ["lines", "words", "bullets", "first_line_chars"])
def test_limit_checks_do_not_backtrack_on_long_runs_of_whitespace(unit):
    # each of these took minutes with a leading "\s*" that could give back what it matched
    for text in (
        " " * 20000 + "x\ny\nz\nw",
        "\n" * 20000 + "x\ny\nz\nw",
        " \n" * 10000 + "a b c d e",
        ("x\n" + " " * 3000) * 10,
    ):
        assert run_check(limit_check(unit, 3), text) in (True, False)


def test_limit_check_rejects_what_it_cannot_check():
    with pytest.raises(ValueError):
        limit_check("sentences", 2)
    with pytest.raises(ValueError):
        limit_check("lines", 0)


def test_a_cue_belongs_to_its_own_clause():
    text = 'Please never put "TODO" in it, and it needs a "## Testing" section.'
    assert checks_from_feedback([text]) == [
        {"op": "not_contains", "arg": "TODO"},
        {"op": "section_present", "arg": "Testing"},
    ]
    # a value alone in its clause reads the cue before it
    assert checks_from_feedback(['never put "WIP", "TODO" in it']) == [
        {"op": "not_contains", "arg": "WIP"},
        {"op": "not_contains", "arg": "TODO"},
    ]
    assert checks_from_feedback(["drop the ## Notes section, and add a ## Testing section"]) == [
        {"op": "section_present", "arg": "Testing"}
    ]


def test_checks_by_support_lists_the_most_stated_first():
    texts = [
        'never put "TODO" in it',
        'missing the "## Testing" section',
        'no TODOs, and where is "## Testing"?',
        "you forgot the ## Testing section again",
    ]
    assert checks_by_support(texts) == [
        {"op": "section_present", "arg": "Testing"},
        {"op": "not_contains", "arg": "TODO"},
    ]
    assert checks_by_support(list(reversed(texts)))[0] == {"op": "section_present", "arg": "Testing"}
    assert checks_by_support([]) == []


def test_there_is_no_means_missing():
    assert checks_from_feedback(['there is no "Signed-off-by:" line']) == [{"op": "contains", "arg": "Signed-off-by:"}]
    assert checks_from_feedback(['No "Generated with" footer, ever.']) == [
        {"op": "not_contains", "arg": "Generated with"}
    ]


def test_the_complaint_that_states_a_check_is_kept_beside_it():

    texts = ["Thanks. Looks fine otherwise.", 'You forgot the "Signed-off-by:" line again. Also too long.']
    check = {"op": "contains", "arg": "Signed-off-by:"}
    assert complaint_for(check, texts) == 'You forgot the "Signed-off-by:" line again.'
    assert complaint_for({"op": "contains", "arg": "Refs:"}, texts) is None
