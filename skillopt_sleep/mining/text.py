"""Words of a request: the content words that clustering, labels and task ids are built from."""

from __future__ import annotations

import re

STOPWORDS = frozenset(
    """a an the and or but if then else for to of in on at by with from into onto about as is are was
    were be been being it its this that these those i me my we our you your he she they them their
    please can could would should will shall may might must do does did done have has had not no
    yes so just also too very some any all each every more most less few other such own same than
    up down out over again further once here there when where why how what which who whom whose
    let lets us go get got make made new one two now today tomorrow yesterday hey hi thanks thank ok
    okay right want need like use using used im ive id dont doesnt isnt""".split()
)
HEAD_SPLIT_RE = re.compile(r"\b(?:for|about|of|on|in|from|to|that|with|where|which|because)\b")
WORD_RE = re.compile(r"[a-z][a-z0-9_+-]{1,}")


def stem(word: str) -> str:
    for suffix in ("ing", "es", "ed", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def signature(text: str) -> frozenset[str]:
    """Content words of a request, lower-cased and lightly stemmed."""
    words = WORD_RE.findall(text.lower()[:2000])
    return frozenset(stem(w) for w in words if w not in STOPWORDS and not w.isdigit())


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
