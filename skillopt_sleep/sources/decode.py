"""Decode one transcript line: the whole JSON object, or only the fields a parser reads from it.

``msgspec`` decodes a line into Python objects a little faster than ``orjson`` did and, given a
``TypedDict`` type, builds only the fields that type names: every other value is skipped —
checked, never built —, which makes a record with tool output, an attachment or instructions
several times cheaper (``scripts/bench_harvest.py``).

The outcome — a value, or the reason the line is skipped — is always the one ``json`` gives.
``msgspec`` is stricter, never looser, with one exception handled here: it does not check that a
*skipped* string is valid UTF-8, so a partial decode of a non-ASCII line checks the line's UTF-8
itself. Whatever ``msgspec`` refuses (a lone surrogate escape, ``NaN``, nesting past its limit)
is decoded again by ``json``.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from ..sanitize import no_surrogates

_ANY = msgspec.json.Decoder()
_REFUSED = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)


def decode_json_line(line: bytes) -> tuple[str, Any]:
    """Return ("ok", dict) or (skip reason, None). Never raises."""
    try:
        value = _ANY.decode(line)
    except _REFUSED:
        return _decode_with_json(line)
    return ("ok", value) if isinstance(value, dict) else ("not_object", None)


def decode_record(line: bytes, fields: msgspec.json.Decoder[Any] | None) -> tuple[str, Any]:
    """``decode_json_line``, building only what ``fields`` (a decoder of a ``TypedDict``) names.

    The status is the one ``decode_json_line`` gives; with "ok" the dict holds those of the named
    fields the line has, with the values ``json`` reads. Everything else in the line is checked
    (as JSON, and as UTF-8 here) but never built."""
    if fields is None:
        return decode_json_line(line)
    try:
        value = fields.decode(line)
    except _REFUSED:
        return decode_json_line(line)
    if not line.isascii():
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return "bad_utf8", None
    return "ok", value


def _decode_with_json(line: bytes) -> tuple[str, Any]:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return "bad_utf8", None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return "malformed_json", None
    if not isinstance(value, dict):
        return "not_object", None
    if "\\u" in text:  # only an escape can smuggle a lone surrogate into valid UTF-8 input
        value = no_surrogates(value)
    return "ok", value
