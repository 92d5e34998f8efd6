"""The scheduled night: every registered project in turn with its recorded config, one failure
never stopping the others, a log per night (the last 30 kept), the env file re-checked."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from skillopt_sleep.cli import main
from skillopt_sleep.commands.demo import build_demo_home
from skillopt_sleep.paths import project_dirs, user_dirs
from skillopt_sleep.scheduler.nightly import KEEP_LOGS, read_last_run, run_scheduled
from skillopt_sleep.scheduler.schedule_file import load_schedule
from tests.support.scheduler_tools import FakeTools

KEY = "sk-ant-api03-" + "Qw7" * 30 + "BB"


def _logs() -> list[Path]:
    return sorted((user_dirs().scheduled_runs / "logs").glob("night-*.log"))


def test_two_projects_one_fails_the_other_still_runs(
    cron: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    _, claude, demo_project = build_demo_home(tmp_path / "demo")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    doomed = tmp_path / "doomed"
    doomed.mkdir()
    assert main(["schedule", "--project", str(doomed), "--project", str(demo_project), "--backend", "sim:seed=3"]) == 0
    shutil.rmtree(doomed)  # its night will fail: the directory is gone
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")  # the job must not need the shell's environment
    code = main(["nightly"])
    assert code == 2
    assert "scheduled night done: 1 ok, 1 failed" in capsys.readouterr().out
    last = read_last_run()
    assert last is not None and last["finished"]
    results = {r["project"]: r for r in last["projects"]}
    assert list(results) == [str(doomed), str(demo_project)]
    assert results[str(doomed)]["ok"] is False and "not a directory" in results[str(doomed)]["message"]
    assert results[str(demo_project)]["ok"] is True and results[str(demo_project)]["night_id"]
    assert list(project_dirs(demo_project).staging.iterdir()), "the healthy project's night staged a proposal"
    (log,) = _logs()
    text = log.read_text()
    assert f"== {doomed}" in text and f"== {demo_project}" in text and "1 ok, 1 failed" in text
    assert last["log"] == str(log)


def test_each_project_runs_with_its_recorded_config_and_the_env_file(
    cron: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for p in (a, b):
        (p / ".skillopt-sleep").mkdir(parents=True)
    (a / ".skillopt-sleep" / "config.toml").write_text("k = 2\n")
    (b / ".skillopt-sleep" / "config.toml").write_text("k = 7\nmax_edits = 1\n")
    env = tmp_path / "keys.env"
    env.write_text(f"export ANTHROPIC_API_KEY='{KEY}'\n# comment\nEXTRA=1\n")
    env.chmod(0o600)
    assert main(["schedule", "--project", str(a), "--project", str(b), "--env-file", str(env)]) == 0
    (b / ".skillopt-sleep" / "config.toml").write_text("k = 99\n")  # recorded values win
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    seen = []

    def fake_night(entry, log):
        from skillopt_sleep.scheduler.nightly import config_from_record

        config = config_from_record(entry.config)
        seen.append((entry.project, config.learning.k, config.learning.max_edits, os.environ.get("ANTHROPIC_API_KEY")))
        log(f"night with api key {os.environ.get('ANTHROPIC_API_KEY')}\x1b[31m")
        return {"night_id": "n", "status": "ok"}

    assert run_scheduled(run_project=fake_night) == 0
    assert seen == [(str(a), 2, 4, KEY), (str(b), 7, 1, KEY)]
    text = _logs()[0].read_text()
    assert KEY not in text and "\x1b" not in text  # the log is redacted and free of control characters


def test_the_job_refuses_an_env_file_that_became_readable(cron: FakeTools, tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    env = tmp_path / "keys.env"
    env.write_text("X=1\n")
    env.chmod(0o600)
    assert main(["schedule", "--project", str(project), "--env-file", str(env)]) == 0
    env.chmod(0o644)
    ran = []
    assert run_scheduled(run_project=lambda entry, log: ran.append(entry) or {}) == 3
    assert ran == []
    last = read_last_run()
    assert "chmod 600" in last["error"] and last["finished"]


def test_an_unexpected_crash_in_one_project_is_contained(cron: FakeTools, tmp_path: Path) -> None:
    projects = [tmp_path / n for n in ("x", "y", "z")]
    for p in projects:
        p.mkdir()
    assert main(["schedule", *sum((["--project", str(p)] for p in projects), [])]) == 0

    def night(entry, log):
        if entry.project.endswith("y"):
            raise RuntimeError("boom")
        return {"status": "ok"}

    assert run_scheduled(run_project=night) == 1
    assert [r["ok"] for r in read_last_run()["projects"]] == [True, False, True]
    assert "RuntimeError: boom" in _logs()[0].read_text()


def test_logs_are_kept_for_the_last_30_nights(cron: FakeTools, tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    assert main(["schedule", "--project", str(project)]) == 0
    logs = user_dirs().scheduled_runs / "logs"
    logs.mkdir(parents=True)
    for day in range(1, 36):
        (logs / f"night-202001{day:02d}T030000Z.log").write_text("old\n")
    assert run_scheduled(run_project=lambda entry, log: {}) == 0
    kept = _logs()
    assert len(kept) == KEEP_LOGS
    assert kept[-1].read_text() != "old\n"  # tonight's log survives
    assert kept[0].name == "night-20200107T030000Z.log"  # the oldest went first


def test_nightly_without_a_schedule_says_so(capsys) -> None:
    assert main(["nightly"]) == 3
    assert "nothing is scheduled" in capsys.readouterr().err


def test_schedule_file_is_read_from_the_recorded_locations(
    cron: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    assert main(["schedule", "--project", str(project)]) == 0
    schedule_file = user_dirs().schedule_file
    home = os.environ["SKILLOPT_SLEEP_HOME"]
    assert load_schedule(schedule_file).locations["SKILLOPT_SLEEP_HOME"] == home
    monkeypatch.delenv("SKILLOPT_SLEEP_HOME")  # as under cron: no such variable
    assert main(["nightly", "--schedule-file", str(schedule_file)]) == 0
    assert json.loads((Path(home) / "state" / "scheduled" / "last-run.json").read_text())["projects"][0]["ok"]


def test_a_scheduled_night_continues_an_interrupted_one(tmp_path: Path) -> None:
    """A night stopped midway (here by its token budget) left its finished calls behind; the
    scheduled night takes it up under the same id and does not pay for them again."""

    from skillopt_sleep.store.call_journal import interrupted_nights
    from skillopt_sleep.config import Config, settings_of
    from skillopt_sleep.night import NightOptions, NightStopped, run_night
    from skillopt_sleep.commands.schedule import run_project_night
    from skillopt_sleep.scheduler.schedule_file import ProjectEntry

    _, claude, project = build_demo_home(tmp_path)
    config = Config(backend="sim:seed=2", agent="claude", source="claude", claude_home=str(claude))
    with pytest.raises(NightStopped):
        run_night(NightOptions(project=project, mode="run", config=config.replace(max_tokens=40_000)))
    [interrupted] = interrupted_nights(project)
    lines: list[str] = []
    result = run_project_night(ProjectEntry(str(project), settings_of(config)), lines.append)
    assert result["night_id"] == interrupted and result["status"] in ("staged", "no-change")
    assert any(f"resuming the interrupted night {interrupted}" in line for line in lines)
    assert any("call(s) the interrupted night had finished are not made again" in line for line in lines)
    assert interrupted_nights(project) == []
