"""``sim``: an offline, seeded, stochastic instruction-following simulator (DESIGN §4).

It reads only the request's structured ``payload`` — the same task, documents and failure
evidence a real model is shown in the rendered prompt — and never anything the engine keeps from a
model (val tasks are never in an optimizer payload).

As a *target* it satisfies each of a task's judge checks with probability ``follow`` when the
documents hold a directive covering that check, ``1 - follow`` when a directive contradicts it,
and ``base`` otherwise; then it renders a real text response that the real judges score. A length
cap found in the documents is obeyed (truncating the response) with probability ``follow``.
As an *optimizer* it turns each failed check in the evidence (``failed_checks``: the checks as
data, never the judges' human-readable reasons) into a covering rule with probability ``correct``
and, independently, into a plausible-but-harmful rule with probability ``harmful``.

Knobs (spec ``sim:follow=0.9,base=0.15,correct=0.6,harmful=0.2,seed=7``): follow, base, correct,
harmful, seed, latency (seconds per call), down (1 = every call fails with a server error).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from dataclasses import dataclass
from typing import Any

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.pricing import FREE
from skillopt_sleep.judges import RULE_OPS, describe_check
from skillopt_sleep.types import Usage

NEGATION_RE = re.compile(r"\b(never|don'?t|do not|avoid|without|no longer|must not|omit|drop)\b", re.I)
CAP_RE = re.compile(
    r"\b(?:at most|under|no more than|within|maximum of|max(?:imum)?|fewer than|up to)\s+(\d+)\s*(?:characters|chars)\b",
    re.I,
)
FLOOR_RE = re.compile(r"\b(?:at least|minimum of|no fewer than|more than)\s+(\d+)\s*(?:characters|chars)\b", re.I)
# The checks the optimizer knows a rule for (``no_refusal`` has none: a model does not refuse
# ordinary work unprompted).
COVERABLE_OPS = ("contains", "not_contains", "section_present", "section_contains", "max_chars",
                 "min_chars", "regex", "tool_called")
FILLER = (
    "I went through the change set and kept the wording close to what the repository already uses.",
    "The summary below reflects the diff as it stands on this branch.",
    "Nothing here changes behaviour outside the files mentioned.",
    "I double-checked the naming against the existing conventions in the codebase.",
    "Let me know if you want a shorter or a more detailed version.",
    "The main motivation is to keep the history easy to scan for reviewers.",
)


@dataclass(frozen=True)
class SimKnobs:
    follow: float = 0.9
    base: float = 0.15
    correct: float = 0.6
    harmful: float = 0.2
    seed: int = 0
    latency: float = 0.0
    down: bool = False

    def __post_init__(self) -> None:
        for name in ("follow", "base", "correct", "harmful"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"sim knob {name}={value} must be within 0..1")
        if self.latency < 0:
            raise ValueError("sim knob latency must be >= 0")


def from_options(options: dict[str, Any], model: str | None) -> SimBackend:
    known = {"follow", "base", "correct", "harmful", "seed", "latency", "down"}
    unknown = set(options) - known
    if unknown:
        raise ValueError(f"unknown sim option(s): {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")
    opts = dict(options)
    if "seed" in opts:
        opts["seed"] = int(opts["seed"])
    if "down" in opts:
        down = opts["down"]
        if isinstance(down, str):
            down = down.strip().lower() in ("1", "true", "yes", "on")
        opts["down"] = bool(down)
    for key in ("follow", "base", "correct", "harmful", "latency"):
        if key in opts:
            opts[key] = float(opts[key])
    return SimBackend(SimKnobs(**opts))


class SimBackend:
    """No model: answers are drawn from the knobs, so they cost nothing and prove nothing."""

    price = FREE
    offline = True

    def __init__(self, knobs: SimKnobs | None = None):
        self.knobs = knobs or SimKnobs()
        k = self.knobs
        self.id = f"sim(follow={k.follow:g},base={k.base:g},correct={k.correct:g},harmful={k.harmful:g},seed={k.seed})"

    def _rng(self, *parts: object) -> random.Random:
        blob = json.dumps([self.knobs.seed, *parts], sort_keys=True, default=str)
        return random.Random(int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big"))

    def can_offer_tools(self, names: tuple[str, ...]) -> bool:
        """The simulator plays any tool a task's checks name."""
        return True

    def complete(self, request: Request) -> Completion:
        started = time.monotonic()
        if self.knobs.latency:
            time.sleep(self.knobs.latency)
        if self.knobs.down:
            return Completion(text="", model="sim", error="server", error_message="simulated outage (down=1)")
        handler = {
            "attempt": self._attempt,
            "reflect": self._reflect,
            "judge": self._judge,
            "mine": self._mine,
            "preflight": lambda r: ("ok", []),
        }.get(request.purpose)
        if handler is None:
            return Completion(text="", model="sim", error="bad_request",
                              error_message=f"sim has no behaviour for purpose {request.purpose!r}")
        text, tools = handler(request)
        usage = Usage(input_tokens=(len(request.system) + len(request.user)) // 4 + 1,
                      output_tokens=len(text) // 4 + 1)
        return Completion(text=text, usage=usage, model="sim", tools_called=tools,
                          latency=time.monotonic() - started)

    # -- target -----------------------------------------------------------------------------

    def _attempt(self, request: Request) -> tuple[str, list[str]]:
        task = request.payload.get("task") or {}
        documents = request.payload.get("documents") or ""
        directives = [ln.strip() for ln in documents.splitlines() if ln.strip()]
        rng = self._rng("attempt", task.get("id"), request.sample, documents)
        judge = task.get("judge") or {}
        if judge.get("kind", "rule") != "rule":
            reference = task.get("reference", "")
            covered = any(reference and reference.lower() in d.lower() for d in directives)
            hit = rng.random() < (self.knobs.follow if covered else self.knobs.base)
            return (reference if hit else rng.choice(FILLER)), []
        return self._render(judge.get("checks") or [], directives, rng, task.get("intent", ""))

    def _probability(self, check: dict[str, Any], directives: list[str]) -> float:
        stance = coverage(check, directives)
        if check["op"] == "no_refusal" and stance == "none":
            stance = "covered"  # models do not refuse ordinary work unprompted
        if stance == "covered":
            return self.knobs.follow
        if stance == "conflict":
            return 1.0 - self.knobs.follow
        if stance == "mixed":  # contradictory instructions: a coin flip
            return 0.5
        return self.knobs.base

    def _render(self, checks: list[dict[str, Any]], directives: list[str], rng: random.Random,
                intent: str) -> tuple[str, list[str]]:
        ok = {i: rng.random() < self._probability(c, directives) for i, c in enumerate(checks)}
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
        cap = _cap_from(directives)
        if cap is not None and len(text) > cap and rng.random() < self.knobs.follow:
            text = text[:cap].rstrip()
        return text, tools

    # -- optimizer --------------------------------------------------------------------------

    def _reflect(self, request: Request) -> tuple[str, list[str]]:
        payload = request.payload
        rng = self._rng("reflect", payload.get("mode"), request.user, request.sample)
        failed: dict[str, tuple[dict[str, Any], list[str]]] = {}
        for item in payload.get("tasks") or []:
            for check in item.get("failed_checks") or []:
                if isinstance(check, dict) and check.get("op") in RULE_OPS:
                    failed.setdefault(describe_check(check), (check, []))[1].append(item.get("task_id", ""))
        existing = {r.lower() for rules in (payload.get("current_rules") or {}).values() for r in rules}
        edits: list[dict[str, Any]] = []
        ordered = sorted(failed.items(), key=lambda kv: (-len(kv[1][1]), kv[0]))
        for reason, (check, task_ids) in ordered:
            if rng.random() < self.knobs.correct:
                rule = covering_rule(check)
                if rule and rule.lower() not in existing:
                    edits.append({"target": "skill", "op": "add", "content": rule,
                                  "rationale": f"attempts failed because the response {reason}",
                                  "evidence": sorted(set(task_ids))})
            if rng.random() < self.knobs.harmful:
                rule = harmful_rule(check, rng)
                if rule and rule.lower() not in existing:
                    edits.append({"target": rng.choice(["skill", "memory"]), "op": "add", "content": rule,
                                  "rationale": "good attempts looked tighter and more focused",
                                  "evidence": sorted(set(task_ids))})
        limit = int(payload.get("max_edits") or 4)
        return json.dumps({"edits": edits[:limit]}), []

    def _mine(self, request: Request) -> tuple[str, list[str]]:
        """As a miner it keeps each check the user's complaints state outright with probability
        ``correct`` and, with probability ``harmful``, adds a malformed check (which the engine
        must reject)."""
        rng = self._rng("mine", request.payload.get("label"), request.user)
        checks = [c for c in request.payload.get("heuristic") or [] if rng.random() < self.knobs.correct]
        if rng.random() < self.knobs.harmful:
            checks.append({"op": "is_helpful", "arg": True})
        return json.dumps({"checkable": bool(checks), "checks": checks}), []

    def _judge(self, request: Request) -> tuple[str, list[str]]:
        rubric = str(request.payload.get("rubric", ""))
        response = str(request.payload.get("response", "")).lower()
        phrases = re.findall(r'"([^"]+)"', rubric)
        score = sum(p.lower() in response for p in phrases) / len(phrases) if phrases else 0.5
        return json.dumps({"score": score, "reason": f"{len(phrases)} rubric phrases checked"}), []


def _mentions(directive: str, needle: str) -> bool:
    return needle.lower() in directive.lower()


def coverage(check: dict[str, Any], directives: list[str]) -> str:
    """How the documents speak to one check: "covered", "conflict", "mixed" or "none"."""
    op, arg = check["op"], check.get("arg")
    seen: set[bool] = set()

    def see(positive: bool) -> None:
        seen.add(positive)

    for d in directives:
        negated = NEGATION_RE.search(d) is not None
        if op == "contains" and _mentions(d, arg):
            see(not negated)
        elif op == "not_contains" and _mentions(d, arg):
            see(negated)
        elif op == "section_present" and _mentions(d, arg) and re.search(r"section|heading", d, re.I):
            see(not negated)
        elif op == "section_contains" and _mentions(d, arg["section"]) and _mentions(d, arg["text"]):
            see(not negated)
        elif op == "regex" and arg in d:
            see(True)
        elif op == "tool_called" and _mentions(d, arg) and re.search(r"\b(tool|use|run|call)\b", d, re.I):
            see(not negated)
        elif op == "max_chars":
            for m in CAP_RE.finditer(d):
                if int(m.group(1)) <= arg:
                    see(True)
        elif op == "min_chars":
            for m in FLOOR_RE.finditer(d):
                if int(m.group(1)) >= arg:
                    see(True)
            for m in CAP_RE.finditer(d):
                if int(m.group(1)) < arg:
                    see(False)
    if seen == {True, False}:
        return "mixed"
    return "covered" if True in seen else "conflict" if False in seen else "none"


def _cap_from(directives: list[str]) -> int | None:
    caps = [int(m.group(1)) for d in directives for m in CAP_RE.finditer(d)]
    return min(caps) if caps else None


def covering_rule(check: dict[str, Any]) -> str | None:
    """The rule that covers a failed check (its ``op`` / ``arg`` as the judges validated them)."""
    op, arg = check.get("op"), check.get("arg")
    if op == "section_contains" and isinstance(arg, dict):
        return f'In the "{arg.get("section")}" section, always mention "{arg.get("text")}".'
    return {
        "contains": lambda: f'Always include "{arg}" in the response.',
        "not_contains": lambda: f'Never include "{arg}" in the response.',
        "section_present": lambda: f'Always include a section headed "{arg}".',
        "max_chars": lambda: f"Keep the response to at most {arg} characters.",
        "min_chars": lambda: f"Write at least {arg} characters.",
        "regex": lambda: f"Make the response match the pattern {arg} on its own line.",
        "tool_called": lambda: f"Always use the {arg} tool for this task.",
    }.get(str(op), lambda: None)()


def harmful_rule(check: dict[str, Any], rng: random.Random) -> str | None:
    """A plausible misreading of the evidence: an inverted rule or an over-tight length cap."""
    op = check.get("op")
    if op not in COVERABLE_OPS:
        return None
    if op == "contains" and rng.random() < 0.5:
        return f'Never include "{check.get("arg")}" in the response; keep it out.'
    return f"Keep every response short: at most {rng.choice([40, 60, 80])} characters."


def regex_example(pattern: str, rng: random.Random) -> str | None:
    """A string matching ``pattern`` (common regex subset), or None when unsupported."""
    try:
        import re._parser as sre_parse  # Python 3.11+
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse  # type: ignore[no-redef]
    try:
        parsed = sre_parse.parse(pattern)
        text = _gen(parsed, rng, sre_parse)
    except Exception:
        return None
    return text if re.search(pattern, text, re.MULTILINE) else None


def _gen(items: Any, rng: random.Random, sp: Any) -> str:
    c = sp  # constants live on the parser module
    out = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(av))
        elif name == "NOT_LITERAL":
            out.append("x" if chr(av) != "x" else "y")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_gen_in(av))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, sub = av
            n = lo if hi == c.MAXREPEAT else min(hi, max(lo, 1))
            out.append("".join(_gen(sub, rng, sp) for _ in range(n)))
        elif name == "SUBPATTERN":
            out.append(_gen(av[-1], rng, sp))
        elif name == "BRANCH":
            out.append(_gen(av[1][0], rng, sp))
        elif name in ("AT", "ASSERT_NOT", "GROUPREF"):
            continue
        elif name == "ASSERT":
            continue
        else:
            raise ValueError(name)
    return "".join(out)


def _gen_in(items: Any) -> str:
    negate = any(str(op) == "NEGATE" for op, _ in items)
    if negate:
        return "x"
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            return chr(av)
        if name == "RANGE":
            return chr(av[0])
        if name == "CATEGORY":
            cat = str(av)
            if "DIGIT" in cat and "NOT" not in cat:
                return "1"
            if "SPACE" in cat and "NOT" not in cat:
                return " "
            return "a"
    return "a"
