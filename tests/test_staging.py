from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from skillopt_sleep.errors import UserError
from skillopt_sleep.paths import project_dirs
from skillopt_sleep.adoption import adopt
from skillopt_sleep.staging import StagedFile, stage
from skillopt_sleep.types import Edit, NightReport

MEMORY_OLD = b"# Project rules\r\n\r\nKeep it short.\r\n\xff\xfe not utf-8\r\n"
MEMORY_NEW = b"# Project rules\r\n\r\nKeep it short.\r\n- Use conventional commits.\r\n"
SKILL_NEW = b"---\nname: skillopt-sleep-learned\ndescription: learned rules\n---\n- rule\n"


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "CLAUDE.md").write_bytes(MEMORY_OLD)
    return root


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _skill_path(project: Path) -> Path:
    return project / ".claude" / "skills" / "skillopt-sleep-learned" / "SKILL.md"


def _stage(project: Path, night_id: str = "night-1", **kw) -> Path:
    report = NightReport(night_id=night_id, project=str(project), mode="run", status="staged",
                         accepted_edits=[Edit("memory", "add", "Use conventional commits.")])
    files = kw.pop("files", None) or [
        StagedFile("memory", project / "CLAUDE.md", MEMORY_OLD, MEMORY_NEW),
        StagedFile("skill", _skill_path(project), None, SKILL_NEW),
    ]
    directory = stage(project, report, files, **kw)
    assert report.staging_dir == str(directory)
    return directory


def test_stage_writes_proposal_report_and_manifest(project, tmp_path):
    evidence = tmp_path / "ev.jsonl"
    evidence.write_text('{"call": 1}\n')
    directory = _stage(project, evidence=evidence)
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
    assert memory["baseline_sha256"] == _sha(MEMORY_OLD) and memory["baseline_existed"]
    assert memory["proposal_sha256"] == _sha(MEMORY_NEW)
    assert skill["baseline_sha256"] is None and not skill["baseline_existed"]
    assert skill["live_path"] == str(_skill_path(project).resolve())
    assert not [p for p in project_dirs(project).staging.iterdir() if p.name.startswith(".")]



def test_unchanged_files_are_not_staged(project):
    files = [StagedFile("memory", project / "CLAUDE.md", MEMORY_OLD, MEMORY_OLD)]
    directory = _stage(project, files=files)
    assert json.loads((directory / "manifest.json").read_text())["files"] == []
    with pytest.raises(UserError, match="nothing to adopt"):
        adopt(project)



def test_restaging_the_same_night_refused(project):
    _stage(project)
    with pytest.raises(UserError, match="already staged"):
        _stage(project)
