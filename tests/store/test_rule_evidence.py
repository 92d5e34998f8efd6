from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from skillopt_sleep.store.rule_evidence import BASE, EvidencePool, task_content_key
from skillopt_sleep.types import Edit, TaskRecord

RULE = Edit("skill", "add", "Commit messages stay under 72 characters and cite the ticket")
NOW = datetime(2026, 11, 23, tzinfo=timezone.utc)


def pool(path: Path, base: str = "fp1", model: str = "m", **kw) -> EvidencePool:
    return EvidencePool.load(path, path.parent / "project", model, base, **kw)


def test_samples_and_tests_survive_a_save_and_find_rewordings(tmp_path: Path) -> None:
    path = tmp_path / "evidence.json"
    first = pool(path, now=NOW)
    ident = first.identity(RULE)
    first.record_samples(BASE, "task-1", [1.0, 0.0])
    first.record_samples(ident, "task-1", [1.0, 1.0, 0.0])
    first.record_test(RULE, accepted=False, val_set="tasks-1")
    first.save()
    again = pool(path, now=NOW + timedelta(days=1))
    reworded = Edit("skill", "add", "- commit messages stay under 72 characters, and cite the ticket.")
    assert again.identity(reworded) == ident
    assert again.stored(ident, "task-1") == [1.0, 1.0, 0.0]
    assert again.stored(BASE, "task-1") == [1.0, 0.0]
    assert again.nights_tested(reworded) == 1 and again.alpha_share(reworded) == 0.5
    assert again.unchanged(reworded, "tasks-1") and not again.unchanged(reworded, "tasks-2")
    other_number = Edit("skill", "add", "Commit messages stay under 50 characters and cite the ticket")
    assert again.identity(other_number) != ident and again.nights_tested(other_number) == 0


def test_evidence_is_scoped_to_documents_and_model_and_expires(tmp_path: Path) -> None:
    path = tmp_path / "evidence.json"
    first = pool(path, now=NOW)
    first.record_samples(BASE, "task-1", [1.0])
    first.save()
    assert pool(path, base="fp2", now=NOW).stored(BASE, "task-1") == []
    assert pool(path, model="other", now=NOW).stored(BASE, "task-1") == []
    other = pool(path, base="fp2", now=NOW)
    other.record_samples(BASE, "task-1", [0.0])
    other.save()  # keeps the first scope's records
    assert pool(path, now=NOW).stored(BASE, "task-1") == [1.0]
    assert pool(path, now=NOW + timedelta(days=31)).stored(BASE, "task-1") == []


def test_an_edit_tested_on_enough_nights_is_settled_unless_it_was_accepted(tmp_path: Path) -> None:
    p = pool(tmp_path / "evidence.json", max_nights=2)
    p.record_test(RULE, accepted=False)
    assert not p.settled(RULE)
    p.record_test(RULE, accepted=False)
    assert p.settled(RULE) and p.alpha_share(RULE) == 0.25
    kept = Edit("skill", "add", "Release notes list breaking changes first")
    p.record_test(kept, accepted=True)
    p.record_test(kept, accepted=False)
    assert not p.settled(kept)


def test_an_unreadable_or_planted_file_is_an_empty_pool(tmp_path: Path) -> None:
    path = tmp_path / "evidence.json"
    bad_nights = {
        "project": str((tmp_path / "project").resolve()),
        "model": "m",
        "base": "fp1",
        "identity": "e",
        "updated": "2026-11-23T00:00:00Z",
        "samples": {},
        "edit": {"nights": "many"},
    }
    for text in (
        "{not json",
        "[1, 2]",
        '{"records": [7, {"identity": "base", "samples": "x"}]}',
        "[" * 100000,
        json.dumps({"records": [bad_nights]}),
    ):
        path.write_text(text)
        p = pool(path)
        assert p.samples == {} and p.edits == {}
    record = {
        "project": str((tmp_path / "project").resolve()),
        "model": "m",
        "base": "fp1",
        "identity": "base",
        "updated": "2999-01-01T00:00:00Z",
        "samples": {"t": [0.5, 7, "x", -1, 1]},
    }
    path.write_text(json.dumps({"records": [record]}))
    assert pool(path, now=datetime(2999, 1, 2, tzinfo=timezone.utc)).stored(BASE, "t") == [0.5, 1.0]


def test_an_accepted_edit_is_never_held_back_as_unchanged(tmp_path: Path) -> None:
    p = pool(tmp_path / "evidence.json")
    assert not p.unchanged(RULE, "tasks-1"), "never tested"
    p.record_test(RULE, accepted=True, val_set="tasks-1")
    assert not p.unchanged(RULE, "tasks-1")
    other = Edit("skill", "add", "Release notes list breaking changes first")
    p.record_test(other, accepted=False)
    assert not p.unchanged(other, ""), "an unknown val set is never the same"


