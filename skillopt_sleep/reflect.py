"""Reflection: show the optimizer model what good attempts did that bad ones did not
(contrastive, over the highest-spread train tasks) and plain failures; parse its bounded edits.
A reply that is not JSON is repaired once; one still unusable is counted in the report ("optimizer
reply was not JSON after one repair"), never read as "no edits".

Guardrails applied to every proposed edit before it can reach the gate: a known target and op,
a one-line bounded rule (``documents.clean_rule``), not already refused on an earlier night, and
no rule that overrides a task's output contract.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from collections.abc import Callable

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.documents import (
    DocumentSet,
    EditRefused,
    Limits,
    clean_rule,
    optimizer_payload,
    optimizer_view,
)
from skillopt_sleep.jsonx import extract_json
from skillopt_sleep.judges import check_from_id
from skillopt_sleep.prompts import render
from skillopt_sleep.repair import Unusable, parse_replies
from skillopt_sleep.sanitize import clean_text
from skillopt_sleep.scope import settle_scope
from skillopt_sleep.types import EDIT_OPS, EDIT_TARGETS, Attempt, Edit, TaskRecord

EXCERPT = 1200
FORMAT_WORDS = ("json", "yaml", "xml", "html", "csv", "markdown", "plain text")
EDIT_SCHEMA = {
    "type": "object",
    "properties": {"edits": {"type": "array", "items": {
        "type": "object",
        "properties": {k: {"type": "string"} for k in ("target", "op", "content", "anchor", "scope",
                                                       "rationale", "supersedes")}
        | {"evidence": {"type": "array", "items": {"type": "string"}}},
        "required": ["target", "op", "content"],
    }}},
    "required": ["edits"],
}


@dataclass
class Proposal:
    edits: list[Edit]
    refused: list[tuple[Edit, str]]  # dropped by a guardrail, with the reason
    calls: int = 0  # optimizer requests made (repairs included)
    unusable: list[str] = field(default_factory=list)  # why a reflect reply gave nothing, after a repair


def spread(attempts: list[Attempt]) -> float:
    scores = [a.soft for a in attempts]
    return max(scores) - min(scores) if scores else 0.0


def select(tasks: list[TaskRecord], attempts: dict[str, list[Attempt]], max_contrastive: int = 4,
           max_failures: int = 4) -> tuple[list[tuple[TaskRecord, Attempt, Attempt]], list[tuple[TaskRecord, list[Attempt]]]]:
    """(contrastive pairs from the highest-spread tasks, failing tasks without a good attempt)."""
    by_id = {t.id: t for t in tasks}
    contrastive = []
    failures = []
    ranked = sorted(attempts.items(), key=lambda kv: (-spread(kv[1]), kv[0]))
    for tid, xs in ranked:
        if not xs or tid not in by_id:
            continue
        if spread(xs) > 0 and len(contrastive) < max_contrastive:
            best = max(xs, key=lambda a: (a.soft, -a.sample))
            worst = min(xs, key=lambda a: (a.soft, a.sample))
            contrastive.append((by_id[tid], best, worst))
        elif spread(xs) == 0 and xs[0].soft < 1.0 and len(failures) < max_failures:
            failures.append((by_id[tid], xs))
    return contrastive, failures


def _excerpt(text: str) -> str:
    """Model and transcript text as the optimizer is shown it: no escapes or invisibles, bounded."""
    text = clean_text(text).strip()
    return text if len(text) <= EXCERPT else text[:EXCERPT] + " …"


def _kind_line(task: TaskRecord) -> str:
    return f" (kind: {clean_text(task.kind)})" if task.kind else ""


def _contrastive_evidence(pairs: list[tuple[TaskRecord, Attempt, Attempt]]) -> str:
    blocks = []
    for task, good, bad in pairs:
        blocks.append(
            f"### Task {task.id}{_kind_line(task)}\nRequest: {_excerpt(task.intent)}\n"
            f"Better attempt (score {good.soft:.2f}):\n{_excerpt(good.response)}\n"
            f"Failed checks: {clean_text('; '.join(good.fail_reasons)) or 'none'}\n"
            f"Worse attempt (score {bad.soft:.2f}):\n{_excerpt(bad.response)}\n"
            f"Failed checks: {clean_text('; '.join(bad.fail_reasons)) or 'none'}\n"
        )
    return "Contrast the better and the worse attempt of each task.\n\n" + "\n".join(blocks)


def _failure_evidence(failures: list[tuple[TaskRecord, list[Attempt]]]) -> str:
    blocks = []
    for task, xs in failures:
        reasons = sorted({r for a in xs for r in a.fail_reasons})
        blocks.append(
            f"### Task {task.id}{_kind_line(task)}\nRequest: {_excerpt(task.intent)}\n"
            f"Every attempt failed (score {xs[0].soft:.2f}). Example:\n{_excerpt(xs[0].response)}\n"
            f"Failed checks: {clean_text('; '.join(reasons))}\n"
        )
    return "These tasks failed in every attempt.\n\n" + "\n".join(blocks)


def _payload_tasks(items: list[tuple[TaskRecord, list[Attempt]]]) -> list[dict]:
    """The evidence as data for the simulator: the failed checks themselves, not their wording."""
    return [
        {"task_id": t.id, "intent": t.intent, "kind": t.kind,
         "fail_reasons": sorted({r for a in xs if a.soft < 1.0 for r in a.fail_reasons}),
         "failed_checks": [check_from_id(c) for c in sorted({c for a in xs if a.soft < 1.0
                                                              for c in a.failed_checks})]}
        for t, xs in items
    ]


def violates_contract(rule: str, contracts: list[str]) -> bool:
    """A rule that demands an output format other than one a task's contract prescribes."""
    lowered = rule.lower()
    if not re.search(r"\b(respond|reply|answer|output|format|return)\b", lowered):
        return False
    wanted = {w for w in FORMAT_WORDS if re.search(rf"\b{re.escape(w)}\b", lowered)}
    if not wanted:
        return False
    for contract in contracts:
        named = {w for w in FORMAT_WORDS if re.search(rf"\b{re.escape(w)}\b", contract.lower())}
        if named and not (named & wanted):
            return True
    return False


