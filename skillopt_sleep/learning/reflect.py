"""Reflection: show the optimizer model what good attempts did that bad ones did not
(contrastive, over the highest-spread train tasks) and plain failures; parse its bounded edits.

Every failing kind of task is reflected on — a few kinds per request (``KINDS_PER_REQUEST``), so
no kind is crowded out by the alphabetically first ones — then the proposals are aggregated
(near-duplicates merged, their evidence pooled) and, when there are more than a night may test,
ranked by the optimizer (``rank.py``) so the best ``max_edits`` reach the gate, not the first
proposed, dealt over the kinds (``spread_over_kinds``: each kind's best before any kind's
second). A reply that is not JSON is repaired once; one still unusable is counted in the report
("optimizer reply was not JSON after one repair"), never read as "no edits".

Guardrails applied to every proposed edit before it can reach the gate: a known target and op,
a one-line bounded rule (``documents.clean_rule``) a person would write (a rule that quotes regex
syntax or a check's internal form, or that supersedes a hand-written line and drops what of it it
does not override, is reworded once, ``reword.py``, and refused if it still does), no rule that
contradicts a hand-written line without naming it in ``supersedes`` (``conflicts.py``), not
already refused on an earlier night, and no rule that overrides a task's output contract.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.rules.conflicts import contradiction
from skillopt_sleep.documents.optimizer_view import optimizer_payload, optimizer_view
from skillopt_sleep.documents.managed_block import (
    DocumentSet,
    EditRefused,
    Limits,
    clean_rule,
)
from skillopt_sleep.reply_json import extract_json
from skillopt_sleep.checks.judges import check_from_id
from skillopt_sleep.prompts import render
from skillopt_sleep.learning.rank import rank
from skillopt_sleep.store.refusals import rule_text, similar_text
from skillopt_sleep.reply_repair import Unusable, parse_replies
from skillopt_sleep.learning.reword import problem, reword
from skillopt_sleep.sanitize import clean_text
from skillopt_sleep.documents.handwritten import superseded_lines
from skillopt_sleep.rules.scope import settle_scope, split_scoped
from skillopt_sleep.types import EDIT_OPS, EDIT_TARGETS, Attempt, Edit, TaskRecord, kind_of

EXCERPT = 1200
KINDS_PER_REQUEST = 3  # kinds of task shown in one reflect request
TASKS_PER_KIND = 3  # tasks of one kind shown as evidence
EDITS_PER_KIND = 2  # proposals a reflect request may make per kind it shows (at least max_edits)
FORMAT_WORDS = ("json", "yaml", "xml", "html", "csv", "markdown", "plain text")
EDIT_SCHEMA = {
    "type": "object",
    "properties": {
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    k: {"type": "string"}
                    for k in ("target", "op", "content", "anchor", "scope", "rationale", "supersedes")
                }
                | {"evidence": {"type": "array", "items": {"type": "string"}}},
                "required": ["target", "op", "content"],
            },
        }
    },
    "required": ["edits"],
}


@dataclass
class Proposal:
    edits: list[Edit]
    refused: list[tuple[Edit, str]]  # dropped by a guardrail, with the reason
    calls: int = 0  # optimizer requests made (repairs included)
    unusable: list[str] = field(default_factory=list)  # why a reflect reply gave nothing, after a repair
    candidates: int = 0  # distinct edits that passed the guardrails, before the cut to max_edits


def spread(attempts: list[Attempt]) -> float:
    scores = [a.soft for a in attempts]
    return max(scores) - min(scores) if scores else 0.0


@dataclass
class KindEvidence:
    """What one kind of task has to teach: contrastive pairs and tasks that failed every attempt."""

    kind: str
    contrastive: list[tuple[TaskRecord, Attempt, Attempt]] = field(default_factory=list)
    failures: list[tuple[TaskRecord, list[Attempt]]] = field(default_factory=list)

    def items(self) -> list[tuple[TaskRecord, list[Attempt]]]:
        return [(t, [g, b]) for t, g, b in self.contrastive] + self.failures

    def shortfall(self) -> float:
        """How far the kind's shown attempts fall short of passing (for ordering kinds)."""
        softs = [a.soft for _, xs in self.items() for a in xs]
        return sum(1.0 - x for x in softs) / len(softs) if softs else 0.0


def select(
    tasks: list[TaskRecord], attempts: dict[str, list[Attempt]], tasks_per_kind: int = TASKS_PER_KIND
) -> list[KindEvidence]:
    """Every kind with something to learn, the worst-off first (ties by kind), each with at most
    ``tasks_per_kind`` tasks: contrastive pairs from its highest-spread tasks, then tasks without a
    good attempt."""
    by_id = {t.id: t for t in tasks}
    kinds: dict[str, KindEvidence] = {}
    ranked = sorted(attempts.items(), key=lambda kv: (-spread(kv[1]), kv[0]))
    for tid, xs in ranked:
        if not xs or tid not in by_id:
            continue
        task = by_id[tid]
        group = kinds.setdefault(kind_of(task), KindEvidence(kind_of(task)))
        if len(group.contrastive) + len(group.failures) >= tasks_per_kind:
            continue
        if spread(xs) > 0:
            best = max(xs, key=lambda a: (a.soft, -a.sample))
            worst = min(xs, key=lambda a: (a.soft, a.sample))
            group.contrastive.append((task, best, worst))
        elif xs[0].soft < 1.0:
            group.failures.append((task, xs))
    found = [g for g in kinds.values() if g.contrastive or g.failures]
    return sorted(found, key=lambda g: (-g.shortfall(), g.kind))


