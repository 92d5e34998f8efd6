"""A look at a transcript line's top-level ``"type"`` before parsing it, so that records which
cannot matter (API request shapes and blobs, world state, compaction copies, token counts,
reasoning, tool output, …) are never decoded.

Most of a real transcript's bytes are such records, and most of them name their type before any
nested value: ``{"type":"api-request-shape",…`` (Claude Code), ``{"timestamp":"…","type":
"world_state","payload":{…`` (Codex). ``peek`` finds that pair with a few C substring searches
and reads the scalar pairs before it; a line whose type comes after a nested value (an
attachment's body) is simply parsed.

Why this is exact: a ``"`` inside a JSON string is always escaped, so ``"type":"`` preceded by
``{`` or ``,`` is a key, and with no ``{`` or ``[`` anywhere before it the key is at the top
level. A parser drops a record only when what it would have read from it is in the pairs before
the type or provably absent from the rest (see each parser's ``drop``). A dropped line is not
validated beyond that (a line cut short is not dropped: it does not end with ``}``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .decode import decode_json_line

_TYPE_KEY = b'"type":"'
TYPE_WITHIN = 1024  # the type pair is looked for in a line's first bytes only
MAX_TYPE_LEN = 64


@dataclass
class Peek:
    kind: str  # the record's top-level "type"
    at: int  # offset of the type's key in the line
    rest: int  # offset just after the type's closing quote

    def head(self, line: bytes) -> dict[str, Any] | None:
        """The scalar pairs before the type (None if they do not decode)."""
        if self.at <= 1:
            return {}
        status, value = decode_json_line(line[: self.at - 1] + b"}")
        return value if status == "ok" else None


def peek(line: bytes) -> Peek | None:
    """The top-level type of a line that names it before any nested value, or None."""
    at = line.find(_TYPE_KEY, 0, TYPE_WITHIN)
    if at < 1 or line[at - 1] not in b"{," or line[0] != 0x7B:  # "{"
        return None
    if line.find(b"{", 1, at) != -1 or line.find(b"[", 1, at) != -1:
        return None  # a nested value before it: this "type" may not be the record's
    start = at + len(_TYPE_KEY)
    end = line.find(b'"', start, start + MAX_TYPE_LEN + 1)
    if end == -1 or line.find(b"\\", start, end) != -1:
        return None
    if not line.rstrip(b" \t\r").endswith(b"}"):
        return None  # cut short
    try:
        kind = line[start:end].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return Peek(kind, at, end + 1)
