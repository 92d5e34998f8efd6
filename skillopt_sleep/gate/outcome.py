"""What one night's learning loop produced (``consolidate``): the proposal, the decisions, and
every edit that did not make it, with why."""

from __future__ import annotations

from dataclasses import dataclass, field

from skillopt_sleep.documents.managed_block import DocumentSet
from skillopt_sleep.types import Attempt, Edit, GateDecision, TaskRecord


@dataclass
class Rejection:
    """An edit that did not make it into the proposal, and why.

    ``stage``: guardrail (reflect's checks), lookahead (fixed nothing on its own train tasks, and
    the night's slots went to rules that did),
    apply (the documents refused it), gate, unchanged
    (refused on an earlier night on these same val tasks, not re-tested), combination (passed
    alone, added nothing beside the others), quality (passed its checks, but its answers were
    judged worse at the task than the current documents', ``gate/quality.py``), budget (undecided
    when a capped night ran out of calls: no ban, tested again later) or unvalidated (no val tasks).
    ``ban``: the gate found it significantly harmful — the ledger keeps it from coming back.
    """

    edit: Edit
    reasons: list[str]
    stage: str = "gate"
    ban: bool = False


@dataclass
class Outcome:
    documents: DocumentSet  # the proposal (== the input when nothing was accepted)
    accepted: list[Edit] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    decisions: list[GateDecision] = field(default_factory=list)
    baseline: float | None = None  # val
    candidate: float | None = None  # val
    train_baseline: float | None = None
    test_baseline: float | None = None
    test_candidate: float | None = None
    train_attempts: dict[str, list[Attempt]] = field(default_factory=dict)
    phases: dict[str, int] = field(default_factory=dict)  # requests issued per phase
    notes: list[str] = field(default_factory=list)
    # earlier nights' val tasks a resumed rule's gate also measured (``pending_rules.earlier_val``)
    earlier_val: list[TaskRecord] = field(default_factory=list)
