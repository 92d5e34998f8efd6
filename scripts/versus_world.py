"""The simulated world ``bench_versus.py`` runs both engines in: its tasks, its model (the ``sim``
backend's reading of documents, answering and optimizing) and its exact ground truth.
``versus_server.py`` serves it on 127.0.0.1, where a stand-in ``claude`` executable forwards the
reference's prompts.

The world knows which rules are right only through its hidden checks: each of its four kinds of
task has one ``contains`` check (a token the answer must hold). As a target it answers a task under
the documents in the prompt with the sim's per-check probabilities (``follow`` when a line asks for
the token, ``1 - follow`` when a line asks against it, ``base`` otherwise); as an optimizer it turns
each failing criterion a prompt lists into a covering rule with probability ``correct`` and,
independently, into a harmful one with probability ``harmful`` (the sim's ``covering_rule`` and
``harmful_rule``).

Worlds: ``default``; ``subtle-harm``: the optimizer's harmful rules read as plain style advice
(they contradict no check), and every check a harmful rule reaches passes with its probability
times 0.8; ``trade-off`` and ``correlated`` (``versus_worlds_extra.py`` states them). Any world can
answer with within-task correlation (the sim's ``corr`` / ``drift``).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import versus_worlds_extra as extra

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.sim import SimBackend, covering_rule, harmful_rule, target
from skillopt_sleep.backends.sim import optimizer as sim_optimizer
from skillopt_sleep.backends.sim.knobs import SimKnobs
from skillopt_sleep.backends.sim.latent import task_chance
from skillopt_sleep.backends.sim.reading import (
    applicable,
    parse_documents,
    parse_line,
    rule_count,
    scope_applies,
    stance,
    task_text,
)
from skillopt_sleep.types import Usage

KNOBS: dict[str, Any] = {"follow": 0.9, "base": 0.3, "correct": 0.6, "harmful": 0.25}
WORLDS = ("default", "subtle-harm", *extra.EXTRA_WORLDS)
SUBTLE_FACTOR = 0.8
# Harmful advice in the subtle-harm world: it asks against no check, so only its effect betrays it.
SUBTLE_RULES = (
    "Keep the wording tight and focused; cut anything that is not essential.",
    "Prefer a terse, telegraphic style over full sentences.",
    "Lead with the conclusion and leave supporting detail out.",
)
KINDS = (
    ("commit message", "Write the commit message for the {x} change.", "Refs: ACME-"),
    ("release note", "Write the release note for the {x} release.", "Upgrade notes:"),
    ("incident summary", "Write the incident summary for the {x} outage.", "Root cause:"),
    ("review comment", "Write the review comment on the {x} patch.", "Suggested fix:"),
)
SUBJECTS = ("parser timeout", "cache cleanup", "auth rewrite", "billing rollback", "upload throttle")
SPLITS = ("train", "train", "train", "val", "val")
HAND_WRITTEN = "# Writing\n\nHelp write commit messages, release notes, incident summaries and review comments.\n"
SKILL_TEXT = (
    "---\nname: skillopt-sleep-learned\ndescription: How this project writes its messages.\n---\n\n" + HAND_WRITTEN
)
MEMORY_TEXT = "# Project\n"


@dataclass(frozen=True)
class Task:
    id: str
    kind: str
    intent: str
    split: str
    checks: tuple[dict[str, Any], ...]

    def as_payload(self) -> dict[str, Any]:
        """The task as the sim's target reads it (its words and its checks)."""
        return {"id": self.id, "intent": self.intent, "judge": {"kind": "rule", "checks": list(self.checks)}}


def world_tasks() -> list[Task]:
    """4 kinds x (3 train + 2 val) tasks, the same every night."""
    tasks = []
    for kind, intent, token in KINDS:
        for subject, split in zip(SUBJECTS, SPLITS, strict=True):
            slug = f"{kind}-{subject}".replace(" ", "-")
            tasks.append(Task(slug, kind, intent.format(x=subject), split, ({"op": "contains", "arg": token},)))
    return tasks


def knobs_for(seed: int, corr: float = 0.0, drift: float = 0.0) -> SimKnobs:
    return SimKnobs(**KNOBS, seed=seed, corr=corr, drift=drift)


def kind_tokens() -> list[tuple[str, str]]:
    return [(kind, token) for kind, _, token in KINDS]


def _harmful_lines(directives: list[Any], world: str) -> int:
    if world != "subtle-harm":
        return 0
    return sum(any(s[:30].lower() in d.text.lower() for s in SUBTLE_RULES) for d in directives)


