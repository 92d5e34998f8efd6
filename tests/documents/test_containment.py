"""Where a document may live, and writing it without following a link (documents/containment.py).
Documents that are links: a project's CLAUDE.md, its skill folder or its whole ``.claude`` pointing
at files elsewhere. A night refuses them in one line before any model call, adopt never writes
through them, and a link that stays inside the project is read and written where it points.

Everything runs the real CLI in a child process, against the fake Anthropic server or the
simulator, with a throwaway HOME and SKILLOPT_SLEEP_HOME.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt_sleep.documents.managed_block import START
from tests.support.anthropic_server import FakeAnthropic
from tests.support.tasks import make_tasks, write_tasks_file

MARKER = "OUTSIDE-MARKER-7f3a91"
SKILL = Path(".claude") / "skills" / "skillopt-sleep-learned" / "SKILL.md"
SKILL_TEXT = f"---\nname: skillopt-sleep-learned\ndescription: rules\n---\n# {MARKER}\n"
CASES = ("file", "skill-folder", "claude-folder")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SKILLOPT_SLEEP_BACKEND", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL")
    }
    (tmp_path / "userhome").mkdir(exist_ok=True)
    env.update({"SKILLOPT_SLEEP_HOME": str(tmp_path / "state"), "HOME": str(tmp_path / "userhome"), **extra})
    return env


def _cli(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [sys.executable, "-m", "skillopt_sleep", *args],
            capture_output=True,
            text=True,
            env=_env(tmp_path, **extra),
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"skillopt-sleep {' '.join(args)} still running after 120 s")


def _project(tmp_path: Path, case: str) -> tuple[Path, Path]:
    """A project whose document (per ``case``) is a link to a file outside holding MARKER; returns
    (project, the outside file)."""
    project, outside = tmp_path / "proj", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "CLAUDE.md").write_text("# proj\n\nHand-written notes.\n", encoding="utf-8")
    if case == "file":
        target = outside / "CLAUDE.md"
        target.write_text(f"# shared\n\n{MARKER}\n", encoding="utf-8")
        (project / "CLAUDE.md").unlink()
        (project / "CLAUDE.md").symlink_to(target)
    elif case == "skill-folder":
        target = outside / "skill" / "SKILL.md"
        target.parent.mkdir()
        target.write_text(SKILL_TEXT, encoding="utf-8")
        (project / SKILL).parent.parent.mkdir(parents=True)
        (project / SKILL).parent.symlink_to(target.parent, target_is_directory=True)
    else:
        target = outside / "dotclaude" / "skills" / "skillopt-sleep-learned" / "SKILL.md"
        target.parent.mkdir(parents=True)
        target.write_text(SKILL_TEXT, encoding="utf-8")
        (project / ".claude").symlink_to(outside / "dotclaude", target_is_directory=True)
    return project, target


def _tasks(tmp_path: Path) -> Path:
    return write_tasks_file(tmp_path / "tasks.json", make_tasks())


def _one_line_refusal(done: subprocess.CompletedProcess[str], name: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    assert name in lines[0] and "outside the project" in lines[0] and "outside" in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("case", CASES)
def test_run_refuses_before_any_request(tmp_path: Path, case: str) -> None:
    project, target = _project(tmp_path, case)
    tasks = _tasks(tmp_path)
    with FakeAnthropic(key="sk-ant-fake-key") as fake:
        done = _cli(
            tmp_path,
            "run",
            "--project",
            str(project),
            "--tasks-file",
            str(tasks),
            "--agent",
            "claude",
            "--backend",
            f"anthropic:base_url={fake.root}",
            "--quiet",
            ANTHROPIC_API_KEY=fake.key,
        )
        seen = list(fake.requests)
    assert not any(MARKER in json.dumps(r.body) for r in seen)
    assert seen == [], f"{len(seen)} request(s) reached the provider"
    line = _one_line_refusal(
        done, {"file": "CLAUDE.md", "skill-folder": "skillopt-sleep-learned", "claude-folder": ".claude"}[case]
    )
    assert str(target.parent if case != "file" else target).split("/outside/")[0] in line
    assert not (project / ".skillopt-sleep" / "staging").exists()


@pytest.mark.parametrize("case", CASES)
def test_run_then_adopt_leave_the_outside_file_alone(tmp_path: Path, case: str) -> None:
    project, target = _project(tmp_path, case)
    before = target.read_bytes()
    tasks = _tasks(tmp_path)
    _cli(
        tmp_path,
        "run",
        "--project",
        str(project),
        "--tasks-file",
        str(tasks),
        "--agent",
        "claude",
        "--backend",
        "sim:correct=1,harmful=0,seed=1",
        "--quiet",
    )
    adopted = _cli(tmp_path, "adopt", "--project", str(project), "--allow-simulated")
    assert target.read_bytes() == before
    assert adopted.returncode not in (0, 1) and "Traceback" not in adopted.stderr
    assert len(adopted.stderr.strip().splitlines()) == 1, adopted.stderr


def _staged_night(tmp_path: Path, project: Path) -> dict:
    done = _cli(
        tmp_path,
        "run",
        "--project",
        str(project),
        "--tasks-file",
        str(_tasks(tmp_path)),
        "--agent",
        "claude",
        "--backend",
        "sim:correct=1,harmful=0,seed=1",
        "--json",
        "--quiet",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["staging_dir"], report
    return report


def test_a_link_made_after_the_night_is_refused_by_adopt(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "CLAUDE.md").write_text("# proj\n\nHand-written notes.\n", encoding="utf-8")
    _staged_night(tmp_path, project)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "CLAUDE.md").write_bytes((project / "CLAUDE.md").read_bytes())  # the very same bytes
    before = (outside / "CLAUDE.md").read_bytes()
    (project / "CLAUDE.md").unlink()
    (project / "CLAUDE.md").symlink_to(outside / "CLAUDE.md")
    adopted = _cli(tmp_path, "adopt", "--project", str(project), "--allow-simulated")
    _one_line_refusal(adopted, "CLAUDE.md")
    assert (outside / "CLAUDE.md").read_bytes() == before
    assert (project / "CLAUDE.md").is_symlink()


def test_a_link_inside_the_project_is_written_where_it_points(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "docs").mkdir(parents=True)
    (project / "agent-config").mkdir()
    (project / "docs" / "CLAUDE.md").write_text("# proj\n\nHand-written notes.\n", encoding="utf-8")
    (project / "CLAUDE.md").symlink_to(Path("docs") / "CLAUDE.md")
    (project / ".claude").symlink_to("agent-config", target_is_directory=True)
    report = _staged_night(tmp_path, project)
    real = (project / "docs" / "CLAUDE.md").resolve()
    assert report["documents"]["memory"] == f"{project / 'CLAUDE.md'} (a link to {real})"
    real_skill = (project / "agent-config").resolve() / "skills" / "skillopt-sleep-learned" / "SKILL.md"
    assert report["documents"]["skill"] == f"{project / SKILL} (a link to {real_skill})"
    staged = Path(report["staging_dir"])
    assert f"(a link to {real})" in (staged / "report.md").read_text(encoding="utf-8")
    manifest = json.loads((staged / "manifest.json").read_text(encoding="utf-8"))
    written = {f["live_path"] for f in manifest["files"]}
    assert written and written <= {str(real), str(real_skill)}, written
    adopted = _cli(tmp_path, "adopt", "--project", str(project), "--allow-simulated")
    assert adopted.returncode == 0, adopted.stderr
    assert (project / "CLAUDE.md").is_symlink() and (project / ".claude").is_symlink()  # links stay links
    assert all(START in Path(path).read_text(encoding="utf-8") for path in written)


def test_a_user_level_skill_must_stay_in_the_agent_directory(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "CLAUDE.md").write_text("# proj\n", encoding="utf-8")
    (project / ".skillopt-sleep").mkdir()
    (project / ".skillopt-sleep" / "config.toml").write_text("user_level_skill = true\n", encoding="utf-8")
    outside = tmp_path / "outside" / "skill"
    outside.mkdir(parents=True)
    (outside / "SKILL.md").write_text(SKILL_TEXT, encoding="utf-8")
    skills = tmp_path / "userhome" / ".claude" / "skills"
    skills.mkdir(parents=True)
    (skills / "skillopt-sleep-learned").symlink_to(outside, target_is_directory=True)
    with FakeAnthropic(key="sk-ant-fake-key") as fake:
        done = _cli(
            tmp_path,
            "run",
            "--project",
            str(project),
            "--tasks-file",
            str(_tasks(tmp_path)),
            "--agent",
            "claude",
            "--backend",
            f"anthropic:base_url={fake.root}",
            "--quiet",
            ANTHROPIC_API_KEY=fake.key,
        )
        seen = list(fake.requests)
    assert seen == []
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3 and len(lines) == 1, done.stderr[-3000:]
    assert "skillopt-sleep-learned" in lines[0] and "outside ~/.claude" in lines[0], lines[0]


def test_a_write_never_follows_a_folder_link_planted_after_the_check(tmp_path: Path) -> None:
    """What adopt and revert write with: a folder on the checked path that became a link since is
    an error, not a write through it; a link in the file's own place is replaced, not followed."""
    from skillopt_sleep.documents.containment import remove_file, replace_file

    project, outside = (tmp_path / "proj").resolve(), (tmp_path / "outside").resolve()
    (project / ".claude" / "skills" / "s").mkdir(parents=True)
    (outside / "skills" / "s").mkdir(parents=True)
    (outside / "skills" / "s" / "SKILL.md").write_text(MARKER, encoding="utf-8")
    live = project / ".claude" / "skills" / "s" / "SKILL.md"
    (project / ".claude").rename(project / "was-claude")
    (project / ".claude").symlink_to(outside, target_is_directory=True)  # planted after the check
    with pytest.raises(OSError):
        replace_file(live, b"rules\n")
    with pytest.raises(OSError):
        remove_file(live)
    assert (outside / "skills" / "s" / "SKILL.md").read_text(encoding="utf-8") == MARKER
    assert [p.name for p in (outside / "skills" / "s").iterdir()] == ["SKILL.md"]  # no temp file left

    memory = project / "CLAUDE.md"
    memory.symlink_to(outside / "skills" / "s" / "SKILL.md")
    replace_file(memory, b"# proj\n")
    assert not memory.is_symlink() and memory.read_bytes() == b"# proj\n"
    assert (outside / "skills" / "s" / "SKILL.md").read_text(encoding="utf-8") == MARKER