def _defuse(edit: Edit) -> None:
    """Strip escapes and invisible characters from an edit's text, in place, once its guardrails
    have judged the raw text: refused and accepted edits alike reach the report and the ledger."""
    edit.target, edit.op = clean_text(edit.target)[:40], clean_text(edit.op)[:40]
    edit.content, edit.anchor = clean_text(edit.content), clean_text(edit.anchor)
    edit.supersedes = clean_text(edit.supersedes)
    edit.rationale = clean_text(edit.rationale)
    edit.scope = clean_text(edit.scope)[:200]
    edit.evidence = [clean_text(e)[:200] for e in edit.evidence]


def parse_edits(text: str) -> list[Edit]:
    """The edits in an optimizer reply; none when it holds no edits list (see ``edits_from_reply``)."""
    try:
        return edits_from_reply(text)
    except ValueError:
        return []


def edits_from_reply(text: str) -> list[Edit]:
    """The edits in an optimizer reply (``{"edits": [...]}`` or a bare list; ``[]`` is a real
    "no edits"); ValueError when the reply holds no such JSON."""
    data = extract_json(text)
    if isinstance(data, dict):
        if not isinstance(data.get("edits"), list):
            raise ValueError('the reply has no JSON object with an "edits" list')
        data = data["edits"]
    if not isinstance(data, list):
        raise ValueError("the reply is not JSON")
    edits = []
    for item in data:
        if not isinstance(item, dict):
            continue
        evidence = item.get("evidence") or []
        edits.append(Edit(
            target=str(item.get("target", "")).strip().lower(),
            op=str(item.get("op", "add")).strip().lower(),
            content=str(item.get("content") or ""),
            anchor=str(item.get("anchor") or ""),
            scope=str(item.get("scope") or ""),
            rationale=str(item.get("rationale") or "")[:500],
            evidence=[str(e) for e in evidence][:20] if isinstance(evidence, list) else [],
            supersedes=str(item.get("supersedes") or "")[:1000],
        ))
    return edits


