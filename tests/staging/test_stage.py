from __future__ import annotations

import json

import pytest

from skillopt_sleep.errors import UserError
from skillopt_sleep.paths import project_dirs
from skillopt_sleep.staging.adoption import adopt
from skillopt_sleep.staging.stage import StagedFile

from tests.support.staged_project import MEMORY_NEW, MEMORY_OLD, SKILL_NEW, sha256, skill_path, stage_proposal
from tests.support.staged_project import project_fixture  # noqa: F401  (the ``project`` fixture)


def test_stage_writes_proposal_report_and_manifest(project, tmp_path):
    evidence = tmp_path / "ev.jsonl"
    evidence.write_text('{"call": 1}\n')
    directory = stage_proposal(project, evidence=evidence)
    assert directory == project_dirs(project).staging / "night-1"
    assert (project / ".skillopt-sleep" / ".gitignore").read_text() == "*\n"
    assert (directory / "proposed" / "memory" / "CLAUDE.md").read_bytes() == MEMORY_NEW
    assert (directory / "proposed" / "skill" / "SKILL.md").read_bytes() == SKILL_NEW
    assert (directory / "evidence.jsonl").read_text() == '{"call": 1}\n'
    assert "night-1" in (directory / "report.md").read_text(encoding="utf-8")
    assert json.loads((directory / "report.json").read_text())["staging_dir"] == str(directory)
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["format"] == "skillopt_sleep.manifest.v1"
    memory, skill = manifest["files"]
    assert memory["baseline_sha256"] == sha256(MEMORY_OLD) and memory["baseline_existed"]
    assert memory["proposal_sha256"] == sha256(MEMORY_NEW)
    assert skill["baseline_sha256"] is None and not skill["baseline_existed"]
    assert skill["live_path"] == str(skill_path(project).resolve())
    assert not [p for p in project_dirs(project).staging.iterdir() if p.name.startswith(".")]


def test_unchanged_files_are_not_staged(project):
    files = [StagedFile("memory", project / "CLAUDE.md", MEMORY_OLD, MEMORY_OLD)]
    directory = stage_proposal(project, files=files)
    assert json.loads((directory / "manifest.json").read_text())["files"] == []
    with pytest.raises(UserError, match="nothing to adopt"):
        adopt(project)


def test_restaging_the_same_night_refused(project):
    stage_proposal(project)
    with pytest.raises(UserError, match="already staged"):
        stage_proposal(project)
