"""What a newcomer hits in the first hour, each once a crash or a silent surprise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from skillopt_sleep.cli import main
from skillopt_sleep.commands import status as status_cmd
from skillopt_sleep.commands.demo import run_demo
from skillopt_sleep.config import read_config_file
from skillopt_sleep.errors import EXIT_CONFIG, EXIT_USAGE, UserError
from skillopt_sleep.mining import load_tasks
from skillopt_sleep.types import parse_time


def test_a_reader_closing_the_pipe_ends_the_command_quietly(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    env = dict(os.environ, SKILLOPT_SLEEP_HOME=str(home))
    for _ in range(3):  # the race is in our favour some of the time; each try must be clean
        child = subprocess.Popen(
            [sys.executable, "-m", "skillopt_sleep", "status", "--project", str(project)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert child.stdout is not None and child.stderr is not None
        child.stdout.close()  # like `| head -0`: the reader is gone before anything is written
        err = child.stderr.read().decode()
        assert child.wait(timeout=120) == 141, err
        assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_run_accepts_since_all_like_harvest(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    empty = tmp_path / "claude"
    (empty / "projects").mkdir(parents=True)
    code = main(
        [
            "dry-run",
            "--project",
            str(project),
            "--since",
            "all",
            "--claude-home",
            str(empty),
            "--source",
            "claude",
            "--quiet",
        ]
    )
    assert code == 0


@pytest.mark.parametrize("verb", ["dry-run", "harvest"])
def test_a_since_outside_utc_years_is_a_usage_error(
    verb: str, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    assert parse_time("0001-01-01T00:00:00+01:00") is None
    assert parse_time("9999-12-31T23:00:00-05:00") is None
    code = main([verb, "--project", str(project), "--since", "0001-01-01T00:00:00+01:00", "--quiet"])
    assert code == EXIT_USAGE
    assert "--since" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--project", "{missing}", "--json"],
        ["dry-run", "--project", "{missing}", "--json"],
        ["status", "--project", "{missing}", "--json"],
        ["harvest", "--project", "{missing}", "--json"],
        ["adopt", "--project", "{missing}", "--json"],
        ["run", "--project", "{proj}", "--json", "--tasks-file", "{missing}"],
    ],
)
def test_every_json_verb_prints_one_object_on_failure(
    argv: list[str], home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "proj").mkdir()
    argv = [a.format(missing=tmp_path / "nope", proj=tmp_path / "proj") for a in argv]
    code = main(argv)
    assert code != 0
    out = capsys.readouterr().out
    data = json.loads(out)  # exactly one object
    assert data["ok"] is False and data["code"] == code and data["error"]


def test_a_wrong_tasks_format_is_named(tmp_path: Path) -> None:
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps({"format": "skillopt_sleep.tasks.v0", "tasks": []}), encoding="utf-8")
    with pytest.raises(UserError) as info:
        load_tasks(path)
    assert info.value.code == EXIT_CONFIG
    assert "missing" not in info.value.message
    assert "skillopt_sleep.tasks.v0" in info.value.message and "skillopt_sleep.tasks.v1" in info.value.message


def test_config_reads_with_tomli_where_tomllib_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tomllib

    path = tmp_path / "config.toml"
    path.write_text('backend = "sim"\nk = 3\n', encoding="utf-8")
    monkeypatch.setattr(sys, "version_info", (3, 10, 14, "final", 0))
    monkeypatch.setitem(sys.modules, "tomllib", None)  # `import tomllib` fails, as on 3.10
    monkeypatch.setitem(sys.modules, "tomli", types.SimpleNamespace(load=tomllib.load, loads=tomllib.loads))
    assert read_config_file(path) == {"backend": "sim", "k": 3}


def test_status_after_demo_counts_the_demo_night(tmp_path: Path, home: Path) -> None:
    data = run_demo(tmp_path / "demo", seed=1, quiet=True)
    project = tmp_path / "demo" / "acme-invoices"
    status = status_cmd.collect_status(project)  # the user's own state dir, not the demo's
    assert status["latest_proposal"]["night_id"] == data["night_id"]
    assert status["n_nights"] == 1
    assert status["nights"][0]["night_id"] == data["night_id"]
    text = status_cmd.format_status(status)
    assert "no nights yet" not in text and "history kept elsewhere" in text


def test_a_wrong_claude_home_is_named_not_silent(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    missing = tmp_path / "no-such-claude"
    assert main(["harvest", "--project", str(project), "--claude-home", str(missing), "--source", "claude"]) == 0
    err = capsys.readouterr().err
    assert f"--claude-home {missing} does not exist" in err
    empty = tmp_path / "empty-claude"
    empty.mkdir()
    assert (
        main(
            [
                "dry-run",
                "--project",
                str(project),
                "--claude-home",
                str(empty),
                "--source",
                "claude",
                "--backend",
                "sim",
                "--json",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert any(f"--claude-home {empty} holds no claude transcripts" in n for n in report["notes"])
    assert any(n.startswith(f"read {empty} (0 file(s))") for n in report["notes"])


def test_a_capped_demo_stays_within_its_calls_and_says_so(tmp_path: Path, home: Path) -> None:
    data = run_demo(tmp_path / "demo", seed=1, quiet=True, max_calls=120)
    assert data["status"] != "budget" and 0 < data["calls_total"] <= 120
    assert any("calls of 120" in note for note in data["notes"])
    assert all(not item["ledger"] for item in data["rejected_edits"] if item["reasons"][0].startswith("undecided"))
    with pytest.raises(UserError, match="--max-calls"):
        run_demo(tmp_path / "demo2", quiet=True, max_calls=0)
    assert not (tmp_path / "demo2").exists(), "nothing is built for a refused cap"
