"""The simulator as the *target* model: it answers a task under the documents it is shown."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.sim.knobs import SimKnobs
from skillopt_sleep.backends.sim.latent import Chance, independent, task_chance
from skillopt_sleep.backends.sim.reading import (
    Directive,
    applicable,
    cap_from,
    include_asks,
    parse_documents,
    rule_count,
    stances,
    summarize,
    task_text,
)
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
    everything = parse_documents(documents)
    view = DocumentView(applicable(everything, task_text(task)), knobs.effective_follow(rule_count(everything)))
    rng = knobs.rng("attempt", task.get("id"), request.sample, documents)
    judge = task.get("judge") or {}
    chance = task_chance(knobs.rng, knobs.corr, knobs.drift, task.get("id"), documents)
    if judge.get("kind", "rule") != "rule":
        reference = task.get("reference", "")
        covered = any(reference and reference.lower() in d.text.lower() for d in view.directives)
        hit = rng.random() < chance("reference", view.follow if covered else knobs.base)
        return (reference if hit else rng.choice(FILLER)), []
    points = substance_points(str(task.get("id")), knobs.substance)
    return render(knobs, judge.get("checks") or [], view, rng, chance, points)


@dataclass(frozen=True)
class DocumentView:
    """What the documents tell the model for one task: the directives that apply to it and the
    follow rate left after instruction overload."""

    directives: list[Directive]
    follow: float


def check_probability(knobs: SimKnobs, check: dict[str, Any], view: DocumentView) -> float:
    """How likely the response satisfies one check, given how the documents speak to it."""
    found = stances(check, view.directives)
    if knobs.leak is not None and check["op"] == "not_contains":
        # an "always include X" line reaches a task that forbids X by leaking (``leaked``), not by
        # being read as an instruction about this task
        found = [(s, d) for s, d in found if s or not include_asks(d)]
    state = summarize(found)
    follow = view.follow
    if check["op"] == "no_refusal" and state == "none":
        return knobs.follow  # models do not refuse ordinary work unprompted
    if state == "covered":
        return follow
    if state == "conflict":
        return 1.0 - follow
    if state == "mixed":
        rule_side = {s for s, d in found if d.learned}
        hand_side = {s for s, d in found if not d.learned}
        if knobs.conflict is not None and len(rule_side) == 1 and hand_side == {not s for s in rule_side}:
            # a rule against a hand-written line: the rule wins with probability ``conflict``, and
            # the winner is then followed like any directive
            wins = knobs.conflict * follow + (1 - knobs.conflict) * (1 - follow)
            return wins if rule_side == {True} else 1.0 - wins
        return 0.5  # contradictory instructions: a coin flip
    return knobs.base


def leaked(knobs: SimKnobs, checks: list[dict[str, Any]], view: DocumentView, rng: random.Random) -> list[str]:
    """What "always include X" lines that apply to the task push into a response whose checks do not
    ask for X: each such X with probability ``leak``."""
    if knobs.leak is None:
        return []
    asked = {str(c.get("arg")).lower() for c in checks if c["op"] in ("contains", "section_present")}
    asked |= {str(c["arg"]["text"]).lower() for c in checks if c["op"] == "section_contains"}
    asked |= {str(c["arg"]["section"]).lower() for c in checks if c["op"] == "section_contains"}
    out = []
    for directive in view.directives:
        for wanted in include_asks(directive):
            if wanted.lower() not in asked and rng.random() < knobs.leak:
                out.append(wanted)
    return out


SUBJECTS = (
    "the rollback plan",
    "the migration order",
    "the failure modes",
    "the edge cases",
    "the data owners",
    "the retry budget",
    "the test evidence",
    "the open risks",
    "the upgrade path",
    "the trade-offs",
    "the error handling",
    "the follow-up work",
    "the performance cost",
    "the security impact",
)


def substance_points(task_id: str, n: int) -> list[str]:
    """The ``n`` points of substance an answer to ``task_id`` makes (``substance``): sentences
    the work needs that no check asks for, the same for every answer to the task."""
    rng = random.Random(hashlib.sha256(f"substance:{task_id}".encode()).digest())
    # the first n of the 12 the judge looks for (random.sample draws a pool of this size in order)
    subjects = rng.sample(SUBJECTS, k=min(n, len(SUBJECTS)))
    return [f"Point {i + 1}: {subject} matter here." for i, subject in enumerate(subjects)]


def render(
    knobs: SimKnobs,
    checks: list[dict[str, Any]],
    view: DocumentView,
    rng: random.Random,
    chance: Chance = independent,
    points: list[str] | None = None,
) -> tuple[str, list[str]]:
    """A real text response (and tools called) that satisfies each check with its probability,
    making the task's points of substance after what the checks ask for (a length cap cuts them
    first)."""
    ok = {i: rng.random() < chance(i, check_probability(knobs, c, view)) for i, c in enumerate(checks)}
    head: list[str] = []
    body: list[str] = []
    sections: dict[str, list[str]] = {}
    tools: list[str] = []
    max_len = min_len = None
    arg: Any  # its type depends on the check's op
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
        elif op == "max_chars" and sat and not knobs.verbose:
            max_len = arg if max_len is None else min(max_len, arg)
        elif op == "min_chars" and sat:
            min_len = arg if min_len is None else max(min_len, arg)
    body += leaked(knobs, checks, view, rng)
    filler = [rng.choice(FILLER) for _ in range(rng.randint(1, 3))]
    core = "\n".join(head + body + list(points or ()))
    rest = "".join(f"\n\n## {name}\n" + "\n".join(lines) for name, lines in sections.items())
    text = (core + "\n\n" + " ".join(filler) + rest).strip()
    while len(text) < knobs.verbose:
        filler.append(rng.choice(FILLER))
        text = (core + "\n\n" + " ".join(filler) + rest).strip()
    if min_len is not None:
        while len(text) < min_len:
            text += " " + rng.choice(FILLER)
    essentials = (core + rest).strip() or filler[0]  # a brief answer is still an answer
    if max_len is not None and len(text) > max_len:
        text = essentials
        if len(text) > max_len:
            text = text[:max_len].rstrip()
    cap = cap_from(view.directives)
    if cap is not None and len(text) > cap and rng.random() < chance("cap", view.follow):
        if knobs.verbose:  # a verbose model asked to be brief drops its padding before content
            text = essentials
            while min_len is not None and len(text) < min_len:
                text += " " + rng.choice(FILLER)
        text = text[:cap].rstrip() or text.split()[0]
    return text, tools
