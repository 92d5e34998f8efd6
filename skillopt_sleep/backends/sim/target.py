"""The simulator as the *target* model: it answers a task under the documents it is shown."""

from __future__ import annotations

import random
from typing import Any

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.sim.knobs import SimKnobs
from skillopt_sleep.backends.sim.reading import cap_from, coverage, directive_lines
from skillopt_sleep.backends.sim.regex_gen import regex_example

FILLER = (
    "I went through the change set and kept the wording close to what the repository already uses.",
    "The summary below reflects the diff as it stands on this branch.",
    "Nothing here changes behaviour outside the files mentioned.",
    "I double-checked the naming against the existing conventions in the codebase.",
    "Let me know if you want a shorter or a more detailed version.",
    "The main motivation is to keep the history easy to scan for reviewers.",
)


def attempt(knobs: SimKnobs, request: Request) -> tuple[str, list[str]]:
    """A response to the request's task and the tools it called."""
    task = request.payload.get("task") or {}
    documents = request.payload.get("documents") or ""
    directives = directive_lines(documents)
    rng = knobs.rng("attempt", task.get("id"), request.sample, documents)
    judge = task.get("judge") or {}
    if judge.get("kind", "rule") != "rule":
        reference = task.get("reference", "")
        covered = any(reference and reference.lower() in d.lower() for d in directives)
        hit = rng.random() < (knobs.follow if covered else knobs.base)
        return (reference if hit else rng.choice(FILLER)), []
    return render(knobs, judge.get("checks") or [], directives, rng)


def check_probability(knobs: SimKnobs, check: dict[str, Any], directives: list[str]) -> float:
    """How likely the response satisfies one check, given how the documents speak to it."""
    stance = coverage(check, directives)
    if check["op"] == "no_refusal" and stance == "none":
        stance = "covered"  # models do not refuse ordinary work unprompted
    if stance == "covered":
        return knobs.follow
    if stance == "conflict":
        return 1.0 - knobs.follow
    if stance == "mixed":  # contradictory instructions: a coin flip
        return 0.5
    return knobs.base


def render(knobs: SimKnobs, checks: list[dict[str, Any]], directives: list[str],
           rng: random.Random) -> tuple[str, list[str]]:
    """A real text response (and tools called) that satisfies each check with its probability."""
    ok = {i: rng.random() < check_probability(knobs, c, directives) for i, c in enumerate(checks)}
    head: list[str] = []
    body: list[str] = []
    tail: list[str] = []
    sections: dict[str, list[str]] = {}
    tools: list[str] = []
    max_len = min_len = None
    for i, check in enumerate(checks):
        op, arg, sat = check["op"], check.get("arg"), ok[i]
        if op == "contains" and sat:
            body.append(f"{arg}")
        elif op == "not_contains" and not sat:
            body.append(f"Also covers {arg}.")
        elif op == "section_present" and sat:
            sections.setdefault(arg, []).append("Details for this part are below.")
        elif op == "section_contains":
            section, text = arg["section"], arg["text"]
            sections.setdefault(section, []).append(text if sat else "To be filled in.")
        elif op == "regex" and sat:
            example = regex_example(arg, rng)
            if example is not None:
                head.append(example)
        elif op == "no_refusal" and not sat:
            head.insert(0, "I'm sorry, but I can't help with that.")
        elif op == "tool_called" and sat:
            tools.append(arg)
        elif op == "max_chars" and sat:
            max_len = arg if max_len is None else min(max_len, arg)
        elif op == "min_chars" and sat:
            min_len = arg if min_len is None else max(min_len, arg)
    filler = [rng.choice(FILLER) for _ in range(rng.randint(1, 3))]
    core = "\n".join(head + body)
    rest = "".join(f"\n\n## {name}\n" + "\n".join(lines) for name, lines in sections.items())
    text = (core + "\n\n" + " ".join(filler) + rest + ("\n" + "\n".join(tail) if tail else "")).strip()
    if min_len is not None:
        while len(text) < min_len:
            text += " " + rng.choice(FILLER)
    if max_len is not None and len(text) > max_len:
        text = (core + rest).strip()
        if len(text) > max_len:
            text = text[:max_len].rstrip()
    cap = cap_from(directives)
    if cap is not None and len(text) > cap and rng.random() < knobs.follow:
        text = text[:cap].rstrip()
    return text, tools
