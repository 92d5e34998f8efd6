"""Retiring a learned rule when a document is full and a new rule cannot be merged.

A full document (``Limits.max_rules``) refuses another line; ``rule_budget.merged`` folds a new
rule into one of its own scope when it can. When it cannot (no rule of that scope, or the merged
line too long), the new rule may instead *replace* a learned rule that no longer earns its place:
one ``replace`` edit, "retire this rule, put the new one in its line". Chosen from tonight's
evidence only, in this order (the first in the block — the oldest — within each):

  1. a scoped rule whose scope names none of tonight's task kinds (it serves nothing tonight's work
     asks for);
  2. a scoped rule whose kinds' train attempts all passed every check under tonight's documents.

Unscoped rules (they serve every kind), rules that override a hand-written line, and hand-written
lines themselves are never retired; tasks without kinds (old task files) retire nothing.

Why paired, not a plain delete followed by an add on a later night: a rule is only ever removed
when something that proved itself takes its line, the exchange is one edit that adopt writes and
revert restores byte-exact as a whole, and a night never leaves a document emptier than it found it.

The removal faces the "no worse" test (``gate.no_worse``) on the val tasks the retired rule served
— those of its kinds, outside the new rule's own; when it serves none of tonight's val tasks, every
val task outside the new rule's own — drawing more samples up to the gate's ceiling while the bound
is too wide; then the pair faces the ordinary gate (the new rule's own tasks must gain, no val task
may regress, the all-task mean must not fall). Removal first: a rule its work still needs is shown
so on a first look at its tasks, before anything is spent on the new rule's gain (bench_learning
at max_rules 3 found every retirement it tried to be of a needed rule). ``gate.removal.gate_removal``
applies this to any ``replace`` that drops a learned rule's words (a merge keeps them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from skillopt_sleep.documents.managed_block import DocumentSet
from skillopt_sleep.documents.handwritten import split_supersedes
from skillopt_sleep.rules.scope import split_scoped
from skillopt_sleep.types import Attempt, Edit, TaskRecord


@dataclass(frozen=True)
class Tonight:
    """What tonight's work says about the rules already in the documents."""

    kinds: frozenset[str]  # every kind among tonight's tasks
    passing: frozenset[str]  # kinds whose train attempts all passed every check


def tonight(tasks: Iterable[TaskRecord], train_attempts: dict[str, list[Attempt]]) -> Tonight:
    tasks = list(tasks)
    kinds = frozenset(t.kind.lower() for t in tasks if t.kind)
    failing: set[str] = set()
    attempted: set[str] = set()
    for task in tasks:
        attempts = train_attempts.get(task.id) or []
        if task.split != "train" or not task.kind or not attempts:
            continue
        attempted.add(task.kind.lower())
        if any(a.hard < 1.0 for a in attempts):
            failing.add(task.kind.lower())
    return Tonight(kinds, frozenset(attempted - failing))


def serves(scope: str, kind: str) -> bool:
    """Whether a rule's scope phrase ("working on a commit message task", "writing commit
    messages") names a kind ("commit message")."""
    return bool(kind) and re.search(rf"\b{re.escape(kind.lower())}(?:e?s)?\b", scope.lower()) is not None


def _why_retirable(rule: str, evidence: Tonight) -> tuple[int, str] | None:
    scope = split_scoped(rule)[0]
    if not scope or split_supersedes(rule)[1] is not None:
        return None
    kinds = [k for k in evidence.kinds if serves(scope, k)]
    if not kinds:
        return 0, "its scope names none of tonight's task kinds"
    if all(k in evidence.passing for k in kinds):
        return 1, f"tonight's {', '.join(sorted(kinds))} train attempts passed every check"
    return None


def retiring(docs: DocumentSet, edit: Edit, evidence: Tonight | None) -> Edit | None:
    """``edit`` (an ``add`` its full document refused) as the replacement of a learned rule that no
    longer earns its place, or None when there is no such rule."""
    if evidence is None or not evidence.kinds or edit.op != "add" or edit.target not in ("skill", "memory"):
        return None
    doc = docs.get(edit.target)
    ranked = [
        (found[0], i, rule, found[1])
        for i, rule in enumerate(doc.rules())
        if (found := _why_retirable(rule, evidence)) is not None
    ]
    if not ranked:
        return None
    _, _, rule, reason = min(ranked)
    why = (
        f"retires {rule!r} ({reason}): {doc.path.name} holds its budget of {doc.limits.max_rules} rules "
        f"and no rule of its scope to merge with"
    )
    return replace(
        edit,
        op="replace",
        anchor=rule,
        evidence=list(edit.evidence),
        rationale=f"{edit.rationale} | {why}" if edit.rationale else why,
    )


def removed_rule(docs: DocumentSet, edit: Edit) -> str | None:
    """The learned rule a ``replace`` drops: its anchor, unless the new line keeps its words (a
    merge, ``rule_budget.merged``)."""
    if edit.op != "replace" or edit.target not in ("skill", "memory"):
        return None
    want = " ".join(edit.anchor.split()).lower()
    rules = docs.get(edit.target).rules()
    rule = next((r for r in rules if r.lower() == want), None) or next(
        (r for r in rules if want and want in r.lower()), None
    )
    if rule is None:
        return None
    kept = split_scoped(split_supersedes(rule)[0])[1].rstrip().rstrip(".").lower()
    return None if kept and kept in edit.content.lower() else rule
