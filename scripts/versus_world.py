"""The simulated world ``bench_versus.py`` runs both engines in: its tasks, its model (the ``sim``
backend's reading of documents, answering and optimizing), its exact ground truth, and an
Anthropic Messages endpoint on 127.0.0.1 that a stand-in ``claude`` executable forwards prompts to.

The world knows which rules are right only through its hidden checks: each of its four kinds of
task has one ``contains`` check (a token the answer must hold). As a target it answers a task under
the documents in the prompt with the sim's per-check probabilities (``follow`` when a line asks for
the token, ``1 - follow`` when a line asks against it, ``base`` otherwise); as an optimizer it turns
each failing criterion a prompt lists into a covering rule with probability ``correct`` and,
independently, into a harmful one with probability ``harmful`` (the sim's ``covering_rule`` and
``harmful_rule``).

Worlds: ``default``; ``subtle-harm``: the optimizer's harmful rules read as plain style advice
(they contradict no check), and every check a harmful rule reaches passes with its probability
times 0.8.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections import Counter
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.sim import SimBackend, covering_rule, harmful_rule, target
from skillopt_sleep.backends.sim import optimizer as sim_optimizer
from skillopt_sleep.backends.sim.knobs import SimKnobs
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

KNOBS = {"follow": 0.9, "base": 0.3, "correct": 0.6, "harmful": 0.25}
WORLDS = ("default", "subtle-harm")
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
SKILL_TEXT = ("---\nname: skillopt-sleep-learned\ndescription: How this project writes its messages.\n---\n\n"
              + HAND_WRITTEN)
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


def knobs_for(seed: int) -> SimKnobs:
    return SimKnobs(**KNOBS, seed=seed)


def _harmful_lines(directives: list[Any], world: str) -> int:
    if world != "subtle-harm":
        return 0
    return sum(any(s[:30].lower() in d.text.lower() for s in SUBTLE_RULES) for d in directives)


def task_probability(knobs: SimKnobs, task: Task, documents: str, world: str) -> float:
    """The exact probability that the documents make all of the task's checks pass."""
    everything = parse_documents(documents)
    view = target.DocumentView(applicable(everything, task_text(task.as_payload())),
                               knobs.effective_follow(rule_count(everything)))
    factor = SUBTLE_FACTOR ** _harmful_lines(view.directives, world)
    return math.prod(factor * target.check_probability(knobs, c, view) for c in task.checks)


def ground_truth(knobs: SimKnobs, tasks: list[Task], documents: str, world: str) -> float:
    """The mean over every task of ``task_probability``."""
    return sum(task_probability(knobs, t, documents, world) for t in tasks) / len(tasks)


def classify(rule: str, tasks: list[Task], world: str) -> str:
    """``covering`` (asks for a check of a task it applies to), ``harmful`` (asks against one, or is
    harmful advice in the subtle-harm world) or ``neutral``."""
    directive = parse_line(rule, learned=True)
    if _harmful_lines([directive], world):
        return "harmful"
    found = set()
    for task in tasks:
        if directive.scope and not scope_applies(directive.scope, task_text(task.as_payload())):
            continue
        found |= {stance(c, directive.text) for c in task.checks}
    return "harmful" if False in found else "covering" if True in found else "neutral"


def proposed_rules(knobs: SimKnobs, failing: list[dict[str, Any]], world: str, limit: int,
                   *parts: object) -> list[str]:
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
    return rules[:limit]


