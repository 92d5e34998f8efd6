"""Content words of a request."""

from __future__ import annotations


import pytest

from skillopt_sleep.mining import (
    jaccard,
    signature,
)


def test_signature_drops_stopwords_digits_and_stems():
    sig = signature("Please write the commit messages for 3 staged changes now")
    assert sig == frozenset({"write", "commit", "messag", "stag", "chang"})
    assert signature("") == frozenset()
    assert signature("the and of a") == frozenset()


def test_signature_is_case_insensitive():
    assert signature("Commit MESSAGE") == signature("commit message")


def test_jaccard():
    a, b = frozenset({"x", "y"}), frozenset({"y", "z"})
    assert jaccard(a, b) == pytest.approx(1 / 3)
    assert jaccard(a, a) == 1.0
    assert jaccard(a, frozenset({"q"})) == 0.0
    assert jaccard(frozenset(), frozenset()) == 0.0
    assert jaccard(a, frozenset()) == 0.0