def minibatches(kinds: list[KindEvidence], per_request: int = KINDS_PER_REQUEST) -> list[list[KindEvidence]]:
    """The kinds in groups of ``per_request``, one reflect request each."""
    per_request = max(1, per_request)
    return [kinds[i : i + per_request] for i in range(0, len(kinds), per_request)]


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
        {
            "task_id": t.id,
            "intent": t.intent,
            "kind": t.kind,
            "fail_reasons": sorted({r for a in xs if a.soft < 1.0 for r in a.fail_reasons}),
            "failed_checks": [
                check_from_id(c) for c in sorted({c for a in xs if a.soft < 1.0 for c in a.failed_checks})
            ],
        }
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
        edits.append(
            Edit(
                target=str(item.get("target", "")).strip().lower(),
                op=str(item.get("op", "add")).strip().lower(),
                content=str(item.get("content") or ""),
                anchor=str(item.get("anchor") or ""),
                scope=str(item.get("scope") or ""),
                rationale=str(item.get("rationale") or "")[:500],
                evidence=[str(e) for e in evidence][:20] if isinstance(evidence, list) else [],
                supersedes=_supersedes(item.get("supersedes")),
            )
        )
    return edits


def _supersedes(value: object) -> str:
    """The lines an edit overrides, one per line: a string, or a list of them."""
    lines = value if isinstance(value, list) else [value]
    return "\n".join(str(v) for v in lines if v)[:2000]


def _documents_view(docs: DocumentSet) -> tuple[str, dict[str, list[str]]]:
    """The documents as the optimizer is shown them: the text in its prompt, and as data."""
    current = docs.skill.rules() + docs.memory.rules()
    text = "\n".join(f"- {r}" for r in current) or "(none yet)"
    return text, {"skill": docs.skill.rules(), "memory": docs.memory.rules()}


def _batch_request(
    batch: list[KindEvidence],
    system: str,
    documents: tuple[str, dict[str, list[str]]],
    max_edits: int,
    docs: DocumentSet,
) -> Request:
    """One reflect request over a few kinds: their contrastive pairs and their plain failures."""
    contrastive = [pair for group in batch for pair in group.contrastive]
    failures = [item for group in batch for item in group.failures]
    sections = ([_contrastive_evidence(contrastive)] if contrastive else []) + (
        [_failure_evidence(failures)] if failures else []
    )
    mode = "mixed" if contrastive and failures else "contrastive" if contrastive else "failure"
    items = [item for group in batch for item in group.items()]
    return Request(
        purpose="reflect",
        system=system,
        user=render(
            "reflect_user", current_rules=documents[0], evidence="\n\n".join(sections), documents=optimizer_view(docs)
        ),
        max_tokens=1500,
        temperature=0.7,
        payload={
            "mode": mode,
            "kinds": [g.kind for g in batch],
            "tasks": _payload_tasks(items),
            "current_rules": documents[1],
            "max_edits": max_edits,
            "documents": optimizer_payload(docs),
        },
        json_schema=EDIT_SCHEMA,
    )


def _rank_evidence(kinds: list[KindEvidence]) -> str:
    """The failures behind the candidates, one line a task (the rank request's evidence)."""
    lines = []
    for group in kinds:
        for task, xs in group.items():
            reasons = sorted({r for a in xs if a.soft < 1.0 for r in a.fail_reasons})
            lines.append(
                f"- task {task.id} (kind: {clean_text(group.kind)}): "
                f"{clean_text('; '.join(reasons))[:400] or 'scored below 1'}"
            )
    return "\n".join(lines)


def _merge_into(kept: list[Edit], edit: Edit) -> bool:
    """Fold ``edit`` into a kept near-duplicate (same op, text one rewording apart — whichever
    document each names), pooling their evidence; False when none of ``kept`` is one."""
    for other in kept:
        if (
            other.op == edit.op
            and similar_text(rule_text(other), rule_text(edit))
            and other.anchor.lower() == edit.anchor.lower()
            and other.supersedes == edit.supersedes
        ):
            other.evidence += [e for e in edit.evidence if e not in other.evidence]
            return True
    return False


