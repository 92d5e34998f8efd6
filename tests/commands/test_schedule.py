"""``schedule`` / ``unschedule`` through the CLI, with fake crontab / systemctl on PATH.

``schedule --print`` changes nothing, so it shows the entry even when the job would not find what it
needs (no agent CLI, no key, a loose env file): the finding is a warning on stderr. The
``schedule`` function on each platform: switching mechanisms removes the old entry, and ``--print``
changes nothing on any OS."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from skillopt_sleep.cli import main
from skillopt_sleep.commands.schedule import schedule
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler.base import MARKER
from skillopt_sleep.scheduler.systemd import UNIT
from tests.support.scheduler_tools import FakeTools

FOREIGN = "# my backups\n15 1 * * * /usr/local/bin/backup --all\nMAILTO=me@example.com\n"
ANTHROPIC_KEY = "sk-ant-api03-" + "Zx9" * 30 + "AA"


@pytest.fixture
def cron(fake_tools: FakeTools, monkeypatch: pytest.MonkeyPatch) -> FakeTools:
    """Linux without a systemd user manager: cron is the default."""
    monkeypatch.setenv("SKILLOPT_FAKE_NO_USER_MANAGER", "1")
    fake_tools.crontab.write_text(FOREIGN, encoding="utf-8")
    return fake_tools


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


def _schedule_file() -> Path:
    return user_dirs().schedule_file


def _ours(table: str) -> list[str]:
    lines = table.splitlines()
    return [lines[i + 1] for i, line in enumerate(lines) if MARKER in line]


def test_schedule_installs_one_cron_entry_and_keeps_foreign_lines(cron: FakeTools, project: Path, capsys) -> None:
    assert main(["schedule", "--project", str(project), "--at", "02:30"]) == 0
    table = cron.table()
    assert table.startswith(FOREIGN)
    (line,) = _ours(table)
    assert line.startswith("30 2 * * * ")
    assert f"{sys.executable} -m skillopt_sleep nightly --schedule-file {_schedule_file()}" in line
    recorded = json.loads(_schedule_file().read_text())
    assert recorded["via"] == "cron" and recorded["at"] == "02:30"
    assert [p["project"] for p in recorded["projects"]] == [str(project)]
    assert stat.S_IMODE(_schedule_file().stat().st_mode) == 0o600
    assert "nightly at 02:30 via cron" in capsys.readouterr().out


def test_rerunning_schedule_updates_instead_of_duplicating(cron: FakeTools, project: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    assert main(["schedule", "--project", str(project), "--at", "02:30"]) == 0
    assert main(["schedule", "--project", str(other), "--at", "04:05"]) == 0
    (line,) = _ours(cron.table())
    assert line.startswith("5 4 * * * ")
    recorded = json.loads(_schedule_file().read_text())
    assert [p["project"] for p in recorded["projects"]] == [str(project), str(other)]
    assert main(["schedule", "--project", str(project)]) == 0  # keeps the time, no duplicate
    assert len(_ours(cron.table())) == 1 and _ours(cron.table())[0].startswith("5 4 ")
    assert len(json.loads(_schedule_file().read_text())["projects"]) == 2


def test_print_shows_the_entry_and_changes_nothing(cron: FakeTools, project: Path, capsys) -> None:
    assert main(["schedule", "--project", str(project), "--at", "01:15", "--print"]) == 0
    out = capsys.readouterr().out
    assert "15 1 * * * " in out and MARKER in out and str(project) in out
    assert cron.table() == FOREIGN
    assert not _schedule_file().exists()
    assert not user_dirs().state.exists() and not user_dirs().config.exists()
    assert [c["argv"] for c in cron.calls("crontab")] == []


def test_unschedule_removes_only_ours(cron: FakeTools, project: Path) -> None:
    assert main(["schedule", "--project", str(project)]) == 0
    assert main(["unschedule"]) == 0
    assert cron.table() == FOREIGN
    assert not _schedule_file().exists()
    assert main(["unschedule"]) == 0  # nothing left: still fine, foreign lines untouched
    assert cron.table() == FOREIGN


def test_unschedule_of_the_only_entry_removes_the_table(cron: FakeTools, project: Path) -> None:
    cron.crontab.unlink()
    assert main(["schedule", "--project", str(project)]) == 0
    assert main(["unschedule"]) == 0
    assert not cron.crontab.exists()
    assert cron.calls("crontab")[-1]["argv"] == ["-r"]


def test_unschedule_one_project_keeps_the_others(cron: FakeTools, project: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    assert main(["schedule", "--project", str(project), "--project", str(other)]) == 0
    assert main(["unschedule", "--project", str(project)]) == 0
    assert len(_ours(cron.table())) == 1
    assert [p["project"] for p in json.loads(_schedule_file().read_text())["projects"]] == [str(other)]
    assert main(["unschedule", "--project", str(other)]) == 0
    assert _ours(cron.table()) == [] and cron.table() == FOREIGN


def test_a_foreign_line_after_a_lookalike_marker_is_kept(cron: FakeTools, project: Path) -> None:
    lookalike = f"# {MARKER} is mentioned in my notes\n0 5 * * * /usr/bin/true\n"
    cron.crontab.write_text(FOREIGN + lookalike, encoding="utf-8")
    assert main(["schedule", "--project", str(project)]) == 0
    assert main(["unschedule"]) == 0
    assert cron.table() == FOREIGN + lookalike


@pytest.mark.parametrize(
    "argv",
    [
        ["--at", "03:00\n* * * * * rm -rf ~"],
        ["--model", "opus\n0 0 * * * evil"],
        ["--backend", "sim\r"],
        ["--env-file", "/tmp/keys\x1b[2J"],
    ],
)
def test_control_characters_are_refused(cron: FakeTools, project: Path, argv: list[str], capsys) -> None:
    assert main(["schedule", "--project", str(project), *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "control character" in err
    assert cron.table() == FOREIGN and not _schedule_file().exists()


def test_a_project_path_with_a_newline_is_refused(cron: FakeTools, tmp_path: Path, capsys) -> None:
    evil = tmp_path / "evil\n0 0 * * * touch pwned"
    evil.mkdir()
    assert main(["schedule", "--project", str(evil)]) == 2
    assert "control character" in capsys.readouterr().err
    assert cron.table() == FOREIGN and not _schedule_file().exists()


def test_a_config_value_with_a_control_character_is_refused(cron: FakeTools, project: Path) -> None:
    (project / ".skillopt-sleep").mkdir()
    (project / ".skillopt-sleep" / "config.toml").write_text('skill_name = "a\\u0007b"\n')
    assert main(["schedule", "--project", str(project)]) == 2
    assert cron.table() == FOREIGN and not _schedule_file().exists()


def _env_file(tmp_path: Path, mode: int, body: str = f"ANTHROPIC_API_KEY={ANTHROPIC_KEY}\n") -> Path:
    path = tmp_path / "keys.env"
    path.write_text(body, encoding="utf-8")
    os.chmod(path, mode)
    return path


def test_sdk_backend_needs_the_key_in_an_env_file(
    cron: FakeTools, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    assert main(["schedule", "--project", str(project), "--backend", "anthropic"]) == 3
    err = capsys.readouterr().err
    assert "ANTHROPIC_API_KEY" in err and "--env-file" in err and "does not see your shell" in err
    assert ANTHROPIC_KEY not in err
    assert cron.table() == FOREIGN and not _schedule_file().exists()


def test_env_file_must_be_private(cron: FakeTools, project: Path, tmp_path: Path, capsys) -> None:
    loose = _env_file(tmp_path, 0o644)
    assert main(["schedule", "--project", str(project), "--backend", "anthropic", "--env-file", str(loose)]) == 3
    err = capsys.readouterr().err
    assert "0644" in err and "chmod 600" in err and ANTHROPIC_KEY not in err
    assert cron.table() == FOREIGN and not _schedule_file().exists()
    os.chmod(loose, 0o600)
    assert main(["schedule", "--project", str(project), "--backend", "anthropic", "--env-file", str(loose)]) == 0


def test_env_file_without_the_needed_key_is_refused(cron: FakeTools, project: Path, tmp_path: Path, capsys) -> None:
    env = _env_file(tmp_path, 0o600, "OPENAI_API_KEY=sk-proj-abc\n")
    assert main(["schedule", "--project", str(project), "--backend", "anthropic", "--env-file", str(env)]) == 3
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_no_secret_reaches_any_written_artifact(
    cron: FakeTools, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    env = _env_file(tmp_path, 0o600)
    assert (
        main(
            [
                "schedule",
                "--project",
                str(project),
                "--backend",
                "anthropic",
                "--model",
                "claude-x",
                "--env-file",
                str(env),
            ]
        )
        == 0
    )
    assert main(["status", "--project", str(project)]) == 0
    artifacts = cron.written_files() + [_schedule_file()] + [p for p in user_dirs().config.rglob("*") if p.is_file()]
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in artifacts]
    texts += [json.dumps(c) for c in cron.calls()]
    assert texts and all(ANTHROPIC_KEY not in t and "Zx9Zx9" not in t for t in texts)
    recorded = json.loads(_schedule_file().read_text())
    assert recorded["env_file"] == str(env)
    assert recorded["projects"][0]["config"]["backend"] == "anthropic"
    assert recorded["projects"][0]["config"]["model"] == "claude-x"


def test_a_key_in_the_project_config_is_refused(cron: FakeTools, project: Path, tmp_path: Path, capsys) -> None:
    (project / ".skillopt-sleep").mkdir()
    (project / ".skillopt-sleep" / "config.toml").write_text(
        f'backend = "anthropic"\n[backend_options.anthropic]\napi_key = "{ANTHROPIC_KEY}"\n'
    )
    env = _env_file(tmp_path, 0o600)
    assert main(["schedule", "--project", str(project), "--env-file", str(env)]) == 3
    err = capsys.readouterr().err
    assert "credential" in err and ANTHROPIC_KEY not in err
    assert cron.table() == FOREIGN and not _schedule_file().exists()


def test_the_full_effective_config_is_recorded(cron: FakeTools, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / ".skillopt-sleep").mkdir()
    (project / ".skillopt-sleep" / "config.toml").write_text(
        'k = 6\nmax_cost_usd = 1.5\nsource = "codex"\nagent = "codex"\nmax_rules = 7\n'
        "[backend_options.sim]\nfollow = 0.8\n"
    )
    monkeypatch.setenv("SKILLOPT_SLEEP_VAL_SAMPLES", "5")
    monkeypatch.setenv("CODEX_HOME", str(project / "codex-data"))
    assert main(["schedule", "--project", str(project)]) == 0
    entry = json.loads(_schedule_file().read_text())["projects"][0]
    config = entry["config"]
    assert (
        config["k"],
        config["max_cost_usd"],
        config["source"],
        config["agent"],
        config["max_rules"],
        config["val_samples"],
    ) == (6, 1.5, "codex", "codex", 7, 5)
    assert config["backend_options"] == {"sim": {"follow": 0.8}}
    assert config["codex_home"] == str(project / "codex-data")
    assert entry["auto_adopt"] is False
    from skillopt_sleep.config import SECTION_OF

    # every setting a night reads; the [schedule] section's are the schedule's own fields
    assert set(config) == {name for name, section in SECTION_OF.items() if section != "schedule"}


def test_cli_backend_records_the_binary_and_its_path(
    cron: FakeTools, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    bin_dir = tmp_path / "agent-bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text("#!/bin/sh\nexit 0\n")
    claude.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert main(["schedule", "--project", str(project), "--backend", "claude-cli"]) == 0
    recorded = json.loads(_schedule_file().read_text())
    assert recorded["projects"][0]["config"]["backend_options"]["claude-cli"]["command"] == str(claude)
    assert str(bin_dir) in recorded["path"]


def test_cli_backend_missing_binary_is_refused(
    cron: FakeTools, project: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("PATH", str(cron.root / "bin"))
    assert main(["schedule", "--project", str(project), "--backend", "codex-cli"]) == 3
    err = capsys.readouterr().err
    assert "`codex` is not on PATH" in err
    assert cron.table() == FOREIGN


def test_via_not_available_on_this_os_is_refused(cron: FakeTools, project: Path, capsys) -> None:
    assert main(["schedule", "--project", str(project), "--via", "schtasks"]) == 2
    assert "not available on linux" in capsys.readouterr().err


def test_bad_time_is_refused(cron: FakeTools, project: Path, capsys) -> None:
    assert main(["schedule", "--project", str(project), "--at", "25:00"]) == 2
    assert "HH:MM" in capsys.readouterr().err


def test_status_shows_the_schedule(cron: FakeTools, project: Path, capsys) -> None:
    assert main(["schedule", "--project", str(project), "--at", "03:45"]) == 0
    capsys.readouterr()
    assert main(["status", "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert "nightly at 03:45 via cron" in out and "next run" in out and "no scheduled night has run yet" in out
    assert main(["status", "--project", str(project), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schedule"]["at"] == "03:45" and data["schedule"]["this_project"] is True


def test_unschedule_with_nothing_scheduled_and_no_cron_installed(
    fake_tools: FakeTools, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("PATH", str(fake_tools.root / "bin-empty"))
    assert main(["unschedule"]) == 0
    assert "nothing was scheduled" in capsys.readouterr().out


def test_a_failing_crontab_is_one_clear_line(
    cron: FakeTools, project: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("SKILLOPT_FAKE_CRONTAB", str(cron.root / "no-such-dir" / "table"))
    cron.crontab.unlink()
    (cron.root / "no-such-dir").mkdir()
    (cron.root / "no-such-dir" / "table").mkdir()  # reading it fails
    assert main(["schedule", "--project", str(project)]) == 8
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "crontab" in err
    assert not _schedule_file().exists()


def test_reregistering_a_project_keeps_its_place(cron: FakeTools, project: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    assert main(["schedule", "--project", str(project), "--project", str(other)]) == 0
    assert main(["schedule", "--project", str(project), "--model", "m2"]) == 0
    projects = json.loads(_schedule_file().read_text())["projects"]
    assert [p["project"] for p in projects] == [str(project), str(other)]
    assert [p["config"]["model"] for p in projects] == ["m2", None]


def test_an_interpreter_that_needs_the_shell_environment_is_refused(
    cron: FakeTools, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import subprocess
    import venv

    venv.create(tmp_path / "bare-venv", with_pip=False)
    python = tmp_path / "bare-venv" / "bin" / "python"
    repo = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("PYTHONPATH", str(repo))  # the engine imports in this shell only
    assert subprocess.run([str(python), "-c", "import skillopt_sleep"], timeout=60).returncode == 0
    monkeypatch.setattr(sys, "executable", str(python))
    assert main(["schedule", "--project", str(project)]) == 3
    assert "cannot import skillopt_sleep without your shell's environment" in capsys.readouterr().err
    assert cron.table() == FOREIGN and not _schedule_file().exists()


def _fake_agent(tmp_path: Path, name: str) -> Path:
    bin_dir = tmp_path / f"{name}-bin"
    bin_dir.mkdir()
    binary = bin_dir / name
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(0o755)
    return binary


def test_auto_backend_is_kept_and_preflighted(
    cron: FakeTools, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("SKILLOPT_SLEEP_BACKEND", "auto")
    monkeypatch.setenv("PATH", f"{cron.root / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")
    assert main(["schedule", "--project", str(project)]) == 3  # no agent CLI, no key
    assert "backend auto" in capsys.readouterr().err
    codex = _fake_agent(tmp_path, "codex")
    monkeypatch.setenv("PATH", f"{codex.parent}{os.pathsep}{os.environ['PATH']}")
    assert main(["schedule", "--project", str(project), "--backend", "auto"]) == 0
    config = json.loads(_schedule_file().read_text())["projects"][0]["config"]
    assert config["backend"] == "auto"  # resolved only for the preflight
    assert config["backend_options"]["codex-cli"]["command"] == str(codex)


def test_auto_backend_with_a_key_in_the_env_file(
    cron: FakeTools, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{cron.root / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")
    env = _env_file(tmp_path, 0o600)
    assert main(["schedule", "--project", str(project), "--backend", "auto", "--env-file", str(env)]) == 0
    assert json.loads(_schedule_file().read_text())["projects"][0]["config"]["backend"] == "auto"


def test_a_spec_the_night_would_refuse_is_refused_here_too(cron: FakeTools, project: Path, capsys) -> None:
    """The preflight reads a spec as the night does (backends.spec_options): ``auto:…`` is not
    ``auto``, and an unknown backend is named."""
    assert main(["schedule", "--project", str(project), "--backend", "auto:fast=1"]) == 2  # a bad flag
    assert "--backend auto:fast=1: auto takes no options" in capsys.readouterr().err
    assert cron.table() == FOREIGN


# -- --print when the job would not find what it needs -------------------------------------------

KEY = "sk-ant-api03-" + "Pr1" * 30 + "CC"


@pytest.fixture
def cron_without_agents(fake_tools: FakeTools, monkeypatch: pytest.MonkeyPatch) -> FakeTools:
    monkeypatch.setenv("SKILLOPT_FAKE_NO_USER_MANAGER", "1")
    # no claude / codex anywhere the job could look
    monkeypatch.setenv("PATH", f"{fake_tools.root / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return fake_tools


def _nothing_changed(tools: FakeTools) -> None:
    assert tools.table() == "" and tools.written_files() == []
    assert [c for c in tools.calls() if c["argv"] != ["--user", "show-environment"]] == []
    assert not user_dirs().schedule_file.exists() and not user_dirs().state.exists()


@pytest.mark.parametrize(
    "argv, finding",
    [
        (["--backend", "auto"], "backend auto: a scheduled night would find neither"),
        (["--backend", "codex-cli"], "`codex` is not on PATH"),
        (["--backend", "anthropic"], "a scheduled night needs ANTHROPIC_API_KEY"),
        (["--backend", "handoff"], "answered by your own agent session, which is not there at night"),
    ],
)
def test_print_shows_the_entry_when_no_cli_or_key_is_found(
    cron_without_agents: FakeTools,
    project: Path,
    argv: list[str],
    finding: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # in this shell only: the job would not see it
    assert main(["schedule", "--project", str(project), "--print", *argv]) == 0
    out, err = capsys.readouterr()
    assert MARKER in out and "skillopt_sleep nightly --schedule-file" in out and str(project) in out
    assert "(--print: nothing was changed)" in out
    (line,) = [x for x in err.splitlines() if x.strip()]
    assert line.startswith("skillopt-sleep: warning: ") and finding in line
    assert "without --print refuses" in line
    assert KEY not in out + err
    _nothing_changed(cron_without_agents)
    # installing it is still refused, with the same finding
    assert main(["schedule", "--project", str(project), *argv]) == 3
    assert finding in capsys.readouterr().err


def test_print_json_carries_the_warnings(cron_without_agents: FakeTools, project: Path, tmp_path: Path, capsys) -> None:
    loose = tmp_path / "keys.env"
    loose.write_text(f"ANTHROPIC_API_KEY={KEY}\n")
    loose.chmod(0o644)
    assert (
        main(
            [
                "schedule",
                "--project",
                str(project),
                "--backend",
                "anthropic",
                "--env-file",
                str(loose),
                "--print",
                "--json",
            ]
        )
        == 0
    )
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["plan"]["mechanism"] == "cron" and data["schedule"]["projects"][0]["project"] == str(project)
    assert any("chmod 600" in w for w in data["warnings"])
    assert any("ANTHROPIC_API_KEY" in w for w in data["warnings"])  # the loose file was not read
    assert len([x for x in err.splitlines() if x.strip()]) == len(data["warnings"]) == 2
    assert KEY not in out + err
    _nothing_changed(cron_without_agents)


def test_print_still_refuses_what_would_corrupt_the_entry(
    cron_without_agents: FakeTools, project: Path, capsys
) -> None:
    assert main(["schedule", "--project", str(project), "--print", "--at", "03:00\n* * * * * x"]) == 2
    assert "control character" in capsys.readouterr().err


# -- the schedule function on each platform (each mechanism's own tests: tests/scheduler/) -------


def test_switching_via_removes_the_old_entry(fake_tools: FakeTools, project: Path) -> None:
    fake_tools.crontab.write_text("0 1 * * * /bin/true\n")
    assert schedule(projects=[str(project)], via="cron", platform="linux") == 0
    assert MARKER in fake_tools.table()
    assert schedule(projects=[str(project)], via="systemd", platform="linux") == 0
    assert fake_tools.table() == "0 1 * * * /bin/true\n"
    assert (fake_tools.unit_dir / f"{UNIT}.timer").exists()


def test_print_on_each_os_changes_nothing(fake_tools: FakeTools, project: Path, capsys) -> None:
    for platform, expect in (
        ("linux", "Persistent=true"),
        ("darwin", "StartCalendarInterval"),
        ("win32", "StartWhenAvailable"),
    ):
        assert schedule(projects=[str(project)], platform=platform, print_only=True) == 0
        assert expect in capsys.readouterr().out
    assert fake_tools.written_files() == []
    mutating = [c for c in fake_tools.calls() if c["argv"] != ["--user", "show-environment"]]
    assert mutating == []
    assert not user_dirs().schedule_file.exists()


# --------------------------------------------------------------------------- the [schedule] section


def _user_config(text: str) -> Path:
    path = user_dirs().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_config_s_time_is_installed_and_a_flag_overrides_it(cron: FakeTools, project: Path, capsys) -> None:
    _user_config('[schedule]\nat = "02:30"\n')
    assert main(["schedule", "--project", str(project), "--print", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["schedule"]["at"] == "02:30"
    assert any("30 2 * * * " in a["content"] for a in printed["plan"]["artifacts"])
    assert main(["schedule", "--project", str(project)]) == 0
    (line,) = _ours(cron.table())
    assert line.startswith("30 2 * * * ") and json.loads(_schedule_file().read_text())["at"] == "02:30"
    assert main(["schedule", "--project", str(project), "--at", "04:10"]) == 0  # the flag wins
    assert _ours(cron.table())[0].startswith("10 4 * * * ")
    assert json.loads(_schedule_file().read_text())["at"] == "04:10"


def test_the_config_s_time_wins_over_the_time_already_scheduled(cron: FakeTools, project: Path) -> None:
    assert main(["schedule", "--project", str(project), "--at", "04:10"]) == 0
    assert main(["schedule", "--project", str(project)]) == 0  # nothing set: the time already scheduled
    assert _ours(cron.table())[0].startswith("10 4 * * * ")
    _user_config('[schedule]\nat = "7:05"\n')
    assert main(["schedule", "--project", str(project)]) == 0
    assert _ours(cron.table())[0].startswith("5 7 * * * ")
    assert json.loads(_schedule_file().read_text())["at"] == "07:05"


def test_a_bad_time_in_the_config_is_one_line_naming_the_file(cron: FakeTools, project: Path, capsys) -> None:
    config_file = _user_config('[schedule]\nat = "25:00"\n')
    assert main(["schedule", "--project", str(project)]) == 3
    err = capsys.readouterr().err
    assert err == (
        f"skillopt-sleep: invalid setting (at set in {config_file}): at must be a local time of day HH:MM "
        "(00:00 to 23:59)\n"
    )
    assert cron.table() == FOREIGN and not _schedule_file().exists()
    assert main(["schedule", "--project", str(project), "--at", "25:00"]) == 2  # a bad flag: usage
    assert "--at '25:00' is not a time of day" in capsys.readouterr().err


def test_a_project_s_config_may_not_move_the_entry(cron: FakeTools, project: Path, capsys) -> None:
    (project / ".skillopt-sleep").mkdir()
    project_config = project / ".skillopt-sleep" / "config.toml"
    project_config.write_text('[schedule]\nat = "02:30"\n', encoding="utf-8")
    assert main(["schedule", "--project", str(project)]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{project_config}: at is the nightly schedule's" in err
    assert str(user_dirs().config_file) in err
    assert cron.table() == FOREIGN and not _schedule_file().exists()


def test_auto_adopt_comes_from_each_project_s_config_unless_the_flag_says(
    cron: FakeTools, project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    (other / ".skillopt-sleep").mkdir(parents=True)
    (other / ".skillopt-sleep" / "config.toml").write_text("[schedule]\nauto_adopt = true\n", encoding="utf-8")
    assert main(["schedule", "--project", str(project), "--project", str(other)]) == 0
    adopts = {p["project"]: p["auto_adopt"] for p in json.loads(_schedule_file().read_text())["projects"]}
    assert adopts == {str(project): False, str(other): True}
    assert main(["schedule", "--project", str(other), "--no-auto-adopt"]) == 0
    assert {p["project"]: p["auto_adopt"] for p in json.loads(_schedule_file().read_text())["projects"]}[
        str(other)
    ] is False


def test_the_config_s_via_and_env_file_are_used(cron: FakeTools, project: Path, tmp_path: Path, capsys) -> None:
    env = _env_file(tmp_path, 0o600, "OTHER=1\n")
    _user_config(f'[schedule]\nvia = "systemd"\nenv_file = "{env}"\n')
    assert main(["schedule", "--project", str(project), "--print", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["plan"]["mechanism"] == "systemd"
    assert (printed["schedule"]["via"], printed["schedule"]["env_file"]) == ("systemd", str(env))
    assert main(["schedule", "--project", str(project), "--via", "cron"]) == 0  # the flag wins
    recorded = json.loads(_schedule_file().read_text())
    assert (recorded["via"], recorded["env_file"]) == ("cron", str(env))
