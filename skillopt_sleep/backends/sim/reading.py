"""How the simulated model reads the documents it is shown: which lines speak to a check, and
whether they ask for it or against it."""

from __future__ import annotations

import re
from typing import Any

NEGATION_RE = re.compile(r"\b(never|don'?t|do not|avoid|without|no longer|must not|omit|drop)\b", re.I)
CAP_RE = re.compile(
    r"\b(?:at most|under|no more than|within|maximum of|max(?:imum)?|fewer than|up to)\s+(\d+)\s*(?:characters|chars)\b",
    re.I,
)
FLOOR_RE = re.compile(r"\b(?:at least|minimum of|no fewer than|more than)\s+(\d+)\s*(?:characters|chars)\b", re.I)


def directive_lines(documents: str) -> list[str]:
    """The documents' non-blank lines, stripped: each one an instruction the model may follow."""
    return [ln.strip() for ln in documents.splitlines() if ln.strip()]


def _mentions(directive: str, needle: str) -> bool:
    return needle.lower() in directive.lower()


def coverage(check: dict[str, Any], directives: list[str]) -> str:
    """How the documents speak to one check: "covered", "conflict", "mixed" or "none"."""
    op, arg = check["op"], check.get("arg")
    seen: set[bool] = set()

    def see(positive: bool) -> None:
        seen.add(positive)

    for d in directives:
        negated = NEGATION_RE.search(d) is not None
        if op == "contains" and _mentions(d, arg):
            see(not negated)
        elif op == "not_contains" and _mentions(d, arg):
            see(negated)
        elif op == "section_present" and _mentions(d, arg) and re.search(r"section|heading", d, re.I):
            see(not negated)
        elif op == "section_contains" and _mentions(d, arg["section"]) and _mentions(d, arg["text"]):
            see(not negated)
        elif op == "regex" and arg in d:
            see(True)
        elif op == "tool_called" and _mentions(d, arg) and re.search(r"\b(tool|use|run|call)\b", d, re.I):
            see(not negated)
        elif op == "max_chars":
            for m in CAP_RE.finditer(d):
                if int(m.group(1)) <= arg:
                    see(True)
        elif op == "min_chars":
            for m in FLOOR_RE.finditer(d):
                if int(m.group(1)) >= arg:
                    see(True)
            for m in CAP_RE.finditer(d):
                if int(m.group(1)) < arg:
                    see(False)
    if seen == {True, False}:
        return "mixed"
    return "covered" if True in seen else "conflict" if False in seen else "none"


def cap_from(directives: list[str]) -> int | None:
    caps = [int(m.group(1)) for d in directives for m in CAP_RE.finditer(d)]
    return min(caps) if caps else None