def reflect(optimizer: Client, tasks: list[TaskRecord], attempts: dict[str, list[Attempt]],
            docs: DocumentSet, *, max_edits: int = 4, limits: Limits = Limits(),
            already_refused: Callable[[Edit], bool] = lambda e: False) -> Proposal:
    """Ask the optimizer for edits (contrastive + failure calls) and filter them."""
    contrastive, failures = select(tasks, attempts)
    current = docs.skill.rules() + docs.memory.rules()
    current_text = "\n".join(f"- {r}" for r in current) or "(none yet)"
    rules_payload = {"skill": docs.skill.rules(), "memory": docs.memory.rules()}
    system = render("reflect_system", max_edits=max_edits, max_rule_chars=limits.max_rule_chars)
    calls = []
    if contrastive:
        items = [(t, [g, b]) for t, g, b in contrastive]
        calls.append(("contrastive", _contrastive_evidence(contrastive), items))
    if failures:
        calls.append(("failure", _failure_evidence(failures), failures))
    requests = [
        Request(purpose="reflect", system=system,
                user=render("reflect_user", current_rules=current_text, evidence=evidence,
                            documents=optimizer_view(docs)),
                max_tokens=1500, temperature=0.7,
                payload={"mode": mode, "tasks": _payload_tasks(items), "current_rules": rules_payload,
                         "max_edits": max_edits, "documents": optimizer_payload(docs)},
                json_schema=EDIT_SCHEMA)
        for mode, evidence, items in calls
    ]
    replies = optimizer.map(requests)
    parsed, repairs = parse_replies(optimizer, requests, replies, edits_from_reply, who="optimizer")
    proposed: list[Edit] = []
    unusable: list[str] = []
    for result in parsed:
        if isinstance(result, Unusable):
            optimizer.leave_out(f"reflect: {result.reason}")
            unusable.append(result.reason + (f" ({result.detail})" if result.detail else ""))
        else:
            proposed.extend(result)
    by_id = {t.id: t for t in tasks}
    contracts = [t.system for t in tasks if t.system]
    known = {r.lower() for r in current}
    edits: list[Edit] = []
    refused: list[tuple[Edit, str]] = []
    seen: set[tuple[str, str, str]] = set()
    for edit in proposed:
        reason = None
        if edit.target not in EDIT_TARGETS:
            reason = f"unknown target {edit.target!r}"
        elif edit.op not in EDIT_OPS:
            reason = f"unknown op {edit.op!r}"
        else:
            try:
                if edit.op not in ("delete", "delete_line"):
                    settle_scope(edit, by_id)
                    edit.content = clean_rule(edit.content, limits)
            except EditRefused as exc:
                reason = str(exc)
        key = (edit.op, edit.content.lower(), edit.anchor.lower())
        if reason is None and key in seen:
            continue
        if reason is None and edit.op == "add" and edit.content.lower() in known:
            reason = "rule already present"
        if reason is None and violates_contract(edit.content, contracts):
            reason = "overrides a task's output contract"
        if reason is None and already_refused(edit):
            reason = "refused by the gate on an earlier night"
        if reason is None and len(edits) >= max_edits:
            reason = f"over the budget of {max_edits} edits per night"
        _defuse(edit)
        if reason:
            refused.append((edit, reason))
        else:
            seen.add(key)
            edits.append(edit)
    return Proposal(edits=edits, refused=refused, calls=len(requests) + repairs, unusable=unusable)
