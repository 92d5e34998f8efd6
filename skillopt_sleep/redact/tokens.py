"""Pass 1: tokens with a documented prefix or fixed structure (``shapes``), redacted wherever
they appear. One scan finds candidate runs of token characters; only a candidate that starts with
a known prefix (one C ``startswith`` over all of them) is matched against its shape.
"""

from __future__ import annotations

import re

from .shapes import CANDIDATE, INFIX_SHAPES, PREFIXES, SHAPES
from .values import mark

_RUN = re.compile(CANDIDATE.pattern.split(")", 1)[1])  # a candidate, without its left boundary
# A known prefix right after a separator inside a candidate (``token-ghp_...``, ``id.AKIA...``).
_INNER_PREFIX = re.compile(r"[._~\-](?=" + "|".join(re.escape(p) for p in PREFIXES) + ")")


def _shape_at(text: str, start: int) -> tuple[str, int, int] | None:
    for shape in SHAPES:
        if text.startswith(shape.prefixes, start):
            m = shape.pattern.match(text, start)
            if m is not None and (shape.check is None or shape.check(m.group())):
                return shape.kind, m.start(), m.end()
    return None


def _find_token(text: str, candidate: re.Match[str], done: int) -> tuple[str, int, int] | None:
    start, token = candidate.start(), candidate.group()
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
            m = shape.pattern.search(text, max(start - 3, done), candidate.end())
            if m is not None:
                return shape.kind, m.start(), m.end()
    return None


def redact_tokens(text: str) -> str:
    pieces: list[str] = []
    done = pos = 0
    candidate = CANDIDATE.search(text)
    while candidate is not None:
        found = _find_token(text, candidate, done)
        if found is None:
            candidate = CANDIDATE.search(text, candidate.end())
            continue
        kind, begin, end = found
        pieces += [text[done:begin], mark(kind)]
        done = pos = max(end, begin + 1)
        # the rest of the run may hold another token (``<token>-<token>``)
        candidate = _RUN.match(text, pos) or CANDIDATE.search(text, pos)
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)
