"""What a check asks, in a person's words: patterns read back as the text they ask for, limit
regexes as their limits, and rules that quote syntax found."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, strategies as st

from skillopt_sleep.backends.sim.optimizer import covering_rule
from skillopt_sleep.backends.sim.reading import stance
from skillopt_sleep.checks.words import LIMIT_UNITS, limit_check, limit_of, quoted_syntax, readable_regex


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (r"[Cc]onfidence\s*[:=]", "Confidence:"),
        (r"[Rr]ecommendation\s*[:=]", "Recommendation:"),
        (r"Refs: ACME-\d+", "Refs: ACME-<n>"),
        (r"Closes #\d+", "Closes #<n>"),
        (r"(?i)^signed-off-by:", "signed-off-by:"),
        (r"^## Summary$", "## Summary"),
        (r"v\d+\.\d+\.\d+", "v<n>.<n>.<n>"),
        (r"Part-of:\s+[0-9]+", "Part-of: <n>"),
        (r"^\[(investigating|identified|resolved)\]", "[investigating/identified/resolved]"),
        (r"foo|bar", "foo/bar"),
        (r"feat|fix", "feat/fix"),  # the parser moves the common "f" out of the alternatives
        (r"^(feat|fix): \S", "feat/fix: …"),  # some text after what it asks for
        (r"Refs: \S+", "Refs: …"),
        (r"\S+", None),
        (r".*x", None),
        (r"^a+$", None),
        (r"[A-Z]{2,}-\d+", None),
        (r"\d+", None),
        (r"(", None),
    ],
)
def test_readable_regex(pattern: str, text: str | None):
    assert readable_regex(pattern) == text
    if text:  # what it says matches: the text, a number in place of <n>, one of the alternatives
        assert re.search(pattern, re.sub(r"(\w+)(?:/\w+)+", r"\1", text.replace("<n>", "42")))


@given(unit=st.sampled_from(LIMIT_UNITS), n=st.integers(1, 2000))
def test_a_limit_reads_back_as_its_limit(unit: str, n: int):
    assert limit_of(limit_check(unit, n)["arg"]) == (unit, n)


def test_limits_in_words():
    assert readable_regex(limit_check("words", 50)["arg"]) == "at most 50 words"
    assert readable_regex(limit_check("bullets", 1)["arg"]) == "at most 1 bullet point"
    assert readable_regex(limit_check("first_line_chars", 72)["arg"]) == "a first line of at most 72 characters"
    assert limit_of(r"\A[^\n]{1,60}x") is None


@pytest.mark.parametrize(
    ("rule", "found"),
    [
        (r"Make the response match the pattern [Cc]onfidence\s*[:=] on its own line.", "a regex class escape"),
        (r"Match ^\w+$ in the title.", "a regex class escape"),
        (r"Keep lines to [^\n]{1,72}.", "a regex repeat"),
        ("Use (?:yes|no) as the answer.", "a regex group"),
        ("Write .* after the colon.", "a regex wildcard"),
        ("Start with [Ss]ummary.", "a regex character class"),
        ("Make sure section_present passes.", "a check's internal name"),
        (r"Start with ^\[(investigating|identified|resolved)\].", "a regex alternation"),
        (r"End the title with \(draft\).", "a regex escape"),
        ('Emit {"op": "contains"} checks.', "a check's internal name"),
        ("End with a line `Confidence: <level>`.", None),
        ('Always include "Refs: ACME-<n>".', None),
        (r"Use `C:\Data` paths on Windows.", None),
        ("Mark finished items [ok] in the list.", None),
        ("Name files like *.py and run pytest -k smoke.", None),
        ("Keep the subject line to at most 72 characters.", None),
    ],
)
def test_quoted_syntax(rule: str, found: str | None):
    assert quoted_syntax(rule) == found


@pytest.mark.parametrize(
    "check",
    [
        {"op": "regex", "arg": r"[Cc]onfidence\s*[:=]"},
        {"op": "regex", "arg": r"Refs: ACME-\d+"},
        {"op": "regex", "arg": r"^(feat|fix): \S"},
        limit_check("words", 50),
        limit_check("lines", 3),
        limit_check("bullets", 5),
        limit_check("first_line_chars", 60),
    ],
)
def test_the_simulators_rule_for_a_pattern_is_plain_and_covers_it(check: dict):
    rule = covering_rule(check)
    assert rule and quoted_syntax(rule) is None
    assert stance(check, rule) is True


def test_the_simulator_reads_a_looser_limit_as_not_covering():
    check = limit_check("words", 50)
    assert stance(check, "Keep the response to at most 80 words.") is None
    assert stance(check, "Keep the response to at most 40 words.") is True
    assert stance(limit_check("first_line_chars", 60), "Write at most 50 characters.") is None
