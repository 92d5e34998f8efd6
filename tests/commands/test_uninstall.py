"""``skillopt-sleep uninstall`` through the CLI, with the fake crontab / systemctl on PATH: a
scheduled project with an adopted proposal, a second project known only from the sessions record,
the user-level state. Every path: --dry-run, --yes, --keep-documents, a file edited after
adoption, a running night, no terminal, and the questions on a terminal."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import pytest

from skillopt_sleep.staging.adoption import adopt
from skillopt_sleep.cli import main
from skillopt_sleep.commands.notice import record_session
from skillopt_sleep.errors import EXIT_CONFLICT, EXIT_USAGE
from skillopt_sleep.store.locks import ProjectLock
from skillopt_sleep.paths import PROJECT_DIR, project_dirs, user_dirs
from skillopt_sleep.scheduler.base import MARKER
from tests.support.scheduler_tools import FakeTools
from tests.support.staged_project import stage_memory
from tests.support.tree_hash import differences, fingerprint

FOREIGN = "# my backups\n15 1 * * * /usr/local/bin/backup --all\n"
OLD = b"# Rules\r\n\r\nKeep it short.\r\n"
NEW = b"# Rules\r\n\r\nKeep it short.\r\n- Use conventional commits.\r\n"
NEWER = NEW + b"- Run the tests first.\r\n"


@pytest.fixture(autouse=True)
def private_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temp directory uninstall cleans: never the machine's own."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    return temp


def _project(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "CLAUDE.md").write_bytes(OLD)
    return root


@pytest.fixture
def world(fake_tools: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """A scheduled project with two adoptions in effect; a second project seen by a session hook,
    with a staged proposal never adopted; cron holding our entry beside a foreign one."""
    monkeypatch.setenv("SKILLOPT_FAKE_NO_USER_MANAGER", "1")
    fake_tools.crontab.write_text(FOREIGN, encoding="utf-8")
    scheduled = _project(tmp_path, "scheduled")
    stage_memory(scheduled, NEW, night_id="n1")
    adopt(scheduled, "n1")
    stage_memory(scheduled, NEWER, night_id="n2")
    adopt(scheduled, "n2")
    seen = _project(tmp_path, "seen")
    stage_memory(seen, NEW, night_id="s1")
    record_session(seen, "claude")
    assert main(["schedule", "--project", str(scheduled), "--via", "cron"]) == 0
    assert MARKER in fake_tools.crontab.read_text(encoding="utf-8")
    return {"tools": fake_tools, "scheduled": scheduled, "seen": seen}


def _everything(world: dict) -> dict:
    dirs = user_dirs()
    return fingerprint(world["scheduled"], world["seen"], world["tools"].crontab, dirs.config, dirs.state, dirs.cache)


def _gone(world: dict) -> None:
    assert world["tools"].crontab.read_text(encoding="utf-8") == FOREIGN
    for project in (world["scheduled"], world["seen"]):
        assert not (project / PROJECT_DIR).exists()
    dirs = user_dirs()
    assert not dirs.config.exists() and not dirs.state.exists() and not dirs.cache.exists()


def test_dry_run_lists_everything_and_changes_nothing(world, capsys):
    capsys.readouterr()
    before = _everything(world)
    assert main(["uninstall", "--dry-run"]) == 0
    out = capsys.readouterr().out
    scheduled, seen = world["scheduled"], world["seen"]
    assert "remove the nightly cron entry" in out
    assert f"remove {user_dirs().schedule_file}" in out
    assert f"revert night n2 in {scheduled}" in out and f"revert night n1 in {scheduled}" in out
    assert out.index("night n2") < out.index("night n1")  # newest first
    assert f"remove {scheduled / PROJECT_DIR}" in out and f"remove {seen / PROJECT_DIR}" in out
    assert f"remove {user_dirs().state}" in out and f"remove {user_dirs().config}" in out
    assert "nothing was changed" in out
    assert differences(before, _everything(world)) == []


def test_yes_unschedules_reverts_and_removes_the_state(world, capsys):
    capsys.readouterr()
    assert main(["uninstall", "--yes"]) == 0
    out = capsys.readouterr().out
    assert (world["scheduled"] / "CLAUDE.md").read_bytes() == OLD  # both adoptions undone
    assert (world["seen"] / "CLAUDE.md").read_bytes() == OLD  # never adopted: untouched
    _gone(world)
    assert "removed the nightly cron entry" in out and "reverted night n2" in out and "reverted night n1" in out
    assert f"removed {world['seen'] / PROJECT_DIR}" in out and f"removed {user_dirs().state}" in out
    assert [c["argv"] for c in world["tools"].calls("crontab")][-1][:1] == ["-"]  # foreign line rewritten
    assert "claude plugin uninstall skillopt-sleep@skillopt-sleep" in out  # and how to remove the plugins
    assert "codex plugin remove skillopt-sleep@skillopt-sleep" in out


def test_keep_documents_leaves_the_adopted_rules(world, capsys):
    assert main(["uninstall", "--yes", "--keep-documents"]) == 0
    assert (world["scheduled"] / "CLAUDE.md").read_bytes() == NEWER
    _gone(world)
    assert "reverted" not in capsys.readouterr().out


def test_a_file_edited_after_adoption_is_never_reverted(world, capsys):
    edited = NEWER + b"my own line\r\n"
    (world["scheduled"] / "CLAUDE.md").write_bytes(edited)
    assert main(["uninstall", "--yes"]) == EXIT_CONFLICT
    out = capsys.readouterr().out
    assert (world["scheduled"] / "CLAUDE.md").read_bytes() == edited
    assert (world["scheduled"] / PROJECT_DIR / "adoptions.jsonl").exists()  # ledger and backups kept
    assert f"kept {world['scheduled'] / PROJECT_DIR}" in out and "edited after adoption" in out
    assert not (world["seen"] / PROJECT_DIR).exists()  # the rest is still removed
    assert world["tools"].crontab.read_text(encoding="utf-8") == FOREIGN
    assert not user_dirs().state.exists()


def test_a_running_night_keeps_its_project(world, capsys):
    with ProjectLock(project_dirs(world["seen"]).lock, "night", "s2", wait=0):
        assert main(["uninstall", "--yes", "--keep-documents"]) == EXIT_CONFLICT
    out = capsys.readouterr().out
    assert (world["seen"] / PROJECT_DIR / "staging").exists()
    assert f"kept {world['seen'] / PROJECT_DIR}" in out and "holds this project's lock" in out
    assert not (world["scheduled"] / PROJECT_DIR).exists()


def test_without_a_terminal_it_needs_yes(world, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("y\ny\n"))
    before = _everything(world)
    assert main(["uninstall"]) == EXIT_USAGE
    assert "--yes" in capsys.readouterr().err
    assert differences(before, _everything(world)) == []


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    "answers,reverted,removed",
    [("y\ny\n", True, True), ("n\ny\n", False, True), ("y\nn\n", False, False), ("\n\n", False, False)],
)
def test_on_a_terminal_it_asks(world, capsys, monkeypatch, answers, reverted, removed):
    monkeypatch.setattr("sys.stdin", _Terminal(answers))
    before = _everything(world)
    assert main(["uninstall"]) == 0
    out = capsys.readouterr().out
    assert "Revert the 2 adopted proposal(s)" in out and "[y/N]" in out
    assert (world["scheduled"] / "CLAUDE.md").read_bytes() == (OLD if reverted else NEWER)
    if removed:
        _gone(world)
    else:
        assert "nothing was changed" in out
        assert differences(before, _everything(world)) == []


def test_systemd_entry_and_json(fake_tools: FakeTools, tmp_path: Path, capsys):
    project = _project(tmp_path, "proj")
    assert main(["schedule", "--project", str(project), "--via", "systemd"]) == 0
    assert [p for p in fake_tools.unit_dir.iterdir()]
    capsys.readouterr()
    assert main(["uninstall", "--dry-run", "--json"]) == 0
    assert "remove the nightly systemd entry" in json.loads(capsys.readouterr().out)["would"]
    assert main(["uninstall", "--yes", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert "removed the nightly systemd entry" in done["done"] and done["kept"] == []
    assert not any(fake_tools.unit_dir.iterdir())
    assert not user_dirs().config.exists()


def test_a_named_project_and_nothing_else(tmp_path: Path, capsys):
    project = _project(tmp_path, "proj")
    stage_memory(project, NEW, night_id="m1")
    adopt(project, "m1")
    assert main(["uninstall", "--yes", "--project", str(project)]) == 0
    assert (project / "CLAUDE.md").read_bytes() == OLD and not (project / PROJECT_DIR).exists()
    capsys.readouterr()
    assert main(["uninstall", "--yes"]) == 0
    assert "nothing to uninstall" in capsys.readouterr().out
    assert os.listdir(project) == ["CLAUDE.md"]


def test_temp_leftovers_go_but_a_live_sandbox_and_others_files_stay(tmp_path: Path, private_temp: Path, capsys):
    temp = private_temp
    log = temp / "skillopt-sleep-night-abc.log"
    log.write_text("night output\n", encoding="utf-8")
    dead, live = temp / "skillopt-sleep-cli-dead", temp / "skillopt-sleep-cli-live"
    for sandbox in (dead, live):
        (sandbox / "files").mkdir(parents=True)
    day_ago = time.time() - 86400
    os.utime(dead, (day_ago, day_ago))
    other = temp / "skillopt-sleep-demo-x"  # a demo's output is the person's
    other.mkdir()
    link = temp / "skillopt-sleep-night-link.log"
    link.symlink_to(tmp_path / "elsewhere.log")
    assert main(["uninstall", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"remove {log}" in out and f"remove {dead}" in out
    assert str(live) not in out and str(other) not in out and str(link) not in out
    assert main(["uninstall", "--yes"]) == 0
    assert sorted(p.name for p in temp.iterdir()) == sorted([live.name, other.name, link.name])