def check_probabilities(knobs: SimKnobs, task: Task, documents: str, world: str) -> list[float]:
    """The exact probability that the documents make each of the task's checks pass."""
    everything = parse_documents(documents)
    view = target.DocumentView(
        applicable(everything, task_text(task.as_payload())), knobs.effective_follow(rule_count(everything))
    )
    factor = SUBTLE_FACTOR ** _harmful_lines(view.directives, world)
    if world == "trade-off":  # a trade-off clause acts wherever it is in the documents
        factor *= extra.tradeoff_factor([d.text for d in everything], task.kind, [k for k, _ in kind_tokens()])
    return [factor * target.check_probability(knobs, c, view) for c in task.checks]


def task_probability(knobs: SimKnobs, task: Task, documents: str, world: str) -> float:
    """The exact probability that the documents make all of the task's checks pass."""
    return math.prod(check_probabilities(knobs, task, documents, world))


def answer_probability(knobs: SimKnobs, task: Task, documents: str, world: str) -> float:
    """The chance one answer to the task passes all its checks: ``task_probability`` with each
    check's chance through the task's latent (the sim's ``corr`` / ``drift``; equal when corr is 0)."""
    chance = task_chance(knobs.rng, knobs.corr, knobs.drift, task.id, documents)
    return math.prod(chance(i, p) for i, p in enumerate(check_probabilities(knobs, task, documents, world)))


def tasks_truth(knobs: SimKnobs, tasks: list[Task], documents: str, world: str) -> float:
    """The mean over every task of ``answer_probability``: what these tasks' latents make of it."""
    return sum(answer_probability(knobs, t, documents, world) for t in tasks) / len(tasks)


def ground_truth(knobs: SimKnobs, tasks: list[Task], documents: str, world: str) -> float:
    """The mean over every task of ``task_probability``."""
    return sum(task_probability(knobs, t, documents, world) for t in tasks) / len(tasks)


def classify(rule: str, tasks: list[Task], world: str) -> str:
    """``covering`` (asks for a check of a task it applies to), ``harmful`` (asks against one, or is
    harmful advice in the subtle-harm world), ``trade-off`` (in the trade-off world, covers a check
    and carries a clause that lowers another kind's) or ``neutral``."""
    directive = parse_line(rule, learned=True)
    if _harmful_lines([directive], world):
        return "harmful"
    found = set()
    for task in tasks:
        if directive.scope and not scope_applies(directive.scope, task_text(task.as_payload())):
            continue
        found |= {stance(c, directive.text) for c in task.checks}
    if False not in found and world == "trade-off" and extra.victims(rule, [k for k, _ in kind_tokens()]):
        return "trade-off" if True in found else "harmful"
    return "harmful" if False in found else "covering" if True in found else "neutral"


def proposed_rules(knobs: SimKnobs, failing: list[dict[str, Any]], world: str, limit: int, *parts: object) -> list[str]:
    """The world as optimizer: rules for the failing checks (most-failed first)."""
    rng = knobs.rng("versus-reflect", *parts)
    rules: list[str] = []
    for check in failing:
        if rng.random() < knobs.correct:
            rule = covering_rule(check)
            if rule:
                rules.append(rule)
        if rng.random() < knobs.harmful:
            rule = rng.choice(SUBTLE_RULES) if world == "subtle-harm" else harmful_rule(check, rng)
            if rule:
                rules.append(rule)
    if world == "trade-off":
        rules = extra.as_tradeoffs(rules, kind_tokens(), knobs.rng("versus-tradeoff", *parts))
    return rules[:limit]


class VersusBackend(SimBackend):
    """This engine's model in the world, in-process: the sim (default world), or the sim with the
    subtle-harm world's target and harmful advice; counts calls and prompt characters."""

    counts: Counter = Counter()
    prompt_chars = 0
    agreement = extra.Agreement()
    phases: Counter = Counter()  # attempts by split, under the night's starting documents or not
    night_documents = ""

    def __init__(self, seed: int, world: str, corr: float = 0.0, drift: float = 0.0):
        super().__init__(knobs_for(seed, corr, drift))
        self.world = world
        self.id = f"versus({world},{self.id})"

    def complete(self, request: Request) -> Completion:
        VersusBackend.counts[request.purpose] += 1
        VersusBackend.prompt_chars += len(request.system) + len(request.user)
        if request.purpose == "attempt":
            task = request.payload.get("task") or {}
            known = next((t for t in world_tasks() if t.id == task.get("id")), None)
            mine = known or payload_task(task)
            documents = str(request.payload.get("documents") or "")
            same = "baseline" if documents == VersusBackend.night_documents else "candidates"
            VersusBackend.phases[f"{known.split if known else 'variant'}_{same}"] += 1
            if self.world == "default":
                done = super().complete(request)
                record(VersusBackend.agreement, self.knobs, self.world, mine, documents, done.text)
                return done
            text = respond(self.knobs, self.world, mine, documents, request.sample)
            record(VersusBackend.agreement, self.knobs, self.world, mine, documents, text)
        elif request.purpose == "reflect" and self.world != "default":
            text = world_reflect(self.knobs, self.world, request)
        else:
            return super().complete(request)
        return Completion(
            text=text,
            model="sim",
            usage=Usage(
                input_tokens=(len(request.system) + len(request.user)) // 4 + 1, output_tokens=len(text) // 4 + 1
            ),
        )


