"""The world ``bench_gate.py`` measures the gate in: two kinds of task (``a`` and ``b``), the rules of
known worth each scenario proposes (their effect written in their text, read only by the scripted
target), and ``WorldBackend``, which plays the target and the optimizer from the knobs."""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.pricing import Price
from skillopt_sleep.backends.sim.latent import task_chance
from skillopt_sleep.types import TaskRecord, Usage


KNOBS = {"covered": 0.9, "uncovered": 0.3, "harmful": 0.15, "substance": 0.95, "judge": 0.9}
PASS = "PASS-TOKEN"
SUBSTANCE = "SUBSTANCE-TOKEN"  # what a good answer holds that no check asks for
PASS2 = "SECOND-TOKEN"
PROJECT = "/bench"
EFFECT_RE = re.compile(r"effect ((?:[a-z]+[12]?=[0-9.]+[, ]*)+)")
BASE_RULE_2 = f"Every answer carries the second token (effect a2={KNOBS['covered']}, b2={KNOBS['covered']})"
USEFUL_ONE_CHECK = f"Kind a answers carry the a token (effect a1={KNOBS['covered']})"
SWAP = f"Kind a answers carry the a token instead of the second one (effect a1={KNOBS['covered']}, a2=0.3)"

BASE_RULE = f"Answers about kind b follow the b checklist (effect b={KNOBS['covered']})"
USEFUL = f"Answers about kind a follow the a checklist (effect a={KNOBS['covered']})"
NEUTRAL = [
    f"Mention the widget catalogue in kind c answers (effect c={KNOBS['covered']})",
    f"mention the Widget Catalogue in kind-c answers (effect c={KNOBS['covered']}).",
    f"In kind c answers, mention the widget catalogue (effect c={KNOBS['covered']})",
]
NEUTRAL_OTHERS = [
    f"Quote the {name} glossary in kind {kind} answers (effect {kind}={KNOBS['covered']})"
    for name, kind in (("style", "d"), ("naming", "e"), ("release", "f"))
]
HARMFUL = f"Keep every answer to one terse line (effect all={KNOBS['harmful']})"
TRADE_OFF = "Answers about kind a lead with a summary table (effect a=0.6, b=0.5)"
WEAK = [
    f"Answers about kind a restate the request first (effect a={KNOBS['uncovered'] + 0.15:g})",
    f"answers about kind a restate the request first (effect a={KNOBS['uncovered'] + 0.15:g}).",
    f"Kind a answers restate the request first (effect a={KNOBS['uncovered'] + 0.15:g})",
]
# passes kind a's check by cutting the answer: its substance falls to 0.1 (the world's "qa")
CHECK_GAMING = f"Keep kind a answers to one short line (effect a={KNOBS['covered']}, qa=0.1)"
# constrains form too, but keeps what the work needs
USEFUL_BRIEF = f"Keep kind a answers brief and lead with the a checklist (effect a={KNOBS['covered']})"
TRAIN = [("a", 0), ("a", 1), ("b", 0), ("b", 1)]


def probability(kind: str, documents: str, check: int = 1) -> float:
    """The world: the chance one attempt at a task of ``kind`` passes its ``check`` (1 or 2) under
    ``documents``."""
    p = KNOBS["uncovered"]
    names = (kind, f"{kind}1") if check == 1 else (f"{kind}2",)
    for match in EFFECT_RE.finditer(documents):
        effects = dict(pair.split("=") for pair in re.findall(r"[a-z]+[12]?=[0-9.]+", match.group(1)))
        if "all" in effects:
            return float(effects["all"])
        for name in names:
            if name in effects:
                p = float(effects[name])  # the later rule in the documents wins
    return p


def substance(kind: str, documents: str) -> float:
    """The chance an answer of ``kind`` holds what the work needs (``SUBSTANCE``) under
    ``documents``: ``KNOBS["substance"]`` unless a rule's effect names ``q<kind>``."""
    p = KNOBS["substance"]
    for match in EFFECT_RE.finditer(documents):
        effects = dict(pair.split("=") for pair in re.findall(r"[a-z]+[12]?=[0-9.]+", match.group(1)))
        p = float(effects.get(f"q{kind}", p))
    return p


