"""The command line as a whole (cli.py): help and verbs, one clear line for a bad backend, config
or tasks file, ``run --json`` then ``status`` and ``adopt``, exit 4 on a provider outage, a verb
module that is missing or cannot import failing loudly, and a project cloned with planted,
absurdly nested JSON under .skillopt-sleep/ (manifest, report, journal, adoption ledger, lock
holder) getting clear outcomes from every verb that reads it, never an internal error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt_sleep.cli import main

from tests.support.tasks import make_tasks, write_tasks_file


def run_cli(*args: str, env_home: Path) -> subprocess.CompletedProcess[str]:
    import os

    env = dict(os.environ, SKILLOPT_SLEEP_HOME=str(env_home))
    return subprocess.run(
        [sys.executable, "-m", "skillopt_sleep", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_help_lists_every_verb(home: Path) -> None:
    out = run_cli("--help", env_home=home)
    assert out.returncode == 0
    for verb in ("run", "dry-run", "status", "adopt", "revert", "harvest", "demo"):
        assert verb in out.stdout
    assert "exit codes" in out.stdout


def test_no_verb_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage" in capsys.readouterr().out


def test_a_verb_rejects_another_verbs_flag(home: Path) -> None:
    out = run_cli("status", "--tasks-file", "x.json", env_home=home)
    assert out.returncode == 2 and "unrecognized arguments" in out.stderr


def test_bad_backend_is_one_clear_line(tmp_path: Path, home: Path) -> None:
    tasks = write_tasks_file(tmp_path / "t.json", make_tasks())
    out = run_cli("dry-run", "--project", str(tmp_path), "--tasks-file", str(tasks), "--backend", "nope", env_home=home)
    assert out.returncode == 2
    assert "--backend nope: unknown backend (choose from auto, sim," in out.stderr and "Traceback" not in out.stderr


def test_broken_config_is_reported_with_its_file(tmp_path: Path, home: Path) -> None:
    (tmp_path / ".skillopt-sleep").mkdir()
    (tmp_path / ".skillopt-sleep" / "config.toml").write_text("k = [unclosed\n")
    tasks = write_tasks_file(tmp_path / "t.json", make_tasks())
    out = run_cli("dry-run", "--project", str(tmp_path), "--tasks-file", str(tasks), env_home=home)
    assert out.returncode == 3
    assert "config.toml" in out.stderr and "Traceback" not in out.stderr


def test_invalid_tasks_file_names_the_task(tmp_path: Path, home: Path) -> None:
    bad = {
        "format": "skillopt_sleep.tasks.v1",
        "reviewed": True,
        "tasks": [{"id": "t1", "intent": "x", "judge": {"kind": "rule", "checks": [{"op": "shout", "arg": "x"}]}}],
    }
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    out = run_cli("dry-run", "--project", str(tmp_path), "--tasks-file", str(path), env_home=home)
    assert out.returncode == 3
    assert "t1" in out.stderr and "shout" in out.stderr


def test_run_json_then_status_then_adopt(tmp_path: Path, home: Path) -> None:
    tasks = write_tasks_file(tmp_path / "t.json", make_tasks(per_kind=5, test=True))
    out = run_cli(
        "run",
        "--project",
        str(tmp_path),
        "--tasks-file",
        str(tasks),
        "--json",
        "--quiet",
        "--backend",
        "sim:correct=1,harmful=0,seed=2",
        env_home=home,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["accepted"] and data["staging_dir"]
    assert "test_baseline" in data and "test_candidate" in data
    status = run_cli("status", "--project", str(tmp_path), "--json", env_home=home)
    assert status.returncode == 0 and data["night_id"] in status.stdout
    adopted = run_cli("adopt", "--project", str(tmp_path), env_home=home)
    assert adopted.returncode == 0, adopted.stderr
    again = run_cli("adopt", "--project", str(tmp_path), env_home=home)
    assert again.returncode == 6


def test_provider_outage_exits_4_with_one_line(tmp_path: Path, home: Path) -> None:
    (tmp_path / ".skillopt-sleep").mkdir()
    (tmp_path / ".skillopt-sleep" / "config.toml").write_text("retries = 1\n")
    tasks = write_tasks_file(tmp_path / "t.json", make_tasks())
    out = run_cli(
        "run",
        "--project",
        str(tmp_path),
        "--tasks-file",
        str(tasks),
        "--quiet",
        "--backend",
        "sim:down=1",
        env_home=home,
    )
    assert out.returncode == 4
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "nothing staged" in lines[0]
    assert not (tmp_path / ".skillopt-sleep" / "staging").exists()


@pytest.mark.parametrize("as_json", [False, True])
def test_a_missing_verb_module_fails_loudly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    """A broken install (a lost commands/<verb>.py) is one clear line and exit 1 for every verb,
    never a CLI that quietly lacks the verb."""
    from skillopt_sleep import cli

    monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, "sweep"))
    assert main(["status", *(["--json"] if as_json else [])]) == 1
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "the 'sweep' command" in err and "commands/sweep.py is missing" in err
    assert "Traceback" not in err
    assert (
        json.loads(out) == {"ok": False, "error": err.strip().removeprefix("skillopt-sleep: "), "code": 1}
        if as_json
        else out == ""
    )


def test_a_verb_whose_dependency_is_missing_fails_loudly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib

    from skillopt_sleep import cli

    real = importlib.import_module

    def import_module(name: str, *args, **kwargs):
        if name == "skillopt_sleep.commands.review":
            raise ModuleNotFoundError("No module named 'tomlkit'", name="tomlkit")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(cli.importlib, "import_module", import_module)
    assert main(["--help"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the 'review' command: it cannot be loaded (No module named 'tomlkit')" in err


# -- planted deep JSON ---------------------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def planted(tmp_path):
    project = tmp_path / "cloned"
    state = project / ".skillopt-sleep"
    night = state / "staging" / "n1"
    night.mkdir(parents=True)
    for name in ("manifest.json", "report.json"):
        (night / name).write_text(DEEP)
    (state / "journal.json").write_text(DEEP)
    (state / "adoptions.jsonl").write_text(DEEP + "\n")
    (state / "night.lock.holder.json").write_text(DEEP)
    (project / "CLAUDE.md").write_text("# Rules\n")
    return project


@pytest.mark.parametrize("verb", ["status", "adopt", "revert", "review", "notice"])
def test_verbs_reading_planted_deep_json_fail_clearly(planted, verb, capsys):
    code = main([verb, "--project", str(planted)])
    err = capsys.readouterr().err
    assert "internal error" not in err
    assert code in (0, 3, 6)
    assert (planted / "CLAUDE.md").read_text() == "# Rules\n"
