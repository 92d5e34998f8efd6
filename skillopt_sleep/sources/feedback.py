"""Feedback signals: does a user follow-up praise or complain about the previous reply?

All phrase lists live here. Precision over recall: a phrase only counts in the opening of the
message (its first line, first ``OPENING_CHARS`` characters), and the ambiguous ("weak") phrases
only in short follow-ups, where "it still fails" is a complaint rather than part of a new request
("... the way the parser still handles ...").

To extend: add a lowercase phrase to the right tuple. Phrases match on word boundaries.
"""

from __future__ import annotations

import re

OPENING_CHARS = 200
SHORT_FOLLOW_UP_WORDS = 25

# Complaints that are unambiguous wherever they appear in the opening.
NEGATIVE_STRONG = (
    "not what i asked",
    "not what i wanted",
    "that's not what",
    "that is not what",
    "you forgot",
    "you missed",
    "you didn't",
    "you did not",
    "should have",
    "shouldn't have",
    "that's wrong",
    "that is wrong",
    "doesn't work",
    "does not work",
    "didn't work",
    "did not work",
    "not working",
    "still failing",
    "still fails",
    "still broken",
    "still wrong",
    "still missing",
    "still not",
    "still doesn't",
    "still don't",
)
# Complaints that only start a message ("No, use the other flag").
NEGATIVE_START = ("no,", "no.", "no!", "nope", "wrong", "undo", "revert that", "ugh")
# Ambiguous complaint words: counted only in short follow-ups.
NEGATIVE_WEAK = ("wrong", "incorrect", "missing", "don't", "do not", "still", "again", "broke", "broken")

POSITIVE_STRONG = (
    "thanks",
    "thank you",
    "thx",
    "perfect",
    "lgtm",
    "looks good",
    "looks great",
    "well done",
    "exactly",
    "that worked",
    "it works",
    "works now",
    "that works",
)
POSITIVE_START = ("great", "nice", "awesome", "excellent", "good job", "works")
POSITIVE_WEAK = ("great", "works", "nice", "awesome", "excellent")

# "not perfect", "not great", "no thanks": a negated praise is not praise.
_NEGATED = re.compile(r"\b(?:not|no|never|isn't|wasn't|hardly)\s+(?:\w+\s+)?$")


def _phrase_regex(phrases: tuple[str, ...], *, start: bool = False) -> re.Pattern[str]:
    body = "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True))
    prefix = r"^\W*(?:" if start else r"(?<![\w'])(?:"
    # Phrases ending in punctuation ("no,") carry their own boundary.
    return re.compile(prefix + body + r")(?:(?<=[^\w])|(?![\w']))")


_NEG_STRONG = _phrase_regex(NEGATIVE_STRONG)
_NEG_START = _phrase_regex(NEGATIVE_START, start=True)
_NEG_WEAK = _phrase_regex(NEGATIVE_WEAK)
_POS_STRONG = _phrase_regex(POSITIVE_STRONG)
_POS_START = _phrase_regex(POSITIVE_START, start=True)
_POS_WEAK = _phrase_regex(POSITIVE_WEAK)


def opening(text: str) -> str:
    """The part of a message feedback phrases are looked for in: first non-empty line, clipped."""
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()[:OPENING_CHARS]
    return ""


def _praise(head: str, *, short: bool) -> bool:
    for pattern in (_POS_STRONG, _POS_START) + ((_POS_WEAK,) if short else ()):
        for m in pattern.finditer(head):
            if not _NEGATED.search(head[: m.start()]):
                return True
    return False


def classify(text: str) -> str | None:
    """Return ``"negative"``, ``"positive"`` or None for a follow-up message.

    A complaint wins over praise in the same opening ("thanks, but you forgot the tests").
    """
    head = opening(text).lower()
    if not head:
        return None
    short = len(text.split()) <= SHORT_FOLLOW_UP_WORDS
    if _NEG_STRONG.search(head) or _NEG_START.search(head):
        return "negative"
    if short and _NEG_WEAK.search(head):
        return "negative"
    if _praise(head, short=short):
        return "positive"
    return None
