"""The "no worse" test of retiring a learned rule (gate/removal.py): the removal is guarded on the
val tasks the retired rule served, refused before the gain is measured when it costs its kind,
passed once more samples narrow the bound when it costs nothing, and the new rule still faces the
ordinary gate. Which rule a full document retires is in tests/rules/test_retire.py, whose helpers
this file uses."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from skillopt_sleep.config import GateSettings
from skillopt_sleep.documents.managed_block import DocumentSet, apply_edit
from skillopt_sleep.gate.removal import gate_removal, guarded_tasks
from skillopt_sleep.learning.loop import LoopSettings
from skillopt_sleep.rules.retire import Tonight, retiring
from skillopt_sleep.types import Edit, GateDecision, TaskRecord

from tests.rules.test_retire import COMMIT, EMAIL, NEW, NOTES, full, task


def test_the_removal_is_guarded_on_the_tasks_its_rule_served() -> None:
    val = [task("n1", "release notes", "val"), task("c1", "commit message", "val"), task("p1", "postmortem", "val")]
    assert guarded_tasks(NOTES, val, {"p1"}) == ["n1"]
    assert guarded_tasks(EMAIL, val, {"p1"}) == ["c1", "n1"], "serves no val task: every task outside the focus"
    assert guarded_tasks(NOTES, val, {"n1", "c1", "p1"}) == []


# -- the gate of a retirement --------------------------------------------------------------------


@dataclass
class FakeEvaluator:
    """Scripted val scores per document set: ``per_docs[fingerprint][task]`` repeats its pattern."""

    per_docs: dict[str, dict[str, list[float]]]
    tasks: dict[str, TaskRecord] = field(default_factory=dict)
    asked: list[int] = field(default_factory=list)

    def ensure(self, docs: DocumentSet, n: int, task_ids: list[str] | None = None, identity: str | None = None):
        self.asked.append(n)
        pattern = self.per_docs[docs.fingerprint()]
        return {tid: (p * n)[:n] for tid, p in pattern.items()}


@dataclass
class FakeNight:
    evaluator: FakeEvaluator
    settings: LoopSettings
    base: DocumentSet
    tasks: list[TaskRecord]
    overlap: set[str] = field(default_factory=set)


def retirement_night(tmp_path: Path, notes_without: list[float]):
    docs = full(tmp_path, [COMMIT, NOTES, EMAIL])
    kinds = frozenset({"postmortem", "release notes", "commit message", "customer email"})
    swap = retiring(docs, NEW, Tonight(kinds, frozenset({"release notes"})))
    assert swap is not None and swap.anchor == NOTES
    cand = apply_edit(docs, swap)
    val = [task("n1", "release notes", "val"), task("n2", "release notes", "val"), task("p1", "postmortem", "val")]
    ev = FakeEvaluator(
        {
            docs.fingerprint(): {"n1": [1.0, 1.0, 0.5], "n2": [1.0, 1.0, 0.5], "p1": [0.5]},
            cand.fingerprint(): {"n1": notes_without, "n2": notes_without, "p1": [1.0]},
        },
        {t.id: t for t in val},
    )
    night = FakeNight(ev, LoopSettings(gate=GateSettings(val_samples=4, max_val_samples=48)), docs, val)
    accepted = GateDecision(True, "accept", 0.7, 0.9, statistic={"samples_per_task": {"p1": 12, "n1": 8, "n2": 8}})
    return night, swap, cand, accepted


def test_a_retirement_that_costs_its_kind_is_refused_before_the_gain_is_measured(tmp_path: Path) -> None:
    night, swap, cand, accepted = retirement_night(tmp_path, [0.5, 0.0, 0.5])  # 0.83 -> 0.33
    gated = []
    decision = gate_removal(night, swap, cand, {"p1"}, lambda: gated.append(1) or accepted)
    assert not decision.accepted and decision.action == "reject" and gated == []
    assert all(r.startswith(f"retiring {NOTES!r}") for r in decision.reasons) and decision.reasons
    assert decision.statistic["no_worse"]["tasks"] == ["n1", "n2"]
    assert max(night.evaluator.asked) <= 8, "shown within two looks, far below the ceiling of 48"


def test_a_retirement_that_costs_nothing_passes_once_samples_narrow_the_bound(tmp_path: Path) -> None:
    night, swap, cand, accepted = retirement_night(tmp_path, [1.0, 1.0, 0.5])
    decision = gate_removal(night, swap, cand, {"p1"}, lambda: accepted)
    assert decision is accepted and decision.accepted, decision.reasons
    stat = decision.statistic["no_worse"]
    assert stat["retired"] == NOTES and stat["upper_bound"] < 0.1
    assert night.evaluator.asked[0] == 4 and max(night.evaluator.asked) > 4, "more samples while the bound is wide"


def test_the_gain_test_still_decides_a_retirement_whose_removal_is_harmless(tmp_path: Path) -> None:
    night, swap, cand, _ = retirement_night(tmp_path, [1.0, 1.0, 0.5])
    refused = GateDecision(False, "reject", 0.7, 0.7, reasons=["gain +0.000 is below the minimum 0.020"])
    decision = gate_removal(night, swap, cand, {"p1"}, lambda: refused)
    assert decision is refused and not decision.accepted and "no_worse" in decision.statistic


def test_an_edit_that_removes_nothing_goes_straight_to_the_gate(tmp_path: Path) -> None:
    night, _, cand, accepted = retirement_night(tmp_path, [0.0])
    plain = Edit("skill", "add", "When working on a postmortem task, name an owner.")
    assert gate_removal(night, plain, cand, {"p1"}, lambda: accepted) is accepted
    assert night.evaluator.asked == []
