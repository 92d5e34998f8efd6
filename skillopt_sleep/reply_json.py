"""Pull one JSON value out of model text (bare, fenced, or embedded in prose). Written once.

Model text is untrusted: a reply nested deeper than the parser's recursion limit, or larger than
any answer we ask for, is malformed (None), never an exception that escapes into the night.
"""

from __future__ import annotations

import json
import re
from typing import Any

from skillopt_sleep.sanitize import no_surrogates

_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)
MAX_REPLY_CHARS = 200_000  # far above any reply we request (a few thousand tokens)
MAX_ATTEMPTS = 500  # embedded candidates tried; each failed try costs O(position) in ``json``
# Where an embedded object or array can start: ``{"`` / ``{}`` or ``[`` before a JSON value.
_START_RE = re.compile(r"\{(?=\s*[\"}])|\[(?=\s*[-0-9\"\[{tfn\]])")


class _TooDeep(Exception):
    pass


def _loads(text: str) -> Any:
    try:
        return no_surrogates(json.loads(text))
    except RecursionError:
        raise _TooDeep from None


def extract_json(text: str) -> Any:
    """Return the JSON object in ``text`` (the whole text, a fenced block, or the first object
    embedded in prose); failing that the first array; else None. Models answer with objects, so
    an object wins over an earlier bracketed aside such as "Task [1] failed"."""
    if not text or len(text) > MAX_REPLY_CHARS:
        return None
    try:
        return _extract(text)
    except _TooDeep:
        return None


def _extract(text: str) -> Any:
    candidates: list[Any] = []
    try:
        candidates.append(_loads(text.strip()))
    except ValueError:
        pass
    for block in _FENCE_RE.findall(text):
        try:
            candidates.append(_loads(block.strip()))
        except ValueError:
            continue
    for value in candidates:
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    first_list = next((v for v in candidates if isinstance(v, list)), None)
    i = attempts = 0
    while attempts < MAX_ATTEMPTS:
        start = _START_RE.search(text, i)
        if start is None:
            break
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, start.start())
        except ValueError:
            i = start.start() + 1
            continue
        except RecursionError:
            raise _TooDeep from None
        if isinstance(value, dict):
            return value
        if isinstance(value, list) and first_list is None:
            first_list = value
        i = end  # an object inside this array is part of it, not an answer of its own
    return first_list