WORLD: dict[str, Any] = {"corr": 0.0, "drift": 0.0, "seed": ""}  # within-task correlation (--corr)


def world_draw(*parts: object) -> random.Random:
    """A generator seeded by the world (one per Nval and seed, across scenarios and nights) and
    ``parts``: a task's latent propensity."""
    blob = json.dumps([WORLD["seed"], *parts], default=str)
    return random.Random(hashlib.sha256(blob.encode()).digest())


class WorldBackend:
    """The scripted target and optimizer. Deterministic per request (the client caches), fresh per
    night and sample."""

    def __init__(self, seed: str, proposals: list[dict[str, Any]]):
        self.seed = seed
        self.proposals = proposals
        self.id = "world"  # one target model on every night: its evidence pools
        self.price: Price | None = None  # no cost: a call cap (--max-calls) counts calls only
        self.offline = True  # a scripted world: no model answers

    def complete(self, request: Request) -> Completion:
        if request.purpose == "attempt":
            task = request.payload["task"]
            blob = json.dumps([self.seed, task["id"], request.sample, request.payload["documents"]])
            rng = random.Random(hashlib.sha256(blob.encode()).digest())
            docs = request.payload["documents"]
            chance = task_chance(world_draw, WORLD["corr"], WORLD["drift"], task["id"], docs)
            passed = rng.random() < chance(1, probability(task["skill_hint"], docs))
            text = f"Here it is (take {request.sample})." + (f" {PASS}" if passed else "")
            if len(task["judge"]["checks"]) > 1:
                text += f" {PASS2}" if rng.random() < chance(2, probability(task["skill_hint"], docs, 2)) else ""
            text += f" {SUBSTANCE}" if rng.random() < chance("q", substance(task["skill_hint"], docs)) else ""
        elif request.purpose == "quality":
            # the judge sees what the checks do not, and reads it right with probability KNOBS["judge"]
            payload = request.payload
            rng = random.Random(hashlib.sha256(json.dumps([self.seed, payload]).encode()).digest())
            as_good = SUBSTANCE in payload["answer"] or SUBSTANCE not in payload["reference"]
            if rng.random() >= KNOBS["judge"]:
                as_good = rng.random() < 0.5
            text = json.dumps({"as_good": as_good, "reason": "bench"})
        elif request.purpose == "reflect":
            text = json.dumps({"edits": self.proposals})
        elif request.purpose == "refine":
            # lookahead asks to rewrite a rule that broke a check on its train tasks: the scripted
            # optimizer keeps the rule as proposed (its effect is the world's ground truth)
            text = json.dumps({"content": request.payload["rule"]})
        elif request.purpose == "rank":
            # asked only when a capped night has fewer slots than proposals: the scripted
            # optimizer keeps the order it proposed them in (it knows nothing of their worth)
            text = json.dumps({"order": list(range(1, len(request.payload["candidates"]) + 1))})
        elif request.purpose == "preflight":
            text = "ok"
        else:
            return Completion(text="", model="world", error="bad_request", error_message=request.purpose)
        return Completion(text=text, usage=Usage(input_tokens=1, output_tokens=1), model="world")


def make_tasks(n_val: int, checks: int = 1) -> list[TaskRecord]:
    judge = {
        "kind": "rule",
        "checks": [{"op": "contains", "arg": PASS}] + ([{"op": "contains", "arg": PASS2}] if checks > 1 else []),
    }
    kinds = ["a"] * (n_val // 2) + ["b"] * (n_val - n_val // 2)

    def task(split: str, kind: str, i: int) -> TaskRecord:
        return TaskRecord(
            id=f"{split}-{kind}-{i}",
            intent=f"{split.capitalize()} request {i} of kind {kind}",
            project="/bench",
            judge=judge,
            skill_hint=kind,
            tags=[kind],
            split=split,
        )

    return [task("val", kind, i) for i, kind in enumerate(kinds)] + [task("train", kind, i) for kind, i in TRAIN]


def proposal(content: str) -> dict[str, Any]:
    """An edit as the optimizer proposes it: evidence from the kind-a train tasks."""
    return {
        "target": "skill",
        "op": "add",
        "content": content,
        "rationale": "bench",
        "evidence": [f"train-a-{i}" for kind, i in TRAIN if kind == "a"],
    }
