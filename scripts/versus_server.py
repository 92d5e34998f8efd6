"""The world of ``bench_versus.py`` served on 127.0.0.1: ``World`` answers both engines' prompts
(each engine's prompts recognized by their openings and the facts they state), counts what each
engine asks of it, and ``serve`` puts it behind an Anthropic Messages and an OpenAI-compatible
endpoint; ``STAND_IN`` is the ``claude`` on PATH that forwards the reference's prompts to it."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import versus_worlds_extra as extra  # noqa: E402
from versus_world import (  # noqa: E402
    Task,
    knobs_for,
    proposed_rules,
    record,
    respond,
    world_reflect,
    world_tasks,
)

from skillopt_sleep.backends.base import Request  # noqa: E402
from skillopt_sleep.backends.sim import optimizer as sim_optimizer  # noqa: E402
from skillopt_sleep.backends.sim.knobs import SimKnobs  # noqa: E402


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
            asked = re.search(r"^Request: (.*)$", block, re.M)
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
                    "intent": asked.group(1) if asked else "",
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
