"""Every installed entry runs a night on a fresh machine: the crontab line through ``/bin/sh -c``,
the systemd service's ExecStart and the launchd agent's ProgramArguments, each exec'd as its OS
would (tests/support/os_entries.py) with only the environment that OS gives a job, on a state
directory that `schedule` just made or that is gone entirely. The night's log and result must
land where `status` looks. The night is the offline simulator on the bundled demo transcripts."""

from __future__ import annotations

import os
import plistlib
import shutil
from pathlib import Path

import pytest

from skillopt_sleep.cli import main
from skillopt_sleep.commands.demo import build_demo_home
from skillopt_sleep.commands.schedule import schedule, unschedule
from skillopt_sleep.paths import project_dirs, user_dirs
from skillopt_sleep.scheduler.base import MARKER
from skillopt_sleep.scheduler.launchd import LABEL
from skillopt_sleep.scheduler.nightly import read_last_run
from skillopt_sleep.scheduler.systemd import UNIT
from tests.support.os_entries import Ran, run_cron_line, run_launchd_plist, run_systemd_service
from tests.support.scheduler_tools import FakeTools

# each test runs a whole night from an installed entry in a bare shell: slow, as the scenarios are
pytestmark = [
    pytest.mark.skipif(os.name != "posix" or not Path("/bin/sh").exists(), reason="needs /bin/sh"),
    pytest.mark.slow,
]


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    _, claude, project = build_demo_home(tmp_path / "demo")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))  # recorded by `schedule`, not needed by the job
    return project


def _fresh_state(state_gone: bool) -> None:
    if state_gone:
        shutil.rmtree(user_dirs().state, ignore_errors=True)
        assert not user_dirs().state.exists()


def _installed_cron_line(tools: FakeTools) -> str:
    lines = tools.table().splitlines()
    (line,) = [lines[i + 1] for i, text in enumerate(lines) if MARKER in text]
    return line


def _assert_the_night_ran_where_status_looks(ran: Ran, project: Path, capsys) -> None:
    assert ran.started, ran.why_not
    assert ran.returncode == 0, ran.output
    last = read_last_run()
    assert last is not None, f"no last-run.json under {user_dirs().scheduled_runs}"
    assert last["finished"] and [r["ok"] for r in last["projects"]] == [True]
    log = Path(last["log"])
    assert log.parent == user_dirs().scheduled_runs / "logs" and log.is_file()
    assert f"== {project}" in log.read_text(encoding="utf-8")
    assert list(project_dirs(project).staging.iterdir()), "the night staged its proposal"
    capsys.readouterr()
    assert main(["status", "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert "last scheduled night:" in out and "1 ok, 0 failed" in out and str(log) in out


@pytest.mark.parametrize("state_gone", [False, True], ids=["as-scheduled", "state-dir-gone"])
def test_the_installed_crontab_line_runs_a_night(fake_tools: FakeTools, demo: Path, state_gone: bool, capsys) -> None:
    assert schedule(projects=[str(demo)], via="cron", platform="linux") == 0
    _fresh_state(state_gone)
    ran = run_cron_line(_installed_cron_line(fake_tools), fake_tools.home)
    _assert_the_night_ran_where_status_looks(ran, demo, capsys)
    assert ran.output == ""  # all of it went to the log: cron mails nothing


@pytest.mark.parametrize("state_gone", [False, True], ids=["as-scheduled", "state-dir-gone"])
def test_the_installed_systemd_service_runs_a_night(
    fake_tools: FakeTools, demo: Path, state_gone: bool, capsys
) -> None:
    assert schedule(projects=[str(demo)], via="systemd", platform="linux") == 0
    _fresh_state(state_gone)
    service = (fake_tools.unit_dir / f"{UNIT}.service").read_text(encoding="utf-8")
    ran = run_systemd_service(service, fake_tools.home)
    _assert_the_night_ran_where_status_looks(ran, demo, capsys)


@pytest.mark.parametrize("state_gone", [False, True], ids=["as-scheduled", "state-dir-gone"])
def test_the_installed_launch_agent_runs_a_night(fake_tools: FakeTools, demo: Path, state_gone: bool, capsys) -> None:
    assert schedule(projects=[str(demo)], platform="darwin") == 0
    _fresh_state(state_gone)
    plist = (fake_tools.agents_dir / f"{LABEL}.plist").read_bytes()
    assert plistlib.loads(plist)["Label"] == LABEL
    ran = run_launchd_plist(plist, fake_tools.home)
    _assert_the_night_ran_where_status_looks(ran, demo, capsys)


def test_an_entry_from_an_older_version_is_replaced(fake_tools: FakeTools, demo: Path) -> None:
    """Entries that ran the interpreter directly (and made the OS open the log) are still ours:
    `schedule` replaces them, `unschedule` removes them."""
    import sys

    from skillopt_sleep.scheduler.base import MARKER_NOTE

    old_log = user_dirs().scheduled_runs / "scheduler-output.log"
    old_argv = [sys.executable, "-m", "skillopt_sleep", "nightly", "--schedule-file", str(user_dirs().schedule_file)]
    fake_tools.crontab.write_text(
        f"0 1 * * * /bin/true\n# {MARKER_NOTE}\n30 2 * * * {' '.join(old_argv)} >>{old_log} 2>&1\n", encoding="utf-8"
    )
    assert schedule(projects=[str(demo)], via="cron", platform="linux") == 0
    table = fake_tools.table()
    assert table.count(MARKER) == 1 and table.startswith("0 1 * * * /bin/true\n")
    assert _installed_cron_line(fake_tools).split(None, 5)[5].startswith("mkdir -p ")

    fake_tools.agents_dir.mkdir(parents=True)
    agent = fake_tools.agents_dir / f"{LABEL}.plist"
    agent.write_bytes(
        plistlib.dumps(
            {
                "Label": LABEL,
                "ProgramArguments": old_argv,
                "StandardOutPath": str(old_log),
                "StandardErrorPath": str(old_log),
            }
        )
    )
    assert schedule(projects=[str(demo)], via="launchd", platform="darwin") == 0
    data = plistlib.loads(agent.read_bytes())
    assert data["ProgramArguments"][:2] == ["/bin/sh", "-c"] and "StandardOutPath" not in data
    agent.write_bytes(plistlib.dumps({"Label": LABEL, "ProgramArguments": old_argv}))
    assert unschedule(platform="darwin") == 0 and not agent.exists()