def payload_task(task: dict[str, Any]) -> Task:
    """A task the world did not write (a variant of one of its own): its kind read from its token."""
    checks = tuple((task.get("judge") or {}).get("checks") or ())
    tokens = {str(c.get("arg")) for c in checks if isinstance(c, dict)}
    kind = next((k for k, token in kind_tokens() if token in tokens), "")
    return Task(str(task.get("id")), kind, str(task.get("intent") or ""), "train", checks)


def respond(knobs: SimKnobs, world: str, task: Task, documents: str, sample: int) -> str:
    """The world as target: the sim's answer (default world), or, in the subtle-harm world, the
    token with the task's exact probability under the documents."""
    if world == "default":
        request = Request("attempt", "", "", sample=sample, payload={"task": task.as_payload(), "documents": documents})
        return target.attempt(knobs, request)[0]
    rng = knobs.rng("versus-attempt", task.id, documents, sample)
    return (
        f"{task.checks[0]['arg']} done."
        if rng.random() < answer_probability(knobs, task, documents, world)
        else "Done."
    )


def record(agreement: extra.Agreement, knobs: SimKnobs, world: str, task: Task, documents: str, text: str) -> None:
    """One answer into ``agreement``: whether it holds the task's token, beside its pass probability."""
    passed = all(str(c["arg"]) in text for c in task.checks)
    agreement.add(task.id, documents, passed, task_probability(knobs, task, documents, world))


def world_reflect(knobs: SimKnobs, world: str, request: Request) -> str:
    """This engine's reflect in a world other than the default: the subtle-harm world's, or the
    sim's optimizer with the trade-off world's covering rules turned into trade-offs."""
    if world != "trade-off":
        return subtle_reflect(knobs, request)
    edits = json.loads(sim_optimizer.reflect(knobs, request)[0])["edits"]
    rules = extra.as_tradeoffs(
        [e["content"] for e in edits], kind_tokens(), knobs.rng("versus-tradeoff", request.user, request.sample)
    )
    return json.dumps({"edits": [{**e, "content": r} for e, r in zip(edits, rules, strict=True)]})


def subtle_reflect(knobs: SimKnobs, request: Request) -> str:
    """The sim's optimizer without its own harmful rules, plus, for each failing check, harmful
    style advice with probability ``harmful`` (the subtle-harm world)."""
    text, _ = sim_optimizer.reflect(replace(knobs, harmful=0.0), request)
    edits = json.loads(text)["edits"]
    rng = knobs.rng("versus-subtle", request.user, request.sample)
    failed: dict[str, list[str]] = {}
    for item in request.payload.get("tasks") or []:
        for check in item.get("failed_checks") or []:
            if isinstance(check, dict) and check.get("op") == "contains":
                failed.setdefault(str(check.get("arg")), []).append(str(item.get("task_id", "")))
    for _, task_ids in sorted(failed.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if rng.random() < knobs.harmful:
            edits.append(
                {
                    "target": "skill",
                    "op": "add",
                    "content": rng.choice(SUBTLE_RULES),
                    "rationale": "good attempts looked tighter and more focused",
                    "evidence": sorted(set(task_ids)),
                }
            )
    return json.dumps({"edits": edits[: int(request.payload.get("max_edits") or 4)]})


def from_options(options: dict[str, Any], model: str | None) -> VersusBackend:
    """``versus:seed=N,world=default,corr=0,drift=0`` (registered by ``bench_versus.py``)."""
    return VersusBackend(
        int(options.get("seed", 0)),
        str(options.get("world", "default")),
        float(options.get("corr", 0.0)),
        float(options.get("drift", 0.0)),
    )