def test_val_set_key_is_by_content_not_ids_or_order() -> None:
    from skillopt_sleep.store.rule_evidence import val_set_key

    a = TaskRecord(id="v1", intent="Write the commit message", split="val")
    b = TaskRecord(id="v2", intent="Draft release notes", split="val")
    renamed = TaskRecord(id="other", intent="write the  commit message", split="val")
    assert val_set_key([a, b]) == val_set_key([b, renamed])
    assert val_set_key([a]) != val_set_key([a, b])


def test_task_content_key_ignores_ids_case_and_spacing() -> None:
    a = TaskRecord(id="a", intent="Write the  commit message", judge={"kind": "rule", "checks": []})
    b = TaskRecord(id="b", intent="write the commit message ", judge={"kind": "rule", "checks": []})
    c = TaskRecord(id="a", intent="Write the release notes", judge={"kind": "rule", "checks": []})
    assert task_content_key(a) == task_content_key(b) != task_content_key(c)


def test_failed_checks_are_kept_beside_the_scores_and_a_list_out_of_line_is_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "evidence.json"
    first = pool(path, now=NOW)
    ident = first.identity(RULE)
    first.record_samples(ident, "task-1", [1.0, 0.5], [frozenset(), frozenset({"contains:Refs"})])
    first.record_samples(ident, "task-2", [0.0], None)
    first.record_test(RULE, accepted=False)
    first.save()
    again = pool(path, now=NOW)
    assert again.stored_failed(ident, "task-1") == [frozenset(), frozenset({"contains:Refs"})]
    assert again.stored_failed(ident, "task-2") == [None]
    data = json.loads(path.read_text(encoding="utf-8"))
    for record in data["records"]:
        if record.get("failed"):
            record["failed"]["task-1"] = [["contains:Refs"]]  # one entry for two scores
    path.write_text(json.dumps(data), encoding="utf-8")
    assert pool(path, now=NOW).stored_failed(ident, "task-1") == [None, None]
    assert pool(path, now=NOW).stored(ident, "task-1") == [1.0, 0.5]


def test_nights_a_call_cap_left_an_edit_undecided_do_not_settle_it_but_still_cost_it(tmp_path: Path) -> None:
    path = tmp_path / "evidence.json"
    first = pool(path, now=NOW)
    first.record_samples(first.identity(RULE), "task-1", [1.0, 0.0])
    for _ in range(4):
        first.record_test(RULE, accepted=False, undecided=True)
    first.save()
    again = pool(path, now=NOW)
    assert not again.settled(RULE), "undecided nights are not verdicts"
    assert again.alpha_share(RULE) == 0.5**4, "but each looked at the data"
    for _ in range(4):
        again.record_test(RULE, accepted=False, val_set="v")
    assert again.settled(RULE)
    never = pool(tmp_path / "other.json", now=NOW)
    for _ in range(12):
        never.record_test(RULE, accepted=False, undecided=True)
    assert never.settled(RULE), "not carried for ever"


def test_a_rule_held_before_any_draw_is_kept_pending_across_a_save(tmp_path: Path) -> None:
    """A capped night's calls never reached it: no samples, no look, and it is still resumed."""
    path = tmp_path / "evidence.json"
    pool = EvidencePool.load(path, tmp_path, "m", "fp")
    rule = Edit("skill", "add", content="When writing a commit message, add Refs.", targets=["c1"])
    pool.hold(rule, ["commit"])
    pool.save()
    again = EvidencePool.load(path, tmp_path, "m", "fp")
    [(ident, record)] = again.pending()
    assert ident == again.identity(rule) and record.kinds == ["commit"] and record.whole().targets == ["c1"]
    assert again.resume_at(rule) is None and again.nights_tested(rule) == 0, "nothing spent"
    assert again.alpha_share(rule) == 1.0


def test_an_own_task_pass_is_kept_only_while_its_test_is_resumable(tmp_path: Path) -> None:
    """``own_passed`` survives a save beside the looks and share it was shown at; a decided
    test, or one carried to other documents (a new test there), loses it."""
    path = tmp_path / "evidence.json"
    pool = EvidencePool.load(path, tmp_path, "m", "before")
    rule = Edit("skill", "add", content="When writing a commit message, add Refs.")
    pool.record_samples(pool.identity(rule), "task-key", [1.0, 1.0, 1.0])
    pool.record_test(
        rule, False, undecided=True, kinds=["commit"], lower_bound=0.2, looks=2, share=0.25, own_passed=True
    )
    assert pool.own_passed(rule)
    pool.save()
    again = EvidencePool.load(path, tmp_path, "m", "before", now=pool.now + timedelta(hours=1))
    assert again.own_passed(rule) and again.resume_at(rule) == (2, 0.25)
    moved = EvidencePool.load(path, tmp_path, "m", "after", now=pool.now + timedelta(hours=1))
    assert moved.pending() and not moved.own_passed(rule), "against other documents it is a new test"
    again.record_test(rule, False, val_set="v")
    assert not again.own_passed(rule)
    nothing = EvidencePool.load(tmp_path / "other.json", tmp_path, "m", "fp")
    nothing.record_test(rule, False, undecided=True, kinds=["commit"], own_passed=True)  # no look: nothing shown
    assert not nothing.own_passed(rule)
