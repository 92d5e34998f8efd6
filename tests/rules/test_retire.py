"""Retiring a learned rule when a full document's new rule cannot be merged: which rule, the "no
worse" gate mode that decides the removal (tests/gate/test_no_worse.py), adopt / revert of the exchange, and whole nights that
retire a rule or keep it. The removal's own gate (gate/removal.py) is tested in
tests/gate/test_removal.py, the retirement settings in tests/gate/test_settings.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.staging.adoption import adopt, revert
from skillopt_sleep.commands.review import review
from skillopt_sleep.config import DocumentSettings
from skillopt_sleep.learning.loop import LoopSettings
from skillopt_sleep.documents.managed_block import DocumentSet, EditRefused, apply_edit, load_documents
from skillopt_sleep.report.markdown import render_markdown
from skillopt_sleep.rules.retire import Tonight, removed_rule, retiring, tonight
from skillopt_sleep.rules.budget import apply_within_budget, merged
from skillopt_sleep.staging.stage import StagedFile, stage
from skillopt_sleep.types import Attempt, Edit, NightReport, TaskRecord
from tests.support.staged_project import skill_path

COMMIT = 'When working on a commit message task, always include "Refs: ACME-" in the response.'
NOTES = 'When working on a release notes task, always include a section headed "Fixes".'
EMAIL = 'When working on a customer email task, open with "We apologize".'
UNSCOPED = "Keep every response under 400 characters."
NEW = Edit(
    "skill",
    "add",
    'When working on a postmortem task, include a section headed "Timeline".',
    rationale="postmortems lack a timeline",
    evidence=["pm-1"],
)


def full(tmp_path: Path, rules: list[str], max_rules: int = 3) -> DocumentSet:
    docs = load_documents(tmp_path, max_rules=max_rules)
    for rule in rules:
        docs = apply_edit(docs, Edit("skill", "add", rule))
    return docs


def task(tid: str, kind: str, split: str = "train") -> TaskRecord:
    return TaskRecord(
        id=tid,
        intent=f"do {kind} {tid}",
        kind=kind,
        split=split,
        judge={"kind": "rule", "checks": [{"op": "contains", "arg": "x"}]},
    )


def attempts(tid: str, *hard: float) -> list[Attempt]:
    return [Attempt(tid, i, "r", h, h) for i, h in enumerate(hard)]


# --- which rule a full document retires --------------------------------------------------------


def test_a_rule_serving_none_of_tonights_kinds_is_retired_first(tmp_path: Path) -> None:
    docs = full(tmp_path, [COMMIT, NOTES, EMAIL])
    evidence = Tonight(frozenset({"postmortem", "commit message", "customer email"}), frozenset({"commit message"}))
    with pytest.raises(EditRefused, match="budget of 3 rules"):
        apply_edit(docs, NEW)
    edit, after = apply_within_budget(docs, NEW, evidence)
    assert (edit.op, edit.anchor) == ("replace", NOTES), "no release notes tonight: before the passing kind's rule"
    assert after.skill.rules() == [COMMIT, NEW.content, EMAIL]
    assert edit.rationale.startswith("postmortems lack a timeline | retires ")
    assert "names none of tonight's task kinds" in edit.rationale and edit.evidence == ["pm-1"]
    assert NEW.op == "add", "the proposed edit is not changed in place"


def test_otherwise_the_oldest_rule_whose_kind_passed_every_train_attempt(tmp_path: Path) -> None:
    docs = full(tmp_path, [COMMIT, NOTES, EMAIL])
    kinds = frozenset({"postmortem", "commit message", "release notes", "customer email"})
    edit = retiring(docs, NEW, Tonight(kinds, frozenset({"customer email", "release notes"})))
    assert edit is not None and edit.anchor == NOTES and "passed every check" in edit.rationale
    assert retiring(docs, NEW, Tonight(kinds, frozenset())) is None, "every rule still serves failing work"


def test_unscoped_and_superseding_rules_and_handwritten_lines_are_never_retired(tmp_path: Path) -> None:
    skill = skill_path(tmp_path)
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: skillopt-sleep-learned\ndescription: d\n---\n\n- When working on a release notes task, be brief.\n",
        encoding="utf-8",
    )
    docs = load_documents(tmp_path, max_rules=2)
    docs = apply_edit(docs, Edit("skill", "add", UNSCOPED))
    docs = apply_edit(
        docs,
        Edit(
            "skill",
            "add",
            "When working on a release notes task, list every fix.",
            supersedes="- When working on a release notes task, be brief.",
        ),
    )
    assert retiring(docs, NEW, Tonight(frozenset({"postmortem"}), frozenset())) is None
    with pytest.raises(EditRefused, match="budget"):
        apply_within_budget(docs, NEW, Tonight(frozenset({"postmortem"}), frozenset()))


def test_without_kinds_or_with_retirement_off_nothing_is_retired(tmp_path: Path) -> None:
    docs = full(tmp_path, [COMMIT, NOTES, EMAIL])
    assert retiring(docs, NEW, Tonight(frozenset(), frozenset())) is None
    with pytest.raises(EditRefused, match="budget"):
        apply_within_budget(docs, NEW, None)


def test_tonights_evidence_from_the_tasks_and_train_attempts() -> None:
    tasks = [
        task("c1", "commit message"),
        task("c2", "commit message"),
        task("n1", "release notes"),
        task("e1", "customer email", "val"),
        task("p1", "postmortem"),
    ]
    got = tonight(tasks, {"c1": attempts("c1", 1, 1), "c2": attempts("c2", 1), "n1": attempts("n1", 1, 0)})
    assert got.kinds == {"commit message", "release notes", "customer email", "postmortem"}
    assert got.passing == {"commit message"}, "a failed attempt, or none at all, is no evidence"


def test_a_merge_removes_no_rule_and_a_retirement_does(tmp_path: Path) -> None:
    docs = full(tmp_path, [COMMIT, NOTES, EMAIL])
    merge = merged(docs, Edit("skill", "add", "When working on a commit message task, keep the subject short."))
    assert merge is not None and removed_rule(docs, merge) is None
    swap = retiring(docs, NEW, Tonight(frozenset({"postmortem"}), frozenset()))
    assert swap is not None and removed_rule(docs, swap) == COMMIT
    assert removed_rule(docs, NEW) is None


# --- adopt and revert ---------------------------------------------------------------------------


def test_a_retirement_adopts_and_reverts_byte_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "proj"
    live = skill_path(project)
    live.parent.mkdir(parents=True)
    live.write_bytes(b"---\r\nname: skillopt-sleep-learned\r\ndescription: d\r\n---\r\n# Notes\r\nLast line")
    docs = full(project, [COMMIT, NOTES, EMAIL])
    live.write_bytes(docs.skill.encoded())
    before = live.read_bytes()
    docs = load_documents(project, max_rules=3)
    swap, after = apply_within_budget(docs, NEW, Tonight(frozenset({"postmortem"}), frozenset()))
    assert swap.op == "replace"
    proposed = after.skill.encoded()
    assert NOTES.encode() not in proposed or COMMIT.encode() not in proposed
    report = NightReport(night_id="n1", project=str(project), mode="run", status="staged", accepted_edits=[swap])
    stage(project, report, [StagedFile("skill", live, before, proposed)])
    review(project)
    shown = capsys.readouterr().out
    why = "names none of tonight's task kinds"
    assert f"retires {COMMIT!r}" in shown and why in shown, "review says which rule is retired and why"
    assert f"retires {COMMIT!r}" in render_markdown(report) and why in render_markdown(report)
    adopt(project)
    assert live.read_bytes() == proposed
    revert(project)
    assert live.read_bytes() == before
    assert COMMIT in load_documents(project).skill.rules(), "the retired rule is back"


def test_a_scope_names_a_kind_as_a_word() -> None:
    from skillopt_sleep.rules.retire import serves

    assert serves("working on a commit message task", "commit message")
    assert serves("writing commit messages", "commit message")
    assert not serves("working on a changelog entry task", "change") and not serves("working on a beta task", "bet")


# --- a whole night ------------------------------------------------------------------------------

PASS = "PASS-TOKEN"
FOR_A = "When working on an alpha task, follow the alpha checklist."
BETA = "When working on a beta task, follow the beta checklist."


class Kinds:
    """Kind ``k`` passes only when a rule names "the k checklist"; the optimizer proposes FOR_A."""

    id = "kinds"

    def complete(self, request):
        from skillopt_sleep.backends.base import Completion
        import json

        if request.purpose == "reflect":
            return Completion(
                text=json.dumps(
                    {
                        "edits": [
                            {
                                "target": "skill",
                                "op": "add",
                                "content": FOR_A,
                                "evidence": ["train-alpha-0", "train-alpha-1"],
                            }
                        ]
                    }
                ),
                model="kinds",
            )
        if request.purpose == "refine":
            return Completion(text=json.dumps({"content": request.payload["rule"]}), model="kinds")
        task, docs = request.payload["task"], request.payload["documents"]
        ok = f"the {task['kind']} checklist" in docs
        return Completion(text=f"Done. {PASS}" if ok else "Done.", model="kinds")


def kinds_tasks() -> list[TaskRecord]:
    judge = {"kind": "rule", "checks": [{"op": "contains", "arg": PASS}]}
    return [
        TaskRecord(id=f"{split}-{k}-{i}", intent=f"{split} {k} {i}", judge=judge, kind=k, split=split)
        for split in ("train", "val")
        for k in ("alpha", "beta")
        for i in range(3)
    ]


def kinds_night(tmp_path: Path, rules: list[str], **documents):
    from skillopt_sleep.backends.client import Client, Stats
    from skillopt_sleep.backends.limits import Limiter
    from skillopt_sleep.backends.models import Models
    from skillopt_sleep.learning.loop import consolidate

    docs = full(tmp_path, rules, max_rules=len(rules))
    limiter, stats, world = Limiter(4), Stats(), Kinds()
    models = Models(
        Client(world, limiter=limiter, stats=stats), Client(world, limiter=limiter, stats=stats, role="optimizer")
    )
    return consolidate(kinds_tasks(), docs, models, LoopSettings(documents=DocumentSettings(**documents)))


def test_a_night_retires_a_rule_for_work_that_no_longer_comes(tmp_path: Path) -> None:
    out = kinds_night(tmp_path, ["When working on a gamma task, follow the gamma checklist.", BETA])
    [edit] = out.accepted
    assert (edit.op, edit.anchor, edit.content) == (
        "replace",
        "When working on a gamma task, follow the gamma checklist.",
        FOR_A,
    )
    assert out.documents.skill.rules() == [FOR_A, BETA]
    [decision] = [d for d in out.decisions if d.edits]
    assert decision.statistic["no_worse"]["tasks"] == ["val-beta-0", "val-beta-1", "val-beta-2"]
    assert decision.statistic["no_worse"]["upper_bound"] < 0.1


def test_a_night_never_retires_a_rule_its_work_still_needs(tmp_path: Path) -> None:
    """Kind beta passes every train attempt — thanks to its rule: retiring it is tried and refused."""
    out = kinds_night(tmp_path, [BETA])
    assert out.accepted == [] and out.documents.skill.rules() == [BETA]
    [refused] = [r for r in out.rejected if r.stage == "gate"]
    assert refused.edit.op == "replace" and any(r.startswith("retiring") or "regressed" in r for r in refused.reasons)


def test_a_night_retires_a_rule_another_already_covers(tmp_path: Path) -> None:
    """Both rules name the beta checklist: the first is redundant, and its removal costs nothing."""
    out = kinds_night(tmp_path, ["When working on a beta task, always follow the beta checklist.", BETA])
    [edit] = out.accepted
    assert edit.anchor.startswith("When working on a beta task, always") and "passed every check" in edit.rationale
    assert out.documents.skill.rules() == [FOR_A, BETA]


def test_with_retirement_off_the_rule_stays_refused_for_the_budget(tmp_path: Path) -> None:
    out = kinds_night(tmp_path, ["When working on a gamma task, follow the gamma checklist.", BETA], retire_rules=False)
    assert out.accepted == []
    assert any(r.stage == "apply" and "budget" in r.reasons[0] for r in out.rejected)
