"""The gate's phases of a night (``phases.py``): which val tasks an edit is measured on, the checks
edits fix together, and which accepted edits are tested beside each other."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from skillopt_sleep.documents.managed_block import apply_edit, load_documents
from skillopt_sleep.gate.outcome import Outcome
from skillopt_sleep.gate.phases import combine, focus_for, joint_targets
from skillopt_sleep.types import Edit, GateDecision, TaskRecord


def _task(tid: str, split: str, hint: str | None = None, kind: str = "") -> TaskRecord:
    return TaskRecord(id=tid, intent=tid, split=split, skill_hint=hint, kind=kind)


def _edit(evidence: list[str], targets: list[str] | None = None) -> Edit:
    return Edit(target="memory", op="add", content="a rule", evidence=evidence, targets=targets or [])


def test_only_rules_that_claim_the_same_tasks_and_checks_are_tested_beside_each_other() -> None:
    """Leave-one-out asks whether a rule adds anything beside another doing the same job: two rules
    of one kind that fix different checks each showed alone that they raise their own."""
    from skillopt_sleep.gate.phases import shares_work
    from skillopt_sleep.types import Edit

    def rule(check: str | None, kind: str = "a") -> Edit:
        return Edit(
            target="memory",
            op="add",
            content=f"fix {check}",
            evidence=[f"train-{kind}-0"],
            targets=[check] if check else [],
        )

    first, second, same, untargeted, other_kind = rule("c1"), rule("c2"), rule("c1"), rule(None), rule("c1", "b")
    focus = {id(e): {f"val-{e.evidence[0].split('-')[1]}-0"} for e in (first, second, same, untargeted, other_kind)}
    assert not shares_work(first, second, focus), "different checks of one kind"
    assert shares_work(first, same, focus), "the same check"
    assert shares_work(first, untargeted, focus) and shares_work(untargeted, first, focus), "one names none"
    assert not shares_work(first, other_kind, focus), "another kind's tasks"


def test_an_edit_is_measured_on_the_val_tasks_of_the_kinds_its_evidence_comes_from() -> None:
    """A task's mined kind counts before its skill hint; train and test tasks are never its focus."""
    tasks = [
        _task("train-a", "train", hint="a"),
        _task("train-mined", "train", hint="a", kind="release notes"),
        _task("val-a", "val", hint="a"),
        _task("val-b", "val", hint="b"),
        _task("val-mined", "val", hint="b", kind="release notes"),
        _task("test-a", "test", hint="a"),
    ]
    assert focus_for([_edit(["train-a"])], tasks) == {"val-a"}
    assert focus_for([_edit(["train-mined"])], tasks) == {"val-mined"}
    assert focus_for([_edit(["train-a"]), _edit(["train-mined"])], tasks) == {"val-a", "val-mined"}
    assert focus_for([_edit(["no-such-task"])], tasks) == set()


def test_edits_fix_their_checks_together_only_when_each_names_some() -> None:
    assert joint_targets([_edit([], ["c2", "c1"]), _edit([], ["c1", "c3"])]) == ["c1", "c2", "c3"]
    assert joint_targets([_edit([], ["c1"]), _edit([])]) is None, "one gained on the score: the score"
    assert joint_targets([]) == []


def test_winners_that_do_not_fit_together_leave_the_best_gain_alone(tmp_path: Path) -> None:
    """A document with room for one more rule: of two edits that passed alone the one with the
    larger gain is the proposal, the other refused beside it (stage combination), no gate run."""
    docs = load_documents(tmp_path, max_rules=1)
    small = Edit(target="memory", op="add", content="Write short commit subjects")
    large = Edit(target="memory", op="add", content="Name the ticket in every commit")

    def passed(edit: Edit, gain: float):
        return edit, apply_edit(docs, edit), GateDecision(True, "accept", 0.5, 0.5 + gain, statistic={"gain": gain})

    night = SimpleNamespace(base=docs, tasks=[])
    outcome = Outcome(docs)
    proposal = combine(outcome, night, [passed(small, 0.1), passed(large, 0.3)], lambda m: None)  # type: ignore[arg-type]
    assert outcome.accepted == [large] and proposal.fingerprint() == apply_edit(docs, large).fingerprint()
    [refused] = outcome.rejected
    assert refused.edit is small and refused.stage == "combination" and not refused.ban
    assert refused.reasons[0].startswith("accepted alone, but no room beside the other accepted edits: ")

    nothing = Outcome(docs)
    assert combine(nothing, night, [], lambda m: None) is docs and nothing.accepted == []  # type: ignore[arg-type]


def test_a_resumed_rule_whose_own_tasks_passed_is_not_judged_again(tmp_path: Path) -> None:
    """Own-task gates of resumed rules: one whose gain an earlier night showed goes straight to
    the night's rules measured together, at the looks and share it was shown at; one that only
    ran out of calls, or any gate over every val task, is drawn for as before."""
    from skillopt_sleep.gate.phases import gate_alone
    from skillopt_sleep.store.rule_evidence import EvidencePool

    tasks = [_task("t-a", "train", kind="a"), _task("v-a", "val", kind="a"), _task("v-b", "val", kind="b")]
    docs = load_documents(tmp_path)
    passed, running = _edit(["t-a"]), Edit(target="memory", op="add", content="another rule", evidence=["t-a"])
    pool = EvidencePool.load(None, tmp_path, "m", docs.fingerprint())
    pool.record_test(passed, False, undecided=True, kinds=["a"], lower_bound=0.3, looks=2, share=0.25, own_passed=True)
    pool.record_test(running, False, undecided=True, kinds=["a"], lower_bound=-0.1, looks=2, share=0.25)
    gated: list[bool] = []

    def gate(cand, focus, **kw):  # type: ignore[no-untyped-def]
        gated.append(kw.get("own_tasks_only", False))
        return GateDecision(False, "reject", 0.0, 0.0)

    night = SimpleNamespace(tasks=tasks, gate=gate, base=docs)
    decision = gate_alone(night, pool, passed, apply_edit(docs, passed), own_tasks_only=True)  # type: ignore[arg-type]
    assert decision.accepted and decision.statistic["own_passed"] and gated == []
    assert (decision.statistic["look"], decision.statistic["alpha_share"]) == (2, 0.25)
    gate_alone(night, pool, running, apply_edit(docs, running), own_tasks_only=True)  # type: ignore[arg-type]
    gate_alone(night, pool, passed, apply_edit(docs, passed))  # type: ignore[arg-type]
    assert gated == [True, False], "the one still running and the every-task gate draw"
