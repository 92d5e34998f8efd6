"""Pass 1: tokens with a documented prefix or fixed structure (``shapes``), redacted wherever
they appear. One scan finds candidate runs of token characters; only a candidate that starts with
a known prefix (one C ``startswith`` over all of them) is matched against its shape.
"""

from __future__ import annotations

import re

from .shapes import INFIX_SHAPES, PREFIXES, SHAPES
from .values import mark

# A known prefix right after a separator inside a candidate (``token-ghp_...``, ``id.AKIA...``).
_INNER_PREFIX = re.compile(r"[._~\-](?=" + "|".join(re.escape(p) for p in PREFIXES) + ")")


def _shape_at(text: str, start: int) -> tuple[str, int, int] | None:
    for shape in SHAPES:
        if text.startswith(shape.prefixes, start):
            m = shape.pattern.match(text, start)
            if m is not None and (shape.check is None or shape.check(m.group())):
                return shape.kind, m.start(), m.end()
    return None


# Candidates are found on a copy of the text in which every token character is "a": a run of
# 20 "a" is a C substring search away, where CANDIDATE's character class is tried at every
# position (the hot path of a harvest: most text holds no candidate at all).
_TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.~-"
_AS_A = str.maketrans(dict.fromkeys(_TOKEN_CHARS, "a"))
_MIN_RUN = 20  # CANDIDATE's shortest run
_MAPPED_RUN = re.compile("a" * _MIN_RUN + "a*")


def _run_at(mapped: str, pos: int) -> tuple[int, int] | None:
    """A run of at least ``_MIN_RUN`` token characters starting exactly at ``pos`` (``_RUN``)."""
    m = _MAPPED_RUN.match(mapped, pos)
    return (m.start(), m.end()) if m is not None else None


def _next_candidate(mapped: str, pos: int) -> tuple[int, int] | None:
    """The first whole run at or after ``pos`` (``CANDIDATE.search``: a run's tail is not one)."""
    m = _MAPPED_RUN.search(mapped, pos)
    while m is not None and m.start() > 0 and mapped[m.start() - 1] == "a":
        m = _MAPPED_RUN.search(mapped, m.end())
    return (m.start(), m.end()) if m is not None else None


def _find_token(text: str, start: int, end: int, done: int) -> tuple[str, int, int] | None:
    token = text[start:end]
    if token.startswith(PREFIXES):
        found = _shape_at(text, start)
        if found is not None:
            return found
    for inner in _INNER_PREFIX.finditer(token):
        found = _shape_at(text, start + inner.end())
        if found is not None:
            return found
    for infix, shape in INFIX_SHAPES:
        if infix in token:
            m = shape.pattern.search(text, max(start - 3, done), end)
            if m is not None and (shape.check is None or shape.check(m.group())):
                return shape.kind, m.start(), m.end()
    return None


def redact_tokens(text: str) -> str:
    if len(text) < _MIN_RUN:
        return text
    mapped = text.translate(_AS_A)
    if "a" * _MIN_RUN not in mapped:
        return text
    pieces: list[str] = []
    done = pos = 0
    candidate = _next_candidate(mapped, 0)
    while candidate is not None:
        found = _find_token(text, candidate[0], candidate[1], done)
        if found is None:
            candidate = _next_candidate(mapped, candidate[1])
            continue
        kind, begin, end = found
        pieces += [text[done:begin], mark(kind)]
        done = pos = max(end, begin + 1)
        # the rest of the run may hold another token (``<token>-<token>``)
        candidate = _run_at(mapped, pos) or _next_candidate(mapped, pos)
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)
