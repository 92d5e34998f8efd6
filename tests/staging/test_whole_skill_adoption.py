"""Whole-skill edits end to end: staged as a change to hand-written lines, shown as a whole-document
diff with the conflict flagged in review, adopted atomically with a backup, and restored byte-exact
by revert, whatever the file's line endings, final newline, encoding details or byte-order mark."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.staging.adoption import adopt, revert
from skillopt_sleep.commands.review import review
from skillopt_sleep.documents.managed_block import apply_edit, load_documents
from skillopt_sleep.staging.stage import StagedFile, stage
from skillopt_sleep.types import Edit, NightReport
from tests.support.staged_project import skill_path

FORBID = "Do NOT look anything up, search, or use any tools."


def skill_bytes(newline: str, bom: bool, final_newline: bool) -> bytes:
    lines = [
        "---",
        "name: skillopt-sleep-learned",
        "description: Réponses brèves",
        "---",
        "# Recherche — naïve",
        "",
        f"- {FORBID}",
        "- Keep answers short ✓.",
        "Dernière ligne",
    ]
    text = newline.join(lines) + (newline if final_newline else "")
    return ("\ufeff" if bom else "").encode("utf-8") + text.encode("utf-8")


VARIANTS = [
    pytest.param("\r\n", True, False, id="crlf-bom-no-final-newline"),
    pytest.param("\n", False, True, id="lf"),
    pytest.param("\r\n", False, True, id="crlf"),
    pytest.param("\n", True, False, id="lf-bom-no-final-newline"),
]


@pytest.mark.parametrize(("newline", "bom", "final_newline"), VARIANTS)
def test_whole_skill_edits_adopt_and_revert_byte_exact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], newline: str, bom: bool, final_newline: bool
) -> None:
    project = tmp_path / "proj"
    live = skill_path(project)
    live.parent.mkdir(parents=True)
    before = skill_bytes(newline, bom, final_newline)
    live.write_bytes(before)
    docs = load_documents(project, "claude", whole_skill=True)
    edits = [
        Edit("skill", "replace_line", "Search the docs before answering.", anchor=f"- {FORBID}"),
        Edit("skill", "delete_line", anchor="Dernière ligne"),
        Edit("skill", "add", "Cite the page you searched.", supersedes="- Keep answers short ✓."),
    ]
    for edit in edits:
        docs = apply_edit(docs, edit)
    proposed = docs.skill.encoded()
    assert proposed.startswith(b"\xef\xbb\xbf") == bom
    # every line ending, the managed block's included, is the file's own
    assert proposed.count(b"\n") == proposed.count(newline.encode())
    report = NightReport(night_id="n1", project=str(project), mode="run", status="staged", accepted_edits=edits)
    stage(project, report, [StagedFile("skill", live, before, proposed)])
    assert live.read_bytes() == before  # staging writes nothing live

    review(project)
    shown = capsys.readouterr().out
    assert "whole document: hand-written lines changed" in shown
    assert f"-- {FORBID}" in shown and "+- Search the docs before answering." in shown
    assert "Changes to what you wrote (3)" in shown
    assert 'overrides your line "- Keep answers short ✓."' in shown

    adopt(project)
    assert live.read_bytes() == proposed
    revert(project)
    assert live.read_bytes() == before
