"""Rules a call cap left undecided on an earlier night, rebuilt from the evidence pool so tonight
resumes their tests before it starts new ones (``consolidate``).

A capped night may run out of calls before a rule's gate decides. Its samples are pooled
(``edit_evidence``) and the pool record keeps the whole rule and the kinds of the tasks it was
learned from (``types.kind_of``: tonight's task ids differ, their kinds do not). Tonight that
rule comes back as it was, if it still applies to tonight's documents, is neither banned nor
settled, and tonight has val tasks of its kinds (the tasks it claims to help, ``focus_for``).

Error control across nights: a resumed rule's nights are one sequential test. Its pool record
keeps the looks its gate took and the share of the false-accept rate they were taken of (its
first night's share of ``EvidencePool.alpha_share``, divided among that night's rules); tonight
its looks are numbered on from there at that share, each spending its part of the one plan
(``gate.decide.GateConfig.alpha_for``), the pooled evidence it was last judged on is not judged again as
a new look, and it draws toward its first night's sample ceiling (``gate.sampling.resumed``). It may
take as many looks in all as one uncapped gate can; past them it is refused. So over all its
nights, decided or not, it spends no more than the uncapped gate allows one rule. A night whose
cap stopped it before its first look spends nothing (``EvidencePool.hold``). Once decided, a rule
proposed again is a new test at a halved share, as before. The evidence it is judged on only
grows (pooled candidate samples, the base documents' draws back from the score cache), and the
gate never accepts on fewer samples than the uncapped gate asks for.

Held and half-decided rules: a capped night's proposals that its calls never reached are held
(``EvidencePool.hold``: no samples, no look) and resumed like the others. Several resumed rules are
gated on their own tasks and then together (``gate.together``); one whose own-task gain an earlier
night showed, and whose combination the cap stopped, keeps that verdict (``EditRecord.own_passed``)
and is not judged again: tonight goes straight on to the rules measured together. While any
resumed rule is under test, the night starts no new one (``learning.loop``).

Evidence across tasks: when tonight's val tasks of a resumed rule's kind are new (every night's
requests differ), the val tasks of earlier nights its test drew on go on being measured beside
them (``earlier_val``): held out when first seen, and never one of tonight's train tasks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from skillopt_sleep.documents.managed_block import DocumentSet, EditRefused, apply_edit
from skillopt_sleep.store.rule_evidence import EvidencePool, task_content_key
from skillopt_sleep.types import kind_of
from skillopt_sleep.types import Edit, GateDecision, TaskRecord


def resumable(
    pool: EvidencePool, docs: DocumentSet, tasks: list[TaskRecord], refused: Callable[[Edit], bool]
) -> list[tuple[Edit, DocumentSet]]:
    """Tonight's undecided rules and their candidate documents, best evidence first. A resumed
    rule's ``evidence`` is tonight's tasks of its stored kinds."""
    out: list[tuple[Edit, DocumentSet]] = []
    for _, record in pool.pending():
        edit = record.whole()
        if edit is None or not record.kinds or refused(edit) or pool.settled(edit):
            continue
        edit.evidence = [t.id for t in tasks if kind_of(t) in record.kinds]
        if not any(t.split == "val" for t in tasks if t.id in edit.evidence):
            continue  # none of the tasks it claims to help is measured tonight
        try:
            out.append((edit, apply_edit(docs, edit)))
        except EditRefused:
            continue  # tonight's documents no longer take it
    return out


MAX_EARLIER = 8  # earlier nights' val tasks a resumed rule's test goes on over, newest first


def earlier_val(
    pool: EvidencePool, edit: Edit, tasks: list[TaskRecord], archived: list[tuple[str, TaskRecord]]
) -> list[TaskRecord]:
    """Val tasks of earlier nights that ``edit``'s test drew on and tonight does not have: the
    test goes on over them too, so its evidence builds across the nights' different tasks of its
    kind (the task, not the repeat, is the unit of evidence). ``archived``: the project's archived
    tasks that were val when first seen, as (content key, task), oldest first (``archive``). Only
    a task the pool holds candidate samples of, of one of the kinds the rule serves, and unlike
    any of tonight's tasks by content (never one of tonight's train tasks, so it stays held out);
    at most ``MAX_EARLIER``, newest first. Their ids are new (``earlier-<key>``): ids repeat
    across nights. Their candidate samples come from the pool, their baselines from the score
    cache where the documents have not changed since; any more are drawn like tonight's."""
    have = pool.samples.get(pool.identity(edit), {})
    kinds = {kind_of(t) for t in tasks if t.id in edit.evidence}
    tonight = {task_content_key(t) for t in tasks}
    out: list[TaskRecord] = []
    for key, task in reversed(archived):
        if key in tonight or not have.get(key) or kind_of(task) not in kinds:
            continue
        out.append(replace(task, id=f"earlier-{key}", split="val"))
        tonight.add(key)
        if len(out) >= MAX_EARLIER:
            break
    return out


def evidence_kinds(edit: Edit, tasks: list[TaskRecord]) -> list[str]:
    """The kinds of ``edit``'s evidence tasks among ``tasks``, for its pool record."""
    kind = {t.id: kind_of(t) for t in tasks}
    return sorted({kind[e] for e in edit.evidence if e in kind})


def resumed_note(edit: Edit, decision: GateDecision) -> str:
    """What a resumed rule's test showed tonight, for the night's notes."""
    stat = decision.statistic
    shown = ""
    if isinstance(stat.get("gain"), (int, float)) and isinstance(stat.get("lower_bound"), (int, float)):
        shown = f" (gain {stat['gain']:+.3f}, lower bound {stat['lower_bound']:+.3f})"
    if decision.accepted:
        verdict = "accepted"
    elif stat.get("out_of_calls"):
        verdict = "still undecided"
    else:
        verdict = "refused"
    return f"resumed undecided rule {edit.content[:80]!r}: {verdict}{shown}"
