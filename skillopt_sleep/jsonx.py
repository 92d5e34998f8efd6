"""Pull one JSON value out of model text (bare, fenced, or embedded in prose). Written once."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """Return the first JSON object/array found in ``text``, or None."""
    if not text:
        return None
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    for block in _FENCE_RE.findall(text):
        try:
            return json.loads(block.strip())
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(text, i)
            except ValueError:
                continue
            if isinstance(value, (dict, list)):
                return value
    return None