def reflect(
    optimizer: Client,
    tasks: list[TaskRecord],
    attempts: dict[str, list[Attempt]],
    docs: DocumentSet,
    *,
    max_edits: int = 4,
    limits: Limits = Limits(),
    already_refused: Callable[[Edit], bool] = lambda e: False,
    kinds_per_request: int = KINDS_PER_REQUEST,
    samples: int = 1,
) -> Proposal:
    """Ask the optimizer for edits over every failing kind (a few kinds per request), filter them,
    merge near-duplicates, and rank the rest when there are more than ``max_edits``.

    ``samples``: each request is sent that many times (sample 0, 1, ...; it runs at a temperature
    above 0): an optimizer that sees a failure does not always name its fix, and a second reading
    of the same evidence is one cheap call beside the dozens a val test of a wrong rule costs.
    Near-duplicate proposals of the samples are merged like any others."""
    kinds = select(tasks, attempts)
    documents = _documents_view(docs)
    requests: list[Request] = []
    for batch in minibatches(kinds, kinds_per_request):
        asked = max(max_edits, EDITS_PER_KIND * len(batch))  # ranking cuts the pool to max_edits
        system = render("reflect_system", max_edits=asked, max_rule_chars=limits.max_rule_chars)
        request = _batch_request(batch, system, documents, asked, docs)
        requests.extend(replace(request, sample=s) for s in range(max(1, samples)))
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
    proposed, reworded = reword(optimizer, proposed, attempts, limits.max_rule_chars)
    hand_written = docs.skill.redacted_hand_written() + docs.memory.redacted_hand_written()
    candidates, refused = _guard(proposed, tasks, documents, limits, already_refused, hand_written)
    ranking = rank(
        optimizer,
        candidates,
        max_edits,
        _rank_evidence(kinds),
        [item for request in requests if request.sample == 0 for item in request.payload["tasks"]],
    )
    if ranking.unusable:
        unusable.append(f"rank: {ranking.unusable}; kept the best supported")
    ordered = spread_over_kinds([candidates[i] for i in ranking.order], tasks)
    for edit in ordered[max_edits:]:
        refused.append((edit, f"ranked below the best {max_edits} of {len(ordered)} candidates"))
    return Proposal(
        edits=ordered[:max_edits],
        refused=refused,
        calls=len(requests) + repairs + reworded + ranking.calls,
        unusable=unusable,
        candidates=len(ordered),
    )


def spread_over_kinds(ordered: list[Edit], tasks: list[TaskRecord]) -> list[Edit]:
    """The ranked candidates re-dealt so the night's cut reaches every kind: each kind's best
    candidate first (in rank order), then each kind's second, and so on; within a kind the rank
    stands. A night tests few edits, and two rules for one kind compete for the same val tasks
    (each must add something beside the other) while a kind left out waits a whole night. A
    candidate's kind is the kinds of its evidence (a rule drawn from several kinds is its own group)."""
    by_id = {t.id: t for t in tasks}
    rounds: dict[frozenset[str], int] = {}
    dealt = []
    for position, edit in enumerate(ordered):
        group = frozenset(kind_of(by_id[e]) for e in edit.evidence if e in by_id)
        turn = rounds.get(group, 0)
        rounds[group] = turn + 1
        dealt.append((turn, position, edit))
    return [edit for _, _, edit in sorted(dealt, key=lambda x: (x[0], x[1]))]


def _contradicts(edit: Edit, hand_written: Sequence[str]) -> str | None:
    """Why a rule is refused that asks against a hand-written line (``conflicts``) it does not name
    in ``supersedes``: a model would read both."""
    body = split_scoped(edit.content)[1]
    named = set(superseded_lines(edit.supersedes))
    for line in hand_written:
        what = contradiction(body, line) if line not in named else None
        if what:
            return (
                f'contradicts the hand-written line "{line[:120]}" ({what}): a rule that overrides '
                "a person's line names it in supersedes"
            )
    return None


def _guard(
    proposed: list[Edit],
    tasks: list[TaskRecord],
    documents: tuple[str, dict[str, list[str]]],
    limits: Limits,
    already_refused: Callable[[Edit], bool],
    hand_written: Sequence[str] = (),
) -> tuple[list[Edit], list[tuple[Edit, str]]]:
    """The guardrails over every proposed edit; near-duplicates merged into the first."""
    by_id = {t.id: t for t in tasks}
    contracts = [t.system for t in tasks if t.system]
    known = {r.lower() for rules in documents[1].values() for r in rules}
    edits: list[Edit] = []
    refused: list[tuple[Edit, str]] = []
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
        if reason is None and (found := problem(edit)):
            reason = f"{found[0]}, also after one rewording"
        if reason is None and edit.op in ("add", "replace", "insert_after"):
            reason = _contradicts(edit, hand_written)
        if reason is None and _merge_into(edits, edit):
            continue
        if reason is None and edit.op == "add" and edit.content.lower() in known:
            reason = "rule already present"
        if reason is None and violates_contract(edit.content, contracts):
            reason = "overrides a task's output contract"
        if reason is None and already_refused(edit):
            reason = "refused by the gate on an earlier night"
        _defuse(edit)
        if reason:
            refused.append((edit, reason))
        else:
            edits.append(edit)
    return edits, refused
