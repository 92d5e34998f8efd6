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
times 0.8; ``trade-off`` and ``correlated`` (``versus_worlds_extra.py`` states them). Any world can
answer with within-task correlation (the sim's ``corr`` / ``drift``).
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

KNOBS = {"follow": 0.9, "base": 0.3, "correct": 0.6, "harmful": 0.25}
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


# ---- the reference engine's prompts, as its ``claude`` backend sends them ----

PREFLIGHT = "Reply with the single word OK."  # this engine's preflight (a fact of its client)
OUR_ATTEMPT = "You are a coding agent working in a software project."  # its prompts' openings
OUR_REFLECT = "You improve the instruction documents of a coding agent."
OUR_RANK = "You rank proposed rules for the instruction documents of a coding agent."
OUR_REFINE = "You revise one proposed rule for the instruction documents of a coding agent."
FAILED_TOKEN_RE = re.compile(r'must contain "([^"]*)"')
CRITERION_RE = re.compile(r"^- .*\[(\w+)=(.*), failed (\d+)x\]$", re.M)
BUDGET_RE = re.compile(r"Propose at most (\d+) bounded edits")


@dataclass
class World:
    """One seed's world, answering prompts; counts what each engine asks of it."""

    seed: int
    world: str = "default"
    corr: float = 0.0
    drift: float = 0.0
    tasks: list[Task] = field(default_factory=world_tasks)
    calls: Counter = field(default_factory=Counter)  # purpose -> calls
    prompt_chars: int = 0
    seen: Counter = field(default_factory=Counter)  # prompt hash -> times asked
    lock: threading.Lock = field(default_factory=threading.Lock)
    agreement: extra.Agreement = field(default_factory=extra.Agreement)

    @property
    def knobs(self) -> SimKnobs:
        return knobs_for(self.seed, self.corr, self.drift)

    optimizer_seed: int = 0  # the seed this engine's optimizer draws with tonight (a fresh sample each night)

    def answer(self, system: str, prompt: str) -> str:
        """The reply to one Messages request: the reference's prompts come as the user message
        alone, this engine's as a system prefix (documents, role) and the user message."""
        digest = hashlib.sha256(f"{system}\0{prompt}".encode()).hexdigest()
        with self.lock:
            self.prompt_chars += len(system) + len(prompt)
            sample = self.seen[digest]
            self.seen[digest] += 1
        purpose, text = "other", ""
        if prompt.strip() == PREFLIGHT:
            purpose, text = "preflight", "OK"
        elif system.startswith(OUR_ATTEMPT):
            purpose, text = "attempt", self._our_attempt(system, prompt, sample)
        elif system.startswith(OUR_REFLECT):
            purpose, text = "reflect", self._our_reflect(system, prompt, sample)
        elif system.startswith(OUR_RANK):
            purpose, text = "rank", self._our_rank(system, prompt, sample)
        elif system.startswith(OUR_REFINE):
            purpose, text = "refine", self._our_refine(prompt, sample)
        elif prompt.startswith("You are SkillOpt's optimizer"):
            purpose, text = "reflect", self._reflect(prompt, sample)
        elif "\n# Skill\n" in prompt and "\n# Task\n" in prompt:
            purpose, text = "attempt", self._attempt(prompt, sample)
        with self.lock:
            self.calls[purpose] += 1
        return text

    def _task(self, text: str) -> Task | None:
        return next((t for t in self.tasks if t.intent in text), None)

    def _attempt(self, prompt: str, sample: int) -> str:
        head, _, task_part = prompt.rpartition("\n# Task\n")
        documents = head.partition("\n# Skill\n")[2].replace("\n\n# Memory\n", "\n", 1)
        return self._respond(self._task(task_part), documents, sample)

    def _reflect(self, prompt: str, sample: int) -> str:
        failing = sorted(((int(n), op, arg) for op, arg, n in CRITERION_RE.findall(prompt)), key=lambda x: -x[0])
        budget = BUDGET_RE.search(prompt)
        checks = [{"op": op, "arg": arg} for _, op, arg in failing if op == "contains"]
        rules = proposed_rules(self.knobs, checks, self.world, int(budget.group(1)) if budget else 4, prompt, sample)
        return json.dumps([{"op": "add", "content": r, "rationale": "failing criterion"} for r in rules])

    def _our_attempt(self, system: str, prompt: str, sample: int) -> str:
        return self._respond(self._task(prompt), system.partition("\n\n")[2], sample)

    def _respond(self, task: Task | None, documents: str, sample: int) -> str:
        if task is None:
            return "I could not tell which task this is."
        text = respond(self.knobs, self.world, task, documents, sample)
        with self.lock:
            record(self.agreement, self.knobs, self.world, task, documents, text)
        return text

    def _our_reflect(self, system: str, prompt: str, sample: int) -> str:
        """This engine's reflect prompt read back into the evidence the sim's optimizer takes: each
        task's failed checks (from its ``Failed checks:`` lines), the current rules, the edit limit."""
        tasks = []
        for block in prompt.split("\n### Task ")[1:]:
            task_id = re.split(r"[\s(]", block, maxsplit=1)[0]
            request = re.search(r"^Request: (.*)$", block, re.M)
            failed = sorted(
                {
                    arg
                    for line in re.findall(r"^Failed checks: (.*)$", block, re.M)
                    for arg in FAILED_TOKEN_RE.findall(line)
                }
            )
            tasks.append(
                {
                    "task_id": task_id,
                    "intent": request.group(1) if request else "",
                    "failed_checks": [{"op": "contains", "arg": a} for a in failed],
                }
            )
        rules_part = prompt.partition("Current learned rules:\n")[2]
        current = [ln[2:] for ln in rules_part.split("\n\n", 1)[0].splitlines() if ln.startswith("- ")]
        limit = re.search(r"at most\s+(\d+)\s+small", system)
        contrast, failure = "Contrast the better and the worse" in prompt, "failed in every attempt" in prompt
        payload = {
            "mode": "mixed" if contrast and failure else "contrastive" if contrast else "failure",
            "tasks": tasks,
            "current_rules": {"all": current},
            "max_edits": int(limit.group(1)) if limit else 4,
        }
        knobs = knobs_for(self.optimizer_seed)
        request = Request("reflect", system, prompt, sample=sample, payload=payload)
        if self.world == "default":
            return sim_optimizer.reflect(knobs, request)[0]
        return world_reflect(knobs, self.world, request)

    def _our_rank(self, system: str, prompt: str, sample: int) -> str:
        """This engine's rank prompt read back (candidates, the failed checks behind them) for the
        sim's ranking."""
        candidates = [{"content": c} for c in re.findall(r"^\d+\. \[[^\]]*\] (.*)$", prompt, re.M)]
        tasks = [
            {"failed_checks": [{"op": "contains", "arg": a} for a in FAILED_TOKEN_RE.findall(line)]}
            for line in re.findall(r"^- task .*$", prompt, re.M)
        ]
        keep = re.search(r"Only the best (\d+)", system)
        payload = {"candidates": candidates, "tasks": tasks, "keep": int(keep.group(1)) if keep else 1}
        return sim_optimizer.rank(
            knobs_for(self.optimizer_seed), Request("rank", system, prompt, sample=sample, payload=payload)
        )[0]

    def _our_refine(self, prompt: str, sample: int) -> str:
        """This engine's refine prompt read back (the rule, the checks it newly broke) for the sim's
        reviser."""
        rule = prompt.partition("The proposed rule:\n")[2].partition("\n\n")[0].strip()
        failures = prompt.partition("now fail checks that passed before it:\n")[2]
        tasks = [
            {"failed_checks": [{"op": "contains", "arg": a} for a in FAILED_TOKEN_RE.findall(line)]}
            for line in failures.splitlines()
            if "now fails:" in line
        ]
        payload = {"rule": rule, "tasks": tasks}
        return sim_optimizer.refine(
            knobs_for(self.optimizer_seed), Request("refine", "", prompt, sample=sample, payload=payload)
        )[0]

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
            system = body.get("system") or ""
            system = system if isinstance(system, str) else "".join(p.get("text", "") for p in system)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            self._send(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad body"}})
            return
        text = self.world.answer(system, prompt)
        self._send(
            200,
            {
                "id": "msg_world",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "world"),
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": (len(system) + len(prompt)) // 4 + 1, "output_tokens": len(text) // 4 + 1},
            },
        )

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
STAND_IN = r"""
import json, os, sys, urllib.request
argv = sys.argv[1:]
prompt = argv[argv.index("--") + 1] if "--" in argv and argv.index("--") + 1 < len(argv) else sys.stdin.read()
body = json.dumps({"model": "world", "max_tokens": 1024, "messages": [{"role": "user", "content": prompt}]}).encode()
req = urllib.request.Request(os.environ["VERSUS_WORLD_URL"] + "/v1/messages", data=body,
                             headers={"content-type": "application/json", "anthropic-version": "2023-06-01"})
with urllib.request.urlopen(req, timeout=60) as resp:
    reply = json.load(resp)
sys.stdout.write("".join(p.get("text", "") for p in reply.get("content", [])) + "\n")
"""
