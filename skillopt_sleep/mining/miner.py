"""SessionDigests -> recurring, checkable TaskRecords, with stable train/val/test splits.

Heuristic path (no model): requests are grouped across sessions by what they ask for (see
``clustering``); a group seen in
at least ``min_recurrence`` sessions becomes a *kind* of task. The user's own follow-up
complaints in that group ("you forgot the Signed-off-by line", "keep it under 72 characters")
become the kind's judge checks. Each distinct request of the kind becomes one TaskRecord sharing
that judge, so rules learned on some instances (train) are measured on others (val).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt_sleep.checks.judges import check_id
from skillopt_sleep.mining.checks import checks_by_support, complaint_for
from skillopt_sleep.mining.clustering import DEFAULT_THRESHOLD, cluster, label_for
from skillopt_sleep.mining.requests import UserRequest, requests_from
from skillopt_sleep.mining.splits import assign_splits
from skillopt_sleep.mining.text import STOPWORDS, WORD_RE
from skillopt_sleep.rules.scope import kind_from_label
from skillopt_sleep.types import SessionDigest, TaskRecord


def task_id(project: str, text: str) -> str:
    """Stable id from the request alone and the project's folder name — not the kind's label
    (which shifts as a group gains members) nor the absolute path (a moved checkout keeps its
    ids) — so a task keeps its id, and its split, from night to night."""
    name = Path(project).name if project else ""
    normalized = re.sub(r"\s+", " ", text.strip().lower())
    digest = hashlib.sha256(f"{name}\0{normalized}".encode()).hexdigest()
    words = [w for w in WORD_RE.findall(normalized) if w not in STOPWORDS][:4]
    return f"{'-'.join(words)[:40] or 'task'}-{digest[:8]}"


@dataclass
class MineResult:
    tasks: list[TaskRecord]
    groups: int  # request groups seen
    one_off: int  # groups not promoted because they did not recur
    uncheckable: int  # recurring groups with no checkable feedback
    notes: list[str] = field(default_factory=list)  # for the night report (e.g. the LLM grouping's)


# A model-backed miner: (kind label, the group's requests, heuristic checks) -> a judge or None.
JudgeMaker = Callable[[str, list[UserRequest], list[dict[str, Any]]], "dict[str, Any] | None"]
# A model-backed merge pass (``llm_groups.LlmGrouper``): heuristic groups -> groups, some merged.
Grouper = Callable[[list[list[UserRequest]]], list[list[UserRequest]]]


def mine(
    digests: list[SessionDigest],
    *,
    min_recurrence: int = 2,
    threshold: float = DEFAULT_THRESHOLD,
    seed: int = 0,
    val_fraction: float = 0.34,
    test_fraction: float = 0.0,
    max_instances: int = 8,
    judge_maker: JudgeMaker | None = None,
    grouper: Grouper | None = None,
) -> MineResult:
    """Digests -> recurring TaskRecords with splits assigned.

    ``judge_maker`` (the LLM miner, see ``mining.llm``) turns each recurring group into a judge;
    without it the heuristic checks from the user's complaints are the judge. ``grouper`` (the
    LLM merge pass, see ``mining.llm_groups``) may merge heuristic groups of one kind of task."""
    groups = cluster(requests_from(digests), threshold)
    if grouper is not None:
        groups = grouper(groups)
    tasks: list[TaskRecord] = []
    one_off = uncheckable = 0
    for group in groups:
        sessions = {r.session.session_id for r in group}
        if len(sessions) < min_recurrence:
            one_off += 1
            continue
        checks = checks_by_support([fb for r in group for fb in r.feedback])
        label = label_for(group)
        if judge_maker is not None:
            judge = judge_maker(label, group, checks)
        elif checks:
            judge = {"kind": "rule", "checks": checks + [{"op": "no_refusal", "arg": None}]}
        else:
            judge = None
        if judge is not None and judge.get("kind") == "rule":
            said = {
                check_id(c): found
                for c in judge["checks"]
                if (found := complaint_for(c, [fb for r in group for fb in r.feedback]))
            }
            if said:
                judge = {**judge, "said": said}
        if judge is None:
            uncheckable += 1
            continue
        seen: set[str] = set()
        for r in group:
            key = re.sub(r"\s+", " ", r.text.lower())
            if key in seen or len(seen) >= max_instances:
                continue
            seen.add(key)
            outcome = "failure" if r.feedback else ("success" if r.praised else "unknown")
            tasks.append(
                TaskRecord(
                    id=task_id(r.session.project, r.text),
                    project=r.session.project,
                    intent=r.text[:4000],
                    context_excerpt=r.session.branch and f"branch: {r.session.branch}" or "",
                    attempted_solution=r.reply[:4000],
                    outcome=outcome,
                    reference_kind="rubric" if judge["kind"] == "rubric" else "rule",
                    reference=judge.get("rubric", "") if judge["kind"] == "rubric" else "",
                    judge=judge,
                    tags=[label],
                    source_sessions=[r.session.session_id],
                    agent=r.session.source,
                    skill_hint=label,
                    kind=kind_from_label(label),
                    recurrence=len(sessions),
                )
            )
    assign_splits(tasks, seed=seed, val_fraction=val_fraction, test_fraction=test_fraction)
    return MineResult(
        tasks=tasks,
        groups=len(groups),
        one_off=one_off,
        uncheckable=uncheckable,
        notes=list(getattr(grouper, "notes", [])),
    )
