"""What ``uninstall`` finds and removes (``uninstall.py``): only what is the engine's, said one line
per thing, and a project a night holds left alone."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from skillopt_sleep import uninstall
from skillopt_sleep.paths import PROJECT_DIR, project_dirs, user_dirs
from skillopt_sleep.store.locks import ProjectLock


def test_temp_leftovers_are_night_logs_and_sandboxes_no_call_can_still_use(tmp_path: Path) -> None:
    now = time.time()
    log = tmp_path / f"{uninstall.NIGHT_LOG_PREFIX}abc.log"
    log.write_text("night output\n", encoding="utf-8")
    dead, live = tmp_path / f"{uninstall.SANDBOX_PREFIX}dead", tmp_path / f"{uninstall.SANDBOX_PREFIX}live"
    for sandbox in (dead, live):
        sandbox.mkdir()
    old = now - uninstall.SANDBOX_MIN_AGE - 60
    os.utime(dead, (old, old))
    (tmp_path / f"{uninstall.NIGHT_LOG_PREFIX}dir").mkdir()  # a night log is a file
    not_a_sandbox = tmp_path / f"{uninstall.SANDBOX_PREFIX}file"
    not_a_sandbox.write_text("", encoding="utf-8")  # a sandbox is a directory
    os.utime(not_a_sandbox, (old, old))
    (tmp_path / f"{uninstall.NIGHT_LOG_PREFIX}link.log").symlink_to(log)
    (tmp_path / "skillopt-sleep-demo-x").mkdir()
    assert uninstall.temp_leftovers(tmp_path, now=now) == [dead, log]
    assert uninstall.temp_leftovers(tmp_path / "missing", now=now) == []


def test_the_plan_is_described_one_line_per_thing(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    group = {"night_id": "n2", "files": [{"path": "CLAUDE.md"}, {"path": "AGENTS.md"}]}
    plan = uninstall.Plan(
        vias=["cron"],
        schedule_file=tmp_path / "schedule.json",
        projects=[uninstall.ProjectPlan(project, [group, {"night_id": "n1", "files": []}])],
        user_dirs=[tmp_path / "state"],
        leftovers=[tmp_path / "tmp" / "skillopt-sleep-night-x.log"],
    )
    assert plan.adoptions == 2
    assert uninstall.describe(plan, revert_documents=True) == [
        "remove the nightly cron entry",
        f"remove {tmp_path / 'schedule.json'}",
        f"revert night n2 in {project}: CLAUDE.md, AGENTS.md",
        f"revert night n1 in {project}: ",
        f"remove {project / PROJECT_DIR}",
        f"remove {tmp_path / 'state'}",
        f"remove {tmp_path / 'tmp' / 'skillopt-sleep-night-x.log'}",
    ]
    kept = uninstall.describe(plan, revert_documents=False)
    assert kept[2] == f"keep as they are (--keep-documents) night n2 in {project}: CLAUDE.md, AGENTS.md"


def test_only_the_engines_own_directories_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dirs = user_dirs()
    for path in (dirs.config, dirs.state):
        path.mkdir(parents=True)
    assert uninstall.engine_dirs() == [dirs.config, dirs.state]
    assert not uninstall._ours(Path.home()) and not uninstall._ours(tmp_path / "shared")
    assert uninstall._ours(tmp_path / "x" / "skillopt-sleep")


def test_projects_are_known_only_with_their_state_directory(tmp_path: Path) -> None:
    kept, bare, linked = tmp_path / "kept", tmp_path / "bare", tmp_path / "linked"
    (kept / PROJECT_DIR).mkdir(parents=True)
    bare.mkdir()
    linked.mkdir()
    (linked / PROJECT_DIR).symlink_to(kept / PROJECT_DIR)
    assert uninstall.known_projects([kept, bare, linked, kept]) == [kept.resolve()]


def test_a_project_whose_lock_is_held_is_left_whole(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    state = project_dirs(project).root
    state.mkdir(parents=True)
    (state / "history.jsonl").write_text("{}\n", encoding="utf-8")
    lock = ProjectLock(project_dirs(project).lock, "night")
    lock.acquire()
    try:
        outcome = uninstall.Outcome()
        uninstall.clear_project(uninstall.ProjectPlan(project, []), True, outcome)
    finally:
        lock.release()
    assert outcome.done == [] and len(outcome.kept) == 1 and outcome.kept[0].startswith(f"{state}: ")
    assert (state / "history.jsonl").exists()
    outcome = uninstall.Outcome()
    uninstall.clear_project(uninstall.ProjectPlan(project, []), True, outcome)
    assert outcome.to_dict() == {"done": [f"removed {state}"], "kept": []} and not state.exists()
