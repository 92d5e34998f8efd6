"""Consolidation when a document reaches its rule budget: a new rule is merged into one already
there, instead of being refused.

A document holds at most ``Limits.max_rules`` rules (each is read on every agent turn, and a model
given many follows each less). Once one is full, a rule the night proposes for it is rewritten as a
``replace`` of the existing rule of the same scope it shares the most words with: that rule's
instruction and the new one joined into one line (``When <scope>, <old>; <new>``), both kept word
for word, so the document gains an instruction and no line. The merge faces the gate like any edit:
its own kind's tasks must gain, and no val task — those the old rule served included — may regress.
Rules of different scopes are never merged (the merged line would carry one rule into the other's
work); a merge that would pass ``Limits.max_rule_chars``, or a document with no rule of that scope,
leaves the edit refused for the budget — unless it can retire a learned rule that no longer earns
its place (``retire.py``: the new rule takes that rule's line, and the removal must pass the gate's
"no worse" test).

Edits that each passed the gate alone are combined only as far as they fit (``fit_together``).
"""

from __future__ import annotations

from dataclasses import replace

from skillopt_sleep.documents.managed_block import BudgetFull, DocumentSet, EditRefused, apply_edit
from skillopt_sleep.documents.handwritten import split_supersedes
from skillopt_sleep.rules.retire import Tonight, retiring
from skillopt_sleep.rules.scope import render_scoped, split_scoped
from skillopt_sleep.types import Edit

_WORD_CHARS = str.maketrans({c: " " for c in ".,;:!?()\"'`"})


def _words(text: str) -> set[str]:
    return {w for w in text.lower().translate(_WORD_CHARS).split() if len(w) > 2}


def _joined(old: str, new: str) -> str:
    """Two instructions as one: the old one's closing period becomes a semicolon."""
    first = old.rstrip().rstrip(".").rstrip()
    second = new.strip()
    return f"{first}; {second[:1].lower() + second[1:]}" if second else first + "."


def merged(docs: DocumentSet, edit: Edit) -> Edit | None:
    """``edit`` (an ``add``) as a merge into a rule of the same scope in its document, or None when
    there is none to merge with or the merged line would be too long."""
    if edit.op != "add" or edit.target not in ("skill", "memory") or edit.supersedes:
        return None  # a superseding rule keeps its own line: the suffix names the line it overrides
    doc = docs.get(edit.target)
    scope, body = split_scoped(edit.content)
    if not scope:
        return None
    same = [
        rule
        for rule in doc.rules()
        if split_scoped(rule)[0].lower() == scope.lower() and split_supersedes(rule)[1] is None
    ]
    if not same:
        return None
    wanted = _words(body)
    anchor = max(same, key=lambda rule: (len(wanted & _words(split_scoped(rule)[1])), -len(rule)))
    content = render_scoped(scope, _joined(split_scoped(anchor)[1], body))
    if len(content) > doc.limits.max_rule_chars:
        return None
    why = f"merged into an existing {scope!r} rule: {doc.path.name} holds its budget of {doc.limits.max_rules} rules"
    return replace(
        edit,
        op="replace",
        anchor=anchor,
        content=content,
        evidence=list(edit.evidence),
        rationale=f"{edit.rationale} | {why}" if edit.rationale else why,
    )


def apply_within_budget(docs: DocumentSet, edit: Edit, tonight: Tonight | None = None) -> tuple[Edit, DocumentSet]:
    """``apply_edit``; when the edit is refused because its document is full, the same rule merged
    into one of its scope (``merged``) instead, else — given ``tonight``'s evidence — put in the
    line of a learned rule it retires (``retire.retiring``). Raises the original refusal when
    neither is possible."""
    try:
        return edit, apply_edit(docs, edit)
    except BudgetFull:
        other = merged(docs, edit) or retiring(docs, edit, tonight)
        if other is None:
            raise
        return other, apply_edit(docs, other)


def fit_together(base: DocumentSet, edits: list[Edit]) -> tuple[list[Edit], list[tuple[Edit, str]]]:
    """The edits that can all go in together, taken in the given order (best first), and those
    refused beside them with the reason: each may have passed alone, but two new rules for a
    document with room for one more cannot both go in."""
    kept: list[Edit] = []
    refused: list[tuple[Edit, str]] = []
    docs = base
    for edit in edits:
        try:
            docs = apply_edit(docs, edit)
        except EditRefused as exc:
            refused.append((edit, str(exc)))
            continue
        kept.append(edit)
    return kept, refused
