"""A string that matches a regex check (backends/sim/regex_gen.py), or None for a pattern outside
the subset it supports."""

from __future__ import annotations

import random
import re

import pytest

from skillopt_sleep.backends.sim import regex_example


@pytest.mark.parametrize(
    "pattern",
    [
        r"^feat(\(\w+\))?: .+$",
        r"\d{3}-\d{4}",
        r"(fix|feat): [a-z]+",
        r"JIRA-[0-9]+",
        r"^Signed-off-by: .+ <.+@.+>$",
        r"v\d+\.\d+\.\d+",
        r"[A-Z][a-z]{2,5}\s+\S+",
        r"\bcloses #\d+\b",
        r"[^x]y",
    ],
)
def test_regex_example_matches(pattern: str):
    example = regex_example(pattern, random.Random(0))
    assert example is not None
    assert re.search(pattern, example, re.MULTILINE)


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?<=x)y", r"^a(?=b)$"])
def test_regex_example_returns_none_when_unsupported(pattern: str):
    assert regex_example(pattern, random.Random(0)) is None