class VersusBackend(SimBackend):
    """This engine's model in the world, in-process: the sim (default world), or the sim with the
    subtle-harm world's target and harmful advice; counts calls and prompt characters."""

    counts: Counter = Counter()
    prompt_chars = 0

    def __init__(self, seed: int, world: str):
        super().__init__(knobs_for(seed))
        self.world = world
        self.id = f"versus({world},{self.id})"

    def complete(self, request: Request) -> Completion:
        VersusBackend.counts[request.purpose] += 1
        VersusBackend.prompt_chars += len(request.system) + len(request.user)
        if self.world == "default" or request.purpose not in ("attempt", "reflect"):
            return super().complete(request)
        knobs = self.knobs
        if request.purpose == "attempt":
            task = request.payload.get("task") or {}
            mine = next(t for t in world_tasks() if t.id == task.get("id") or t.intent == task.get("intent"))
            documents = str(request.payload.get("documents") or "")
            p = task_probability(knobs, mine, documents, self.world)
            rng = knobs.rng("versus-attempt", task.get("id"), documents, request.sample)
            text = f"{mine.checks[0]['arg']} done." if rng.random() < p else "Done."
        else:
            text = self._subtle_reflect(request)
        return Completion(text=text, model="sim", usage=Usage(input_tokens=(len(request.system) + len(request.user)) // 4 + 1,
                                                              output_tokens=len(text) // 4 + 1))

    def _subtle_reflect(self, request: Request) -> str:
        text, _ = sim_optimizer.reflect(replace(self.knobs, harmful=0.0), request)
        edits = json.loads(text)["edits"]
        rng = self.knobs.rng("versus-subtle", request.user, request.sample)
        failed: dict[str, list[str]] = {}
        for item in request.payload.get("tasks") or []:
            for check in item.get("failed_checks") or []:
                if isinstance(check, dict) and check.get("op") == "contains":
                    failed.setdefault(str(check.get("arg")), []).append(str(item.get("task_id", "")))
        for _, task_ids in sorted(failed.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            if rng.random() < self.knobs.harmful:
                edits.append({"target": "skill", "op": "add", "content": rng.choice(SUBTLE_RULES),
                              "rationale": "good attempts looked tighter and more focused",
                              "evidence": sorted(set(task_ids))})
        return json.dumps({"edits": edits[:int(request.payload.get("max_edits") or 4)]})


def from_options(options: dict[str, Any], model: str | None) -> VersusBackend:
    """``versus:seed=N,world=default`` (registered by ``bench_versus.py``)."""
    return VersusBackend(int(options.get("seed", 0)), str(options.get("world", "default")))


# ---- the reference engine's prompts, as its ``claude`` backend sends them ----

CRITERION_RE = re.compile(r"^- .*\[(\w+)=(.*), failed (\d+)x\]$", re.M)
BUDGET_RE = re.compile(r"Propose at most (\d+) bounded edits")


@dataclass
class World:
    """One seed's world, answering prompts; counts what each engine asks of it."""

    seed: int
    world: str = "default"
    tasks: list[Task] = field(default_factory=world_tasks)
    calls: Counter = field(default_factory=Counter)  # purpose -> calls
    prompt_chars: int = 0
    seen: Counter = field(default_factory=Counter)  # prompt hash -> times asked
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def knobs(self) -> SimKnobs:
        return knobs_for(self.seed)

    def answer(self, prompt: str) -> str:
        digest = hashlib.sha256(prompt.encode()).hexdigest()
        with self.lock:
            self.prompt_chars += len(prompt)
            sample = self.seen[digest]
            self.seen[digest] += 1
        if prompt.startswith("You are SkillOpt's optimizer"):
            purpose, text = "reflect", self._reflect(prompt, sample)
        elif "\n# Skill\n" in prompt and "\n# Task\n" in prompt:
            purpose, text = "attempt", self._attempt(prompt, sample)
        else:
            purpose, text = "other", ""
        with self.lock:
            self.calls[purpose] += 1
        return text

    def _attempt(self, prompt: str, sample: int) -> str:
        head, _, task_part = prompt.rpartition("\n# Task\n")
        documents = head.partition("\n# Skill\n")[2].replace("\n\n# Memory\n", "\n", 1)
        task = next((t for t in self.tasks if t.intent in task_part), None)
        if task is None:
            return "I could not tell which task this is."
        probability = task_probability(self.knobs, task, documents, self.world)
        rng = self.knobs.rng("versus-attempt", task.id, documents, sample)
        if self.world == "default":
            request = Request("attempt", "", "", sample=sample,
                              payload={"task": task.as_payload(), "documents": documents})
            return target.attempt(self.knobs, request)[0]
        token = task.checks[0]["arg"]
        return f"{token} done." if rng.random() < probability else "Done."

    def _reflect(self, prompt: str, sample: int) -> str:
        failing = sorted(((int(n), op, arg) for op, arg, n in CRITERION_RE.findall(prompt)), key=lambda x: -x[0])
        budget = BUDGET_RE.search(prompt)
        checks = [{"op": op, "arg": arg} for _, op, arg in failing if op == "contains"]
        rules = proposed_rules(self.knobs, checks, self.world, int(budget.group(1)) if budget else 4, prompt, sample)
        return json.dumps([{"op": "add", "content": r, "rationale": "failing criterion"} for r in rules])

    def snapshot(self) -> tuple[Counter, int]:
        with self.lock:
            return Counter(self.calls), self.prompt_chars


class _Handler(BaseHTTPRequestHandler):
    world: World

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
        length = min(int(self.headers.get("content-length") or 0), 4 << 20)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            content = body["messages"][-1]["content"]
            prompt = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            self._send(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad body"}})
            return
        text = self.world.answer(prompt)
        self._send(200, {"id": "msg_world", "type": "message", "role": "assistant", "model": body.get("model", "world"),
                         "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                         "usage": {"input_tokens": len(prompt) // 4 + 1, "output_tokens": len(text) // 4 + 1}})

    def _send(self, status: int, obj: dict[str, Any]) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def serve(world: World) -> ThreadingHTTPServer:
    """The world as an Anthropic Messages endpoint (``POST /v1/messages``, no streaming) on
    127.0.0.1, in a daemon thread; ``shutdown()`` it when done."""
    handler = type("WorldHandler", (_Handler,), {"world": world})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# The stand-in ``claude``: ``claude -p ... -- <prompt>`` (or the prompt on stdin), forwarded to the
# world as one Messages request; the reply's text on stdout. Standard library only.
STAND_IN = r'''
import json, os, sys, urllib.request
argv = sys.argv[1:]
prompt = argv[argv.index("--") + 1] if "--" in argv and argv.index("--") + 1 < len(argv) else sys.stdin.read()
body = json.dumps({"model": "world", "max_tokens": 1024, "messages": [{"role": "user", "content": prompt}]}).encode()
req = urllib.request.Request(os.environ["VERSUS_WORLD_URL"] + "/v1/messages", data=body,
                             headers={"content-type": "application/json", "anthropic-version": "2023-06-01"})
with urllib.request.urlopen(req, timeout=60) as resp:
    reply = json.load(resp)
sys.stdout.write("".join(p.get("text", "") for p in reply.get("content", [])) + "\n")
'''
