"""Staged projects for the staging, adoption and command tests.

``project`` (a fixture; import ``project_fixture``) is a project whose CLAUDE.md holds CRLF line
ends and bytes that are not UTF-8, and ``stage_proposal`` stages a two-file proposal for it
(CLAUDE.md + a new SKILL.md). ``project_with_memory`` and ``stage_memory`` build the simpler
shape the command and plugin tests need: one memory document and a proposal that rewrites it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from skillopt_sleep.staging.stage import StagedFile, stage
from skillopt_sleep.types import Edit, NightReport

MEMORY_OLD = b"# Project rules\r\n\r\nKeep it short.\r\n\xff\xfe not utf-8\r\n"
MEMORY_NEW = b"# Project rules\r\n\r\nKeep it short.\r\n- Use conventional commits.\r\n"
SKILL_NEW = b"---\nname: skillopt-sleep-learned\ndescription: learned rules\n---\n- rule\n"


def project_with_memory(tmp_path: Path, content: bytes, name: str = "CLAUDE.md") -> Path:
    """``tmp_path/proj`` holding one memory document ``name``."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / name).write_bytes(content)
    return root


def make_project(tmp_path: Path) -> Path:
    return project_with_memory(tmp_path, MEMORY_OLD)


@pytest.fixture(name="project")
def project_fixture(tmp_path: Path) -> Path:
    """The staged project, as a fixture named ``project`` (import ``project_fixture`` to use it)."""
    return make_project(tmp_path)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def skill_path(project: Path) -> Path:
    return project / ".claude" / "skills" / "skillopt-sleep-learned" / "SKILL.md"


def stage_proposal(project: Path, night_id: str = "night-1", **kw) -> Path:
    report = NightReport(
        night_id=night_id,
        project=str(project),
        mode="run",
        status="staged",
        accepted_edits=[Edit("memory", "add", "Use conventional commits.")],
    )
    files = kw.pop("files", None) or [
        StagedFile("memory", project / "CLAUDE.md", MEMORY_OLD, MEMORY_NEW),
        StagedFile("skill", skill_path(project), None, SKILL_NEW),
    ]
    directory = stage(project, report, files, **kw)
    assert report.staging_dir == str(directory)
    return directory


def stage_memory(
    project: Path,
    proposed: bytes,
    night_id: str = "n1",
    rules: int = 0,
    name: str = "CLAUDE.md",
    report: NightReport | None = None,
) -> Path:
    """Stage a proposal that turns the live memory document ``name`` into ``proposed``, as a night
    that accepted ``rules`` edits (or as ``report`` says)."""
    report = report or NightReport(
        night_id=night_id,
        project=str(project),
        mode="run",
        status="staged",
        accepted_edits=[Edit("memory", "add", f"rule {i}") for i in range(rules)],
    )
    live = project / name
    return stage(project, report, [StagedFile("memory", live, live.read_bytes(), proposed)])
