"""Feedback signals: does a user follow-up praise or complain about the previous reply?

All phrase lists live here. Precision over recall: a phrase only counts in the opening of the
message (its first line, first ``OPENING_CHARS`` characters), and the ambiguous ("weak") phrases
only in short follow-ups, where "it still fails" is a complaint rather than part of a new request
("... the way the parser still handles ...").

Corrections count as complaints, the way people write them: a demand that opens the message
("no TODOs", "no :latest tags", "never use console.log", "max 300 chars", "keep it to 3 lines"), or a short follow-up
that asks where something is ("where's the ## Testing section?") or says what it needs, and a short
follow-up with a clause naming the code idiom to use ("use pytest.mark.parametrize for the cases",
"you should use op.execute", "thanks! next time use `logger.exception` though"): said after a
reply, that corrects it rather than asking for new work, and wins over praise, while "use ripgrep
to find the callers" names no code and stays a request. Praise
that opens a message wins over a weak complaint word later in it ("lgtm, nice that you kept it
under 72 chars"), but not over "…, but …".

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
    "forgot",
    "you dropped",
    "you left out",
    "you left off",
    "is missing",
    "are missing",
    "way too",
    "too long",
    "too verbose",
    "too wordy",
    "too many",
    "too short",
)
# Complaints that only start a message ("No, use the other flag").
NEGATIVE_START = ("no,", "no.", "no!", "nope", "wrong", "undo", "revert that", "ugh")
# Demands that open a message ("never use X", "max 300 chars"), after an optional "please" / "and".
DEMAND_START = (
    "never",
    "always",
    "stop",
    "avoid",
    "drop",
    "remove",
    "without",
    "max",
    "at most",
    "no more than",
    "not more than",
    "keep it",
    "keep the",
    "keep them",
    "shorter",
    "longer",
    "don't",
    "dont",
    "do not",
    "get rid of",
    "limit it",
    "limit the",
    "cap it",
    "make it shorter",
    "make it longer",
    "make it at least",
    "it has to",
    "it must",
    "it needs to",
)
# "no <something>" opens a demand ("no TODOs", "no more than 2 lines") unless it is a courtesy.
NO_COURTESY = (
    "worries",
    "problem",
    "problems",
    "thanks",
    "thank",
    "idea",
    "rush",
    "hurry",
    "need",
    "pressure",
    "clue",
    "mind",
)
# Ambiguous complaint words: counted only in short follow-ups.
NEGATIVE_WEAK = (
    "wrong",
    "incorrect",
    "missing",
    "don't",
    "do not",
    "still",
    "again",
    "broke",
    "broken",
    "needs",
    "always",
    "should be",
    "should include",
    "should contain",
    "must",
    "there's no",
    "there is no",
    "at most",
    "no more than",
    "max",
    "under",
    "remember",
    "without",
    "avoid",
    "shorter",
    "longer",
)

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
_DEMAND_START = re.compile(
    r"^\W*(?:(?:please|also|and|oh|ok|okay)\W+)?(?:"
    + "|".join(re.escape(p) for p in sorted(DEMAND_START, key=len, reverse=True))
    + r")(?![\w'])(?!\s+mind\b)"
    + r"|^\W*(?:(?:please|also|and|oh|ok|okay)\W+)?no\s+(?!(?:"
    + "|".join(NO_COURTESY)
    + r")\b)(?:[\w\[\"'`“#@]|[:.-]{1,2}[a-z])"
)
# "where's the ## Testing section?", "where is the issue link?": asking for a part of the reply.
_WHERE_IS = re.compile(
    r"\bwhere(?:'s|\s+is|\s+are)\s+(?:the|my|our|a)\b[^?]{0,60}?(?:#|\b(?:section|heading|line|trailer|"
    r"footer|link|ticket|reference|tag|label|sign-?off|key|id|number|entry|note)s?\b)"
)
# Code a person names as the idiom to use: `quoted`, a dotted name (logger.exception, not a file
# name such as NOTES.md), a @decorator, a --flag (with its command: COPY --chown), a __dunder__.
FILE_SUFFIXES = ("md", "py", "txt", "json", "toml", "yml", "yaml", "lock", "cfg", "ini", "sh", "js", "ts", "sql", "env")
IDIOM = (
    r"(?:`[^`\n]{1,80}`|@[A-Za-z_][\w.]*|(?:[A-Z][A-Z0-9_]*[ \t]+)?--[a-z][\w-]*|__\w+__"
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\.(?!(?:" + "|".join(FILE_SUFFIXES) + r")\b)[A-Za-z_]\w*(?:\(\))?)"
)
# Where a clause may name the idiom to use: the message's start, after punctuation, or after "but",
# "though", "next time", "please" ("thanks! next time use pytest.mark.parametrize though"); not
# after a noun ("nice use of logger.exception" is praise).
_USE_IDIOM = re.compile(
    r"(?:^|[,.;:!?—–-][ \t]*|\b(?:but|though|next time|please|pls|plz|just|ok|okay)[ \t]+)\W*"
    r"(?:(?:you|we|we're|we are|here we)[ \t]+)?(?:(?:should|must|need to|have to|always|better)[ \t]+)?"
    r"(?:to[ \t]+)?(?:use|using|prefer|switch to|stick (?:to|with)|go with)[ \t]+(?:(?:the|a|an)[ \t]+)?"
    + IDIOM
    + r"(?![\w-])",
    re.I,
)
_BUT = re.compile(r"^[^.!?]{0,40}?\bbut\b")
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
    if _NEG_STRONG.search(head) or _NEG_START.search(head) or _DEMAND_START.search(head):
        return "negative"
    if short and (_WHERE_IS.search(head) or _USE_IDIOM.search(head)):
        return "negative"
    if _praise(head, short=False):
        return "negative" if _BUT.search(head) else "positive"
    if short and _NEG_WEAK.search(head):
        return "negative"
    if _praise(head, short=short):
        return "positive"
    return None
