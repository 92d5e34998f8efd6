"""Whole-document awareness (documents/managed_block.py): the optimizer's view of both documents, rules that
supersede a hand-written line, and line edits of a skill its owner opted in."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from skillopt_sleep.documents.managed_block import (
    EditRefused,
    apply_edit,
    load_documents,
    optimizer_payload,
    optimizer_view,
    whole_skill_opted_in,
)
from skillopt_sleep.documents.handwritten import split_supersedes
from skillopt_sleep.types import Edit

FORBID = "Do NOT look anything up, search, or use any tools."
SKILL = f"---\nname: lookup\ndescription: answers\n---\n# Lookup\n\n- {FORBID}\n- Answer briefly.\n"


def docs_for(tmp_path: Path, skill: str = SKILL, whole: bool = False, memory: str | None = None):
    root = tmp_path / "proj"
    path = root / ".claude" / "skills" / "lookup" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(skill.encode("utf-8"))
    if memory is not None:
        (root / "CLAUDE.md").write_text(memory, encoding="utf-8")
    return load_documents(root, "claude", "lookup", whole_skill=whole)


def test_the_optimizer_sees_hand_written_text_of_both_documents(tmp_path: Path) -> None:
    docs = docs_for(tmp_path, memory="# Project\n\nUse Decimal for money.\n")
    view = optimizer_view(docs)
    assert FORBID in view and "Use Decimal for money." in view
    assert 'name="SKILL.md" role="skill"' in view and "supersedes" in view
    assert "whole-skill editing is on" not in view


def test_the_view_is_redacted_cleaned_and_bounded(tmp_path: Path) -> None:
    secret = "sk-ant-api03-" + "A" * 90
    long_tail = "word " * 5000
    docs = docs_for(tmp_path, skill=SKILL + f"token {secret}\n\x1b[31mred\x1b[0m\n" + long_tail)
    view = optimizer_view(docs, max_chars=2000)
    assert secret not in view and "\x1b" not in view
    assert "more characters of SKILL.md not shown" in view
    assert len(view) < 2000 + 1000


def test_the_view_says_what_a_night_may_do(tmp_path: Path) -> None:
    assert "whole-skill editing is on" in optimizer_view(docs_for(tmp_path, whole=True))
    docs = docs_for(tmp_path / "ro")
    os.chmod(docs.skill.path, 0o444)
    try:
        frozen = load_documents(tmp_path / "ro" / "proj", "claude", "lookup", whole_skill=True)
        assert "read-only" in optimizer_view(frozen)
    finally:
        os.chmod(docs.skill.path, 0o644)


def test_the_payload_lists_hand_written_lines(tmp_path: Path) -> None:
    payload = optimizer_payload(docs_for(tmp_path, whole=True))
    assert payload["skill"]["hand_written"] == ["# Lookup", f"- {FORBID}", "- Answer briefly."]
    assert payload["skill"]["whole_skill"] is True and payload["memory"]["whole_skill"] is False


def test_a_rule_may_supersede_an_exact_hand_written_line(tmp_path: Path) -> None:
    docs = docs_for(tmp_path)
    edit = Edit("skill", "add", "Search the project docs before answering.", supersedes=f"  - {FORBID} ")
    after = apply_edit(docs, edit)
    rule = after.skill.rules()[-1]
    assert rule == f'Search the project docs before answering. (supersedes: "- {FORBID}")'
    assert split_supersedes(rule) == ("Search the project docs before answering.", f"- {FORBID}")
    assert FORBID in after.skill.text  # the line itself stays: only whole-skill editing removes it


@pytest.mark.parametrize(
    "wanted", ["Do NOT look anything up", "- Answer briefly", "name: lookup", "- never written here"]
)
def test_a_supersede_of_a_line_that_is_not_there_verbatim_is_refused(tmp_path: Path, wanted: str) -> None:
    with pytest.raises(EditRefused, match="not a hand-written line"):
        apply_edit(docs_for(tmp_path), Edit("skill", "add", "Search first.", supersedes=wanted))


def test_a_supersede_of_a_line_holding_a_secret_is_refused(tmp_path: Path) -> None:
    secret_line = "password = hunter2-Secret-Value-123"
    docs = docs_for(tmp_path, skill=SKILL + secret_line + "\n")
    with pytest.raises(EditRefused, match="secret"):
        apply_edit(docs, Edit("skill", "add", "Search first.", supersedes=secret_line))


def test_line_edits_need_the_skill_opted_in(tmp_path: Path) -> None:
    edit = Edit("skill", "replace_line", "Search the docs first.", anchor=f"- {FORBID}")
    with pytest.raises(EditRefused, match="whole-skill editing is off"):
        apply_edit(docs_for(tmp_path), edit)
    with pytest.raises(EditRefused, match="whole-skill editing is off"):
        apply_edit(
            docs_for(tmp_path / "m", memory=f"- {FORBID}\n", whole=True),
            Edit("memory", "delete_line", anchor=f"- {FORBID}"),
        )
    after = apply_edit(docs_for(tmp_path / "on", whole=True), edit)
    assert after.skill.text == SKILL.replace(FORBID, "Search the docs first.")
    assert after.skill.rules() == []


def test_delete_line_and_ambiguous_or_missing_anchors(tmp_path: Path) -> None:
    docs = docs_for(tmp_path, whole=True)
    after = apply_edit(docs, Edit("skill", "delete_line", anchor=FORBID.join(["- ", ""])))
    assert after.skill.text == SKILL.replace(f"- {FORBID}\n", "")
    twice = docs_for(tmp_path / "2", skill=SKILL + f"- {FORBID}\n", whole=True)
    with pytest.raises(EditRefused, match="ambiguous"):
        apply_edit(twice, Edit("skill", "delete_line", anchor=f"- {FORBID}"))
    with pytest.raises(EditRefused, match="not a hand-written line"):
        apply_edit(docs, Edit("skill", "delete_line", anchor="Do NOT"))


def test_a_read_only_skill_is_never_edited_even_when_opted_in(tmp_path: Path) -> None:
    docs = docs_for(tmp_path, whole=True)
    frozen = replace(docs, skill=replace(docs.skill, read_only=True))
    with pytest.raises(EditRefused, match="read-only"):
        apply_edit(frozen, Edit("skill", "delete_line", anchor=f"- {FORBID}"))


def test_a_replacement_line_that_would_hide_the_block_end_is_refused(tmp_path: Path) -> None:
    docs = apply_edit(docs_for(tmp_path, whole=True), Edit("skill", "add", "Answer briefly and cite."))
    with pytest.raises(EditRefused, match="managed block"):
        apply_edit(docs, Edit("skill", "replace_line", "~~~", anchor="# Lookup"))


def test_whole_skill_opt_in_by_flag_or_by_name() -> None:
    assert whole_skill_opted_in("lookup", ["lookup"]) and whole_skill_opted_in("lookup", [], flag=True)
    assert not whole_skill_opted_in("lookup", ["other"])


def test_a_skill_rule_may_supersede_a_line_of_the_memory_file(tmp_path: Path) -> None:
    docs = docs_for(tmp_path, memory="# Project\n\nNever run the test suite.\n")
    after = apply_edit(docs, Edit("skill", "add", "Run the tests.", supersedes="Never run the test suite."))
    assert after.skill.rules() == ['Run the tests. (supersedes: "Never run the test suite.")']


def test_no_line_of_a_secret_that_spans_lines_is_shown_or_quoted(tmp_path: Path) -> None:
    body = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0"
    key = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\n"
    docs = docs_for(tmp_path, skill=SKILL + key, whole=True)
    assert body not in optimizer_view(docs)
    assert body not in " ".join(optimizer_payload(docs)["skill"]["hand_written"])
    with pytest.raises(EditRefused, match="secret"):
        apply_edit(docs, Edit("skill", "add", "Search first.", supersedes=body))
    with pytest.raises(EditRefused, match="secret"):
        apply_edit(docs, Edit("skill", "delete_line", anchor=body))
