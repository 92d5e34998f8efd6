"""Answering a handoff night's prompt files from their text alone, as a person's agent would:
``answer_all(folder, reply)`` writes ``answers/<key>.md`` for each waiting prompt; and reading what
the engine prints, for the tests whose scripted model drives a real agent's sub-agents through a
night (``tests/plugins/test_*_handoff.py``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCHEMA = re.compile(r"```json\n(.*?)\n```", re.S)
# What the engine prints for each prompt that waits, and the line of a prompt naming its answer file.
PROMPT_LINE = re.compile(r"^skillopt-sleep: prompt: (.+\.md)$", re.M)
ANSWER_FILE = re.compile(r"^Answer file: (.+\.md)$", re.M)
# The task the scripted model gives each sub-agent: one prompt file, nothing else.
SUB_AGENT = re.compile(r"Read (/\S.*?\.md) and do exactly what it says")
FINISHED = "prompt(s) answered by your agent over"


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


def sub_agent_task(prompt_file: str) -> str:
    """What a sub-agent is told: read that prompt file and do what it says."""
    return f"Read {prompt_file} and do exactly what it says."


def asked_prompt(text: str) -> str | None:
    """The prompt file a sub-agent's task names, if ``text`` is one."""
    match = SUB_AGENT.search(text)
    return match.group(1) if match else None


def answer_to(prompt: str) -> tuple[str, str]:
    """(the answer file a prompt names, the reply made from its text alone)."""
    match = ANSWER_FILE.search(prompt)
    if match is None:
        raise ValueError("the prompt names no answer file")
    return match.group(1), plain(prompt)


def listed_prompts(output: str) -> list[str]:
    """The prompt files a run of the engine listed as waiting, in order."""
    return PROMPT_LINE.findall(output)


def stopped_rounds(outputs: list[str]) -> list[list[str]]:
    """The prompt files of each run of the engine that stopped for answers, in order."""
    return [listed for out in outputs if (listed := listed_prompts(out))]


def finished_line(prompts: int, rounds: int) -> str:
    """What the report of a night answered over ``rounds`` rounds says."""
    return f"handoff: {prompts} {FINISHED} {rounds} round(s)"
