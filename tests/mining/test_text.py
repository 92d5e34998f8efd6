"""Content words of a request."""

from __future__ import annotations

import pytest

from skillopt_sleep.mining import jaccard, signature


def test_signature_drops_stopwords_digits_and_stems():
    sig = signature("Please write the commit messages for 3 staged changes now")
    assert sig == frozenset({"commit", "messag", "stag", "chang"})  # "write" asks for any work
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


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("commit msg", "commit message"),
        ("PR desc", "pull request description"),
        ("relnotes", "release notes"),
        ("add UTs", "add unit tests"),
        ("update the change-log", "update the changelog"),
        ("fix the docs", "fix the documentation"),
    ],
)
def test_variant_spellings_are_one_signature(a, b):
    assert signature(a) == signature(b)


def test_spellings_are_whole_words_only():
    assert signature("describe the message queue") == frozenset({"describ", "messag", "queu"})
    assert "pr" not in signature("print the prompt")
