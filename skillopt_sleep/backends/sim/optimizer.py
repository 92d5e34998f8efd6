"""The simulator as the *optimizer*: one function per request purpose, each ``(knobs, request) ->
(text, tools)``; ``HANDLERS`` maps purposes to them (add a purpose by adding a function and a line).

It reads only the request's payload — the evidence a real optimizer is shown — and turns the
checks it sees failing into rules, right with probability ``correct`` and harmful with ``harmful``.
As a reviser (``refine``) it folds the checks a rule's replay newly broke into the rule, each with
probability ``correct``; asked to say a rule that quotes a pattern in plain words (``reword``), it
does so with probability ``correct``. When the payload shows the documents' hand-written lines (``documents``)
and one of them asks against a check, the covering rule names it in ``supersedes`` — the reading a
careful optimizer shown the whole document would do.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.sim.knobs import SimKnobs
from skillopt_sleep.backends.sim.reading import coverage, parse_line, scope_applies, stance
from skillopt_sleep.rules.conflicts import contradiction
from skillopt_sleep.checks.words import limit_of, limit_words, quoted_syntax, readable_regex
from skillopt_sleep.checks.judges import RULE_OPS, describe_check

# The checks the optimizer knows a rule for (``no_refusal`` has none: a model does not refuse
# ordinary work unprompted).
COVERABLE_OPS = (
    "contains",
    "not_contains",
    "section_present",
    "section_contains",
    "max_chars",
    "min_chars",
    "regex",
    "tool_called",
)


def reflect(knobs: SimKnobs, request: Request) -> tuple[str, list[str]]:
    """Edits proposed from the failing checks in the evidence, most-failed first."""
    payload = request.payload
    rng = knobs.rng("reflect", payload.get("mode"), request.user, request.sample)
    failed: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for item in payload.get("tasks") or []:
        for check in item.get("failed_checks") or []:
            if isinstance(check, dict) and check.get("op") in RULE_OPS:
                failed.setdefault(describe_check(check), (check, []))[1].append(item.get("task_id", ""))
    current = [parse_line(r, learned=True) for rules in (payload.get("current_rules") or {}).values() for r in rules]
    texts = {item.get("task_id", ""): str(item.get("intent") or "") for item in payload.get("tasks") or []}

    def present(rule: str, task_ids: list[str]) -> bool:
        """The documents already hold this rule for these tasks (unscoped, or scoped to their work)."""
        want = rule.lower().rstrip(".")
        return any(
            d.text.lower().rstrip(".") == want and all(scope_applies(d.scope, texts.get(t, "")) for t in task_ids)
            for d in current
        )

    hand_written = [
        line
        for doc in (payload.get("documents") or {}).values()
        if isinstance(doc, dict)
        for line in doc.get("hand_written") or []
        if isinstance(line, str)
    ]
    edits: list[dict[str, Any]] = []
    ordered = sorted(failed.items(), key=lambda kv: (-len(kv[1][1]), kv[0]))
    for reason, (check, task_ids) in ordered:
        if rng.random() < knobs.correct:
            rule = covering_rule(check)
            if rule and not present(rule, task_ids):
                edit = {
                    "target": "skill",
                    "op": "add",
                    "content": rule,
                    "rationale": f"attempts failed because the response {reason}",
                    "evidence": sorted(set(task_ids)),
                }
                against = list(
                    dict.fromkeys(
                        [line for line in [conflicting_line(check, hand_written)] if line]
                        + overridden_lines(rule, hand_written)
                    )
                )
                if against:
                    edit["supersedes"] = "\n".join(against)
                edits.append(edit)
        if rng.random() < knobs.harmful:
            rule = harmful_rule(check, rng)
            if rule and not present(rule, task_ids):
                edit = {
                    "target": rng.choice(["skill", "memory"]),
                    "op": "add",
                    "content": rule,
                    "rationale": "good attempts looked tighter and more focused",
                    "evidence": sorted(set(task_ids)),
                }
                against = overridden_lines(rule, hand_written)
                if against:
                    edit["supersedes"] = "\n".join(against)
                edits.append(edit)
    limit = int(payload.get("max_edits") or 4)
    return json.dumps({"edits": edits[:limit]}), []


def mine(knobs: SimKnobs, request: Request) -> tuple[str, list[str]]:
    """As a miner it keeps each check the user's complaints state outright with probability
    ``correct`` and, with probability ``harmful``, adds a malformed check (which the engine
    must reject)."""
    rng = knobs.rng("mine", request.payload.get("label"), request.user)
    checks = [c for c in request.payload.get("heuristic") or [] if rng.random() < knobs.correct]
    if rng.random() < knobs.harmful:
        checks.append({"op": "is_helpful", "arg": True})
    return json.dumps({"checkable": bool(checks), "checks": checks}), []


def rank(knobs: SimKnobs, request: Request) -> tuple[str, list[str]]:
    """Candidates ordered by how many of the evidence's failing tasks a candidate's rule covers a
    failed check of (minus those it contradicts one of), as a reader of the rule and the failures
    would judge; near ties fall in random order (a uniform 0..1 jitter on each count) and, with
    probability ``harmful``, a random candidate is misjudged as the best."""
    payload = request.payload
    candidates = [c for c in payload.get("candidates") or [] if isinstance(c, dict)]
    rng = knobs.rng("rank", request.user, request.sample)
    checks_by_task = [
        [c for c in item.get("failed_checks") or [] if isinstance(c, dict) and c.get("op") in RULE_OPS]
        for item in payload.get("tasks") or []
        if isinstance(item, dict)
    ]

    def merit(candidate: dict[str, Any]) -> float:
        rule = [str(candidate.get("content") or "")]
        seen = [{coverage(c, rule) for c in checks} for checks in checks_by_task]
        return sum("covered" in s for s in seen) - sum("conflict" in s for s in seen) + rng.random()

    scores = [merit(c) for c in candidates]
    order = sorted(range(len(candidates)), key=lambda i: -scores[i])
    if order and rng.random() < knobs.harmful:
        order.insert(0, order.pop(rng.randrange(len(order))))
    return json.dumps({"order": [i + 1 for i in order]}), []


def refine(knobs: SimKnobs, request: Request) -> tuple[str, list[str]]:
    """A rule rewritten so it also covers the checks its replay newly broke (the payload's
    ``failed_checks``, as data): with probability ``correct`` each coverable one is appended as a
    clause (``; <covering rule>``); otherwise the rule comes back as it was."""
    payload = request.payload
    rng = knobs.rng("refine", request.user, request.sample)
    rule = str(payload.get("rule") or "").strip().rstrip(".")
    clauses: list[str] = []
    for item in payload.get("tasks") or []:
        for check in item.get("failed_checks") or []:
            if isinstance(check, dict) and check.get("op") in RULE_OPS:
                clause = covering_rule(check)
                if clause and clause not in clauses and rng.random() < knobs.correct:
                    clauses.append(clause)
    text = "; ".join([rule] + [c[:1].lower() + c[1:].rstrip(".") for c in clauses]) + "."
    return json.dumps({"content": text}), []


def reword(knobs: SimKnobs, request: Request) -> tuple[str, list[str]]:
    """A rule said again, each fix with probability ``correct`` (otherwise the rule comes back as
    it was): a rule that quotes a failed pattern check becomes that check's covering rule in plain
    words (its scope kept); a superseding rule restates what it keeps of the line (``keep``)."""
    payload = request.payload
    rng = knobs.rng("reword", request.user, request.sample)
    rule, scope = str(payload.get("rule") or ""), str(payload.get("scope") or "")
    keep = [str(k) for k in payload.get("keep") or [] if str(k).strip()]
    if keep and rng.random() < knobs.correct:
        rule = "; ".join([rule.rstrip(". ")] + [k[:1].lower() + k[1:].rstrip(". ") for k in keep]) + "."
        rule = f"When {scope}, {rule[:1].lower()}{rule[1:]}" if scope else rule
        return json.dumps({"content": rule}), []
    for check in payload.get("failed_checks") or []:
        if not (isinstance(check, dict) and check.get("op") == "regex" and str(check.get("arg")) in rule):
            continue
        plain = covering_rule(check)
        if plain and not quoted_syntax(plain) and rng.random() < knobs.correct:
            rule = f"When {scope}, {plain[:1].lower()}{plain[1:]}" if scope else plain
            break
    return json.dumps({"content": rule}), []


HANDLERS: dict[str, Callable[[SimKnobs, Request], tuple[str, list[str]]]] = {
    "reflect": reflect,
    "mine": mine,
    "rank": rank,
    "refine": refine,
    "reword": reword,
}


def overridden_lines(rule: str, hand_written: list[str]) -> list[str]:
    """The hand-written lines the rule asks against (``conflicts.contradiction``): the lines a
    careful optimizer, shown the whole document, names in ``supersedes``."""
    return [line for line in hand_written if contradiction(rule, line)]


def conflicting_line(check: dict[str, Any], hand_written: list[str]) -> str | None:
    """The first hand-written line (as the payload shows it) that asks against the check: the line
    a covering rule has to supersede to win."""
    for line in hand_written:
        if stance(check, parse_line(line).text) is False:
            return line
    return None


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
        "regex": lambda: _regex_rule(str(arg)),
        "tool_called": lambda: f"Always use the {arg} tool for this task.",
    }.get(str(op), lambda: None)()


def _regex_rule(pattern: str) -> str:
    """A pattern check's rule in the words a person would use (``check_words``); a pattern with no
    such reading is quoted, as an optimizer shown only the pattern would."""
    limit = limit_of(pattern)
    if limit:
        what = limit_words(*limit)
        return f"Keep the response to {what}." if limit[0] != "first_line_chars" else f"Write {what}."
    text = readable_regex(pattern)
    return f'Always include a line like "{text}".' if text else f"Make the response match the pattern {pattern}."


def harmful_rule(check: dict[str, Any], rng: random.Random) -> str | None:
    """A plausible misreading of the evidence: an inverted rule or an over-tight length cap."""
    op = check.get("op")
    if op not in COVERABLE_OPS:
        return None
    if op == "contains" and rng.random() < 0.5:
        return f'Never include "{check.get("arg")}" in the response; keep it out.'
    return f"Keep every response short: at most {rng.choice([40, 60, 80])} characters."
