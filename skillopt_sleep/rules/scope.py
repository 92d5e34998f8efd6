"""Scoped rules: a rule that names the kind of task it is for.

A task's *kind* (``TaskRecord.kind``) is a short noun phrase naming the work, in the requests' own
words ("release notes", "commit message"); mining takes it from the cluster's label. A rule's
*scope* (``Edit.scope``) is a phrase that reads after "When" ("working on release notes",
"writing a commit message"); ``""`` means the rule is for every kind.

The scope lives in the rule's text too, because that text is all a model reading the documents
sees: ``When <scope>, <rule>``. ``split_scoped`` reads it back from a document line.

Target: a rule scoped to one kind belongs to the skill (the skill serves that kind of work); a
rule whose evidence spans kinds, left unscoped, belongs to project memory, which every kind reads.
Project memory takes nothing else: a rule learned from one kind's or one skill's tasks, or from
tasks that do not say what they are, goes to the skill, where it cannot reach unrelated work.
"""

from __future__ import annotations

import re

from skillopt_sleep.types import Edit, TaskRecord

ALL_KINDS = "all kinds"
SCOPE_MAX_CHARS = 80
_SCOPED_RE = re.compile(rf"^When ([^,]{{1,{SCOPE_MAX_CHARS}}}), (\S.*)$", re.S)
_LABEL_SEP_RE = re.compile(r"[-_\s]+")


def kind_from_label(label: str) -> str:
    """The kind phrase for a mining label ("release-notes" -> "release notes")."""
    return _LABEL_SEP_RE.sub(" ", label).strip().lower()


def scope_for_kind(kind: str) -> str:
    """The default scope phrase for a kind, as the engine writes it when it scopes a rule itself."""
    if not kind:
        return ""
    article = "an" if kind[:1].lower() in "aeio" else "a"  # "an endpoint", "a user story"
    return f"working on {article} {kind} task"


def clean_scope(scope: str) -> str:
    """A scope as it may stand in a rule: one line, no comma (the comma ends it), bounded,
    without a leading "When" the optimizer may have repeated."""
    text = " ".join(str(scope).split()).strip(" ,.;:")
    text = re.sub(r"^(?:when|for)\s+", "", text, flags=re.I)
    text = text.replace(",", "")
    if text.lower() in {"", ALL_KINDS, "all", "any", "every kind", "all tasks", "any task"}:
        return ""
    return text[:SCOPE_MAX_CHARS].rstrip()


def render_scoped(scope: str, rule: str) -> str:
    """``When <scope>, <rule>`` (the rule's first letter lowered); the rule alone when unscoped or
    when it already opens with a scope."""
    rule = rule.strip()
    if not scope or _SCOPED_RE.match(rule):
        return rule
    first = rule.split(" ", 1)[0]
    if not first.isupper() or len(first) == 1:  # "Keep ..." -> "keep ...", but "README ..." stays
        rule = rule[:1].lower() + rule[1:]
    return f"When {scope}, {rule}"


def split_scoped(rule: str) -> tuple[str, str]:
    """(scope, body) of a document line; scope ``""`` when the line names none."""
    m = _SCOPED_RE.match(rule.strip())
    if not m:
        return "", rule.strip()
    body = m.group(2)
    return m.group(1), body[:1].upper() + body[1:]


def evidence_kinds(edit: Edit, tasks: dict[str, TaskRecord]) -> set[str]:
    """The kinds of the tasks an edit cites (kinds unknown to the tasks are left out)."""
    return {tasks[t].kind for t in edit.evidence if t in tasks and tasks[t].kind}


def evidence_groups(edit: Edit, tasks: dict[str, TaskRecord]) -> set[str]:
    """What the tasks an edit cites are, as far as they say: each one's kind, else its skill hint,
    else its first tag (tasks that say none of these are left out)."""
    out = set()
    for tid in edit.evidence:
        task = tasks.get(tid)
        group = task and (task.kind or task.skill_hint or (task.tags[0] if task.tags else ""))
        if group:
            out.add(group.strip().lower())
    return out


def settle_scope(edit: Edit, tasks: dict[str, TaskRecord]) -> None:
    """Give an added rule its scope and target, in place.

    The optimizer's own scope wins. An unscoped rule whose evidence is all one kind is scoped to
    that kind (the optimizer was asked to scope it and did not; a rule learned from one kind's
    failures is not known to help any other). Then the target follows the scope: scoped -> skill,
    unscoped with evidence spanning kinds (or, where tasks carry no kind, skills or tags) ->
    memory, and an added rule with any other evidence -> skill, whatever the optimizer asked:
    project-wide memory, read for every kind of work, takes only project-wide evidence.
    """
    if edit.op not in ("add", "replace", "insert_after"):
        return
    edit.scope = clean_scope(edit.scope)
    kinds = evidence_kinds(edit, tasks)
    if not edit.scope:
        found, body = split_scoped(edit.content)
        if found:
            edit.scope = clean_scope(found)
            edit.content = body
    if not edit.scope and len(kinds) == 1:
        edit.scope = scope_for_kind(next(iter(kinds)))
    if edit.scope:
        edit.target = "skill"
        edit.content = render_scoped(edit.scope, split_scoped(edit.content)[1])
    elif len(kinds) > 1 or (not kinds and len(evidence_groups(edit, tasks)) > 1):
        edit.target = "memory"
    elif edit.op == "add":
        edit.target = "skill"


def scope_label(edit: Edit) -> str:
    """How reports name an edit's scope."""
    return edit.scope or split_scoped(edit.content)[0] or ALL_KINDS
