"""A night refused before any work leaves the project as it found it (footprint.py): a run refused
before any work removes what it created under ``<project>/.skillopt-sleep/`` (and keeps what was
there, and a process waiting for the lock survives it), and a night that did work keeps its call
journal."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt_sleep.commands.demo import build_demo_home
from skillopt_sleep.footprint import Footprint
from skillopt_sleep.paths import project_dirs
from tests.support import fake_cli
from tests.support.engine_cli import run_cli


def tree(*roots: Path) -> dict[str, str]:
    """Every path under ``roots`` -> sha-256 of its bytes ("dir" for a folder)."""
    out = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            out[str(path)] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def demo(tmp_path: Path) -> tuple[Path, Path, Path]:
    return build_demo_home(tmp_path / "demo")


def test_a_run_with_no_backend_leaves_no_skillopt_sleep_folder(demo, tmp_path: Path) -> None:
    home, claude, project = demo
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    out = run_cli(
        "run", "--project", str(project), "--claude-home", str(claude), "--quiet", home=home, path=str(empty_bin)
    )
    assert out.returncode == 4 and "no model backend available" in out.stderr, out.stderr
    assert not os.path.lexists(project_dirs(project).root), sorted(project_dirs(project).root.rglob("*"))


def test_a_run_whose_preflight_fails_leaves_no_skillopt_sleep_folder(demo, tmp_path: Path) -> None:
    home, claude, project = demo
    fake_bin = tmp_path / "fake-bin"
    fake_cli.install(fake_bin)
    out = run_cli(
        "run",
        "--project",
        str(project),
        "--claude-home",
        str(claude),
        "--quiet",
        home=home,
        path=str(fake_bin),
        extra={"FAKE_CLI_LOG": str(tmp_path / "cli.jsonl"), "FAKE_CLI_MODE": "not_logged_in"},
    )
    assert out.returncode == 4 and "preflight" in out.stderr, out.stderr
    assert fake_cli.runs(tmp_path / "cli.jsonl")  # it did try the model
    assert not os.path.lexists(project_dirs(project).root), sorted(project_dirs(project).root.rglob("*"))


def test_a_refused_run_keeps_exactly_what_was_there_before(demo, tmp_path: Path) -> None:
    home, claude, project = demo
    root = project_dirs(project).root
    (root / "staging").mkdir(parents=True)
    (root / "config.toml").write_text("k = 3\n", encoding="utf-8")
    (root / ".gitignore").write_text("*\n", encoding="utf-8")
    before = tree(root)
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    out = run_cli(
        "run", "--project", str(project), "--claude-home", str(claude), "--quiet", home=home, path=str(empty_bin)
    )
    assert out.returncode == 4, out.stderr
    assert tree(root) == before


def test_a_night_that_did_work_keeps_what_it_wrote(tmp_path: Path) -> None:
    """A night whose journal holds an answer (``run --resume`` continues it) is not undone."""
    project = tmp_path / "proj"
    project.mkdir()
    footprint = Footprint(project)
    journal = project_dirs(project).root / "nights" / "20260101T000000Z-abcd" / "calls.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_text('{"k": "x", "c": {}}\n', encoding="utf-8")
    assert footprint.undo("20260101T000000Z-abcd") == [] and journal.is_file()
    journal.write_text("", encoding="utf-8")  # nothing answered: undone, folder and all
    assert footprint.undo("20260101T000000Z-abcd") and not project_dirs(project).root.exists()


def test_a_process_waiting_for_the_lock_survives_a_refused_night_removing_it(tmp_path: Path) -> None:
    """A refused night removes the folder it created while another process waits for the lock:
    that process makes it again and takes the lock (no traceback, no second holder)."""
    import time

    from skillopt_sleep.store.locks import ProjectLock

    project = tmp_path / "proj"
    project.mkdir()
    footprint = Footprint(project)
    lock_path = project_dirs(project).lock
    waiter = (
        "import sys; from skillopt_sleep.store.locks import ProjectLock\n"
        f"lock = ProjectLock({str(lock_path)!r}, wait=20); lock.acquire(); print('held'); lock.release()"
    )
    with ProjectLock(lock_path):
        other = subprocess.Popen(
            [sys.executable, "-c", waiter], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        time.sleep(1.0)  # it is polling the lock now (and makes the folder again as it polls)
        assert lock_path in footprint.undo("20260101T000000Z-abcd")
    out, err = other.communicate(timeout=60)
    assert other.returncode == 0 and out.strip() == "held", err
