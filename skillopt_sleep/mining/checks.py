"""Rule checks implied by a user's complaints about a reply."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# Single quotes only when they are not apostrophes: "Don't add 'WIP', it's noise" quotes WIP alone.
QUOTED_RE = re.compile(
    r'"([^"\n]{1,80})"|“([^”\n]{1,80})”|`([^`\n]{1,80})`|(?<![A-Za-z])\'([^\'\n]{2,80})\'(?![A-Za-z])'
)
REMINDER_RE = re.compile(r"\b(?:don'?t|do not|never) forget\b|\bremember\b", re.I)  # a positive cue
NEGATIVE_CUE_RE = re.compile(r"\b(don'?t|do not|never|no more|stop|remove|without|drop|avoid|get rid of|not use)\b", re.I)
POSITIVE_CUE_RE = re.compile(
    r"\b(forgot|forget|missing|include|add|needs?|should (?:have|include|contain)|always|where(?:'s| is)|lacks?|put)\b",
    re.I,
)
CAP_RE = re.compile(
    r"\b(?:under|at most|no more than|max(?:imum)?(?: of)?|within|keep (?:it|them|the \w+) (?:to|under)|shorter than|fewer than)\s+(\d{1,5})\s*(?:characters|chars)\b",
    re.I,
)
FIRST_LINE_RE = re.compile(r"\b(subject|title|first line|summary line|headline|header line)\b", re.I)
FLOOR_RE = re.compile(r"\b(?:at least|minimum of|no fewer than|longer than)\s+(\d{1,5})\s*(?:characters|chars)\b", re.I)
SECTION_RE = re.compile(
    r"(?:#{1,6}\s*([A-Z][\w /&-]{1,40}?)\s*(?:section|heading)\b)|(?:\b(?:section|heading)\s+(?:called|named|headed|titled)\s+[\"“`']?#*\s*([\w /&-]{2,40}?)[\"”`']?(?=[\s.,;!?]|$))",
)


def checks_from_feedback(texts: Iterable[str]) -> list[dict[str, Any]]:
    """Rule checks a user's complaints imply. Precision over recall: unclear phrases give none."""
    checks: list[dict[str, Any]] = []

    def add(check: dict[str, Any]) -> None:
        if check not in checks:
            checks.append(check)

    for text in texts:
        for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
            for m in CAP_RE.finditer(sentence):
                limit = int(m.group(1))
                if FIRST_LINE_RE.search(sentence[: m.start()]):  # "keep the subject under 50 chars"
                    add({"op": "regex", "arg": rf"\A[^\n]{{1,{limit}}}(?:\n|\Z)"})
                else:
                    add({"op": "max_chars", "arg": limit})
            for m in FLOOR_RE.finditer(sentence):
                add({"op": "min_chars", "arg": int(m.group(1))})
            for m in SECTION_RE.finditer(sentence):
                name = (m.group(1) or m.group(2) or "").strip()
                if name:
                    add({"op": "section_present", "arg": name})
            for m in QUOTED_RE.finditer(sentence):
                value = next(g for g in m.groups() if g is not None).strip()
                if not value or value.startswith("#"):
                    if value.startswith("#") and value.lstrip("# ").strip():
                        add({"op": "section_present", "arg": value.lstrip("# ").strip()})
                    continue
                before = sentence[: m.start()]
                if REMINDER_RE.search(before):
                    add({"op": "contains", "arg": value})
                elif NEGATIVE_CUE_RE.search(before):
                    add({"op": "not_contains", "arg": value})
                elif POSITIVE_CUE_RE.search(before):
                    add({"op": "contains", "arg": value})
    return checks
