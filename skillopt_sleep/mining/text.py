"""Words of a request: the content words that clustering, labels and task ids are built from.

Before words are compared, the abbreviations and spelling variants people use for the same piece
of work are written one way ("commit msg" = "commit message", "PR desc" = "pull request
description", "relnotes" = "release notes", "UTs" = "unit tests"). This is a short, fixed list of
spellings, not a thesaurus: "summary" and "description" stay different words.
"""

from __future__ import annotations

import re
from functools import lru_cache

STOPWORDS = frozenset(
    """a an the and or but if then else for to of in on at by with from into onto about as is are was
    were be been being it its this that these those i me my we our you your he she they them their
    please can could would should will shall may might must do does did done have has had not no
    yes so just also too very some any all each every more most less few other such own same than
    up down out over again further once here there when where why how what which who whom whose
    let lets us go get got make made new one two now today tomorrow yesterday hey hi thanks thank ok
    okay right want need like use using used im ive id dont doesnt isnt pls plz thx quick quickly""".split()
)
# Verbs that ask for any kind of work: "write the commit message" and "draft the commit message" are
# one kind of task, "add a test" and "add a README example" are not.
GENERIC_VERBS = frozenset(
    "write add draft create make prepare compose give generate produce put together fill suggest update do".split()
)
SPELLINGS = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (r"\bmsgs?\b", "message"),
        (r"\bdescr?s?\b", "description"),
        (r"\bpull[ -]requests?\b|\bprs\b", "pr"),
        (r"\brel(?:ease)?[ -]?notes\b", "release notes"),
        (r"\buts\b", "unit tests"),
        (r"\but\b", "unit test"),
        (r"\bdocs\b|\bdocumentation\b", "doc"),
        (r"\bchange[ -]log\b", "changelog"),
        (r"\bread[ -]?me\b", "readme"),
    )
)
HEAD_SPLIT_RE = re.compile(r"\b(?:for|about|of|on|in|from|to|that|with|where|which|because)\b")
WORD_RE = re.compile(r"[a-z][a-z0-9_+-]{1,}")


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light stem: "messages", "message" -> "messag"; "staged", "staging", "stage" -> "stag"."""
    for suffix in ("ing", "es", "ed", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 4 and word.endswith("e") else word


def canonical(text: str) -> str:
    """Lower-cased text with the variant spellings of ``SPELLINGS`` written one way."""
    text = text.lower()[:2000]
    for pattern, replacement in SPELLINGS:
        text = pattern.sub(replacement, text)
    return text


def signature(text: str) -> frozenset[str]:
    """Content words of a request (no generic verbs), lower-cased, spelled one way, lightly stemmed."""
    words = WORD_RE.findall(canonical(text))
    return frozenset(stem(w) for w in words if w not in STOPWORDS and w not in GENERIC_VERBS and not w.isdigit())


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
