"""Pull one JSON value out of model text (bare, fenced, or embedded in prose). Written once."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """Return the JSON object in ``text`` (the whole text, a fenced block, or the first object
    embedded in prose); failing that the first array; else None. Models answer with objects, so
    an object wins over an earlier bracketed aside such as "Task [1] failed"."""
    if not text:
        return None
    candidates: list[Any] = []
    try:
        candidates.append(json.loads(text.strip()))
    except ValueError:
        pass
    for block in _FENCE_RE.findall(text):
        try:
            candidates.append(json.loads(block.strip()))
        except ValueError:
            continue
    for value in candidates:
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    first_list = next((v for v in candidates if isinstance(v, list)), None)
    i = 0
    while i < len(text):
        if text[i] in "{[":
            try:
                value, end = decoder.raw_decode(text, i)
            except ValueError:
                i += 1
                continue
            if isinstance(value, dict):
                return value
            if isinstance(value, list) and first_list is None:
                first_list = value
            i = end  # an object inside this array is part of it, not an answer of its own
            continue
        i += 1
    return first_list
