from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillopt_sleep.cli import main
from skillopt_sleep.commands.demo import build_demo_home
from skillopt_sleep.mining import load_tasks


@pytest.fixture
def demo(tmp_path: Path) -> tuple[Path, Path]:
    _, claude, project = build_demo_home(tmp_path)
    return claude, project


def test_harvest_json_lists_sessions_tasks_and_skips(
    demo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    claude, project = demo
    assert main(["harvest", "--project", str(project), "--claude-home", str(claude), "--json", "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= {"sessions", "tasks", "skipped"}
    assert len(data["sessions"]) == 21
    for s in data["sessions"]:
        for key in (
            "source",
            "session_id",
            "project",
            "user_prompts",
            "n_user_turns",
            "tools_used",
            "skills_used",
            "feedback",
            "path",
        ):
            assert key in s, key
        assert s["project"] == str(project)
        assert not any(p.startswith(("<command-name>", "Caveat:")) for p in s["user_prompts"])
    kinds = {t["skill_hint"] for t in data["tasks"]}
    assert len(kinds) >= 3
    assert all(t["recurrence"] >= 2 for t in data["tasks"])


def test_harvest_output_writes_an_unreviewed_draft(demo: tuple[Path, Path], tmp_path: Path) -> None:
    claude, project = demo
    out = tmp_path / "draft.json"
    assert (
        main(["harvest", "--project", str(project), "--claude-home", str(claude), "--output", str(out), "--quiet"]) == 0
    )
    tasks, reviewed = load_tasks(out)
    assert tasks and reviewed is False
    assert {t.split for t in tasks} >= {"train", "val"}


def test_harvest_other_project_finds_nothing(
    demo: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claude, _ = demo
    other = tmp_path / "other"
    other.mkdir()
    assert main(["harvest", "--project", str(other), "--claude-home", str(claude), "--json", "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sessions"] == [] and data["tasks"] == []


def test_harvest_bad_since_is_a_usage_error(demo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    claude, project = demo
    assert main(["harvest", "--project", str(project), "--claude-home", str(claude), "--since", "yesterday"]) == 2
    assert "ISO-8601" in capsys.readouterr().err
