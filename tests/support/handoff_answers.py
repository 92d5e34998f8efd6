"""Answering a handoff night's prompt files from their text alone, as a person's agent would:
``answer_all(folder, reply)`` writes ``answers/<key>.md`` for each waiting prompt."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCHEMA = re.compile(r"```json\n(.*?)\n```", re.S)


def smallest(schema: dict[str, Any]) -> Any:
    """The smallest value a JSON schema accepts (required fields only)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: smallest(props.get(name, {})) for name in schema.get("required") or []}
    return {"array": [], "string": "", "integer": 0, "number": 0, "boolean": False, "null": None}.get(kind, None)


def schema_of(prompt: str) -> dict[str, Any] | None:
    match = SCHEMA.search(prompt)
    return json.loads(match.group(1)) if match else None


def plain(prompt: str) -> str:
    """A reply from the prompt's text: the smallest JSON its schema accepts, else a short answer."""
    schema = schema_of(prompt)
    return json.dumps(smallest(schema)) if schema is not None else "Done."


def answer_all(folder: Path, reply: Callable[[str], str] = plain) -> int:
    """Answer every prompt that waits; how many were answered."""
    answered = 0
    for prompt in sorted((folder / "prompts").glob("*.md")):
        answer = folder / "answers" / prompt.name
        if answer.exists():
            continue
        answer.parent.mkdir(parents=True, exist_ok=True)
        answer.write_text(reply(prompt.read_text(encoding="utf-8")), encoding="utf-8")
        answered += 1
    return answered
