"""adopt checks where each document resolves, then writes; a link planted in between (here: the
project's ``.claude`` folder swapped for a link to a folder elsewhere once the adoption is
journaled) is never written through: the adoption fails in one line and is rolled back."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.staging import adoption_journal as journal
from skillopt_sleep.staging.adoption import adopt
from skillopt_sleep.errors import UserError
from tests.support.staged_project import MEMORY_OLD, project_fixture, stage_proposal  # noqa: F401


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"" for p in root.rglob("*")}


def test_a_folder_link_planted_before_the_write_is_not_followed(project: Path, tmp_path: Path, monkeypatch) -> None:
    stage_proposal(project)  # writes CLAUDE.md, then creates .claude/skills/skillopt-sleep-learned/SKILL.md
    outside = tmp_path / "outside"
    (outside / "skills" / "skillopt-sleep-learned").mkdir(parents=True)
    (outside / "notes.md").write_text("mine\n", encoding="utf-8")
    before = _tree(outside)
    real_begin = journal.begin

    def begin_then_plant(project_dir, record):
        real_begin(project_dir, record)
        (project / ".claude").symlink_to(outside, target_is_directory=True)

    monkeypatch.setattr(journal, "begin", begin_then_plant)
    with pytest.raises(UserError, match="nothing was adopted"):
        adopt(project)
    assert _tree(outside) == before
    assert (project / "CLAUDE.md").read_bytes() == MEMORY_OLD
