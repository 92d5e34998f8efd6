"""``run`` with the default ``auto`` backend in a project with real-looking transcripts: it uses
the agent's own CLI when it is on PATH and stops with exit 4 when nothing is configured — never
the simulator on real transcripts. A simulator's proposal for them is marked and not adopted.

``--deadline`` takes seconds or a number with s / m / h; anything else is a usage error. A
``dry-run`` says that it staged and wrote nothing, and did not."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillopt_sleep.commands.demo import build_demo_home
from skillopt_sleep.config import Config
from skillopt_sleep.documents.managed_block import START
from skillopt_sleep.errors import UserError
from skillopt_sleep.night import NightOptions, run_night
from skillopt_sleep.paths import project_dirs
from tests.support import fake_cli
from tests.support.engine_cli import run_cli
from tests.support.tasks import make_tasks, write_tasks_file
from tests.test_footprint import tree


@pytest.fixture
def demo(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(skillopt home, claude home, project): the demo's Claude Code transcripts for a project."""
    return build_demo_home(tmp_path / "demo")


def test_nothing_configured_exits_4_and_stages_nothing(demo: tuple[Path, Path, Path], tmp_path: Path) -> None:
    home, claude, project = demo
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    out = run_cli(
        "run", "--project", str(project), "--claude-home", str(claude), "--quiet", home=home, path=str(empty_bin)
    )
    assert out.returncode == 4, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "backend=auto" in lines[0] and "--backend" in lines[0], out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
    project_dir = project_dirs(project).root  # only the (released) OS lock file and its folder may appear
    assert not project_dir.exists() or {p.name for p in project_dir.iterdir()} <= {".gitignore", "night.lock"}
    after = sorted(
        p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p != project_dir and project_dir not in p.parents
    )
    assert after == before  # no staging, no history, no harvest checkpoints


def test_a_claude_on_path_is_picked_for_claude_sessions(demo: tuple[Path, Path, Path], tmp_path: Path) -> None:
    home, claude, project = demo
    fake_bin = tmp_path / "fake-bin"
    fake_cli.install(fake_bin)
    log = tmp_path / "cli.jsonl"
    # --since in the future: the preflight runs, then no session is new enough, so the night is
    # short; the choice and the call it made are what this test looks at.
    out = run_cli(
        "run",
        "--project",
        str(project),
        "--claude-home",
        str(claude),
        "--since",
        "2099-01-01T00:00:00Z",
        "--json",
        "--quiet",
        home=home,
        path=str(fake_bin),
        extra={"FAKE_CLI_LOG": str(log), "FAKE_CLI_MODE": "ok"},
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["backends"]["target"].startswith("claude-cli")
    assert report["backend_choice"].startswith("auto chose claude-cli: Claude Code sessions were harvested")
    assert str(fake_bin / "claude") in report["backend_choice"]
    assert report["simulated"] is False
    calls = fake_cli.runs(log)
    assert calls and all(Path(c["argv"][0]).name == "claude" for c in calls)


def test_a_logged_out_claude_stops_the_night_with_exit_4(demo: tuple[Path, Path, Path], tmp_path: Path) -> None:
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
    assert out.returncode == 4 and "claude-cli" in out.stderr and "preflight" in out.stderr, out.stderr
    assert not project_dirs(project).staging.exists()


@pytest.mark.slow  # whole nights through the CLI
def test_a_sim_proposal_for_real_transcripts_is_refused_by_adopt(demo: tuple[Path, Path, Path], tmp_path: Path) -> None:
    home, claude, project = demo
    path = str(tmp_path / "no-bin")
    out = run_cli(
        "run",
        "--project",
        str(project),
        "--claude-home",
        str(claude),
        "--backend",
        "sim:correct=1,harmful=0,seed=1",
        "--json",
        "--quiet",
        home=home,
        path=path,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["simulated"] is True and report["accepted"] is True
    staged = Path(report["staging_dir"])
    assert json.loads((staged / "manifest.json").read_text())["simulated"] is True
    assert "SIMULATED" in (staged / "report.md").read_text()
    live = project / "CLAUDE.md"
    before = live.read_bytes()

    refused = run_cli("adopt", "--project", str(project), home=home, path=path)
    assert refused.returncode == 6
    assert len(refused.stderr.strip().splitlines()) == 1 and "--allow-simulated" in refused.stderr
    assert live.read_bytes() == before and not project_dirs(project).ledger.exists()

    adopted = run_cli("adopt", "--project", str(project), "--allow-simulated", "--json", home=home, path=path)
    assert adopted.returncode == 0, adopted.stderr
    written = json.loads(adopted.stdout)["files"]
    assert written and all(START in Path(f["path"]).read_text() for f in written)


@pytest.mark.parametrize(("reviewed", "simulated"), [(True, False), (False, True)])
def test_a_sim_night_on_a_tasks_file_is_simulated_unless_reviewed(
    tmp_path: Path, reviewed: bool, simulated: bool
) -> None:
    tasks = write_tasks_file(tmp_path / "tasks.json", make_tasks(), reviewed=reviewed)
    config = Config(backend="sim:correct=1,harmful=0,seed=1", agent="claude")
    report = run_night(NightOptions(project=tmp_path, config=config, mode="run", tasks_file=tasks))
    assert report.accepted and report.simulated is simulated
    manifest = json.loads((Path(report.staging_dir) / "manifest.json").read_text())
    assert manifest["simulated"] is simulated


@pytest.mark.slow  # whole nights through the CLI
def test_auto_adopt_never_adopts_a_simulated_proposal(demo: tuple[Path, Path, Path], tmp_path: Path) -> None:
    home, claude, project = demo
    out = run_cli(
        "run",
        "--project",
        str(project),
        "--claude-home",
        str(claude),
        "--backend",
        "sim:correct=1,harmful=0,seed=1",
        "--auto-adopt",
        "--json",
        "--quiet",
        home=home,
        path=str(tmp_path / "no-bin"),
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["accepted"] and any("not auto-adopted" in n for n in report["notes"])
    assert not project_dirs(project).ledger.exists()


def test_a_codex_on_path_is_picked_for_codex_sessions(tmp_path: Path) -> None:
    """Both fake CLIs on PATH; the sessions are Codex's, so codex-cli replays them."""
    from datetime import datetime, timezone

    from tests.scenarios.test_codex_night import write_rollout

    project, codex_home = tmp_path / "acme", tmp_path / "codex"
    project.mkdir()
    write_rollout(
        codex_home,
        project,
        datetime(2026, 11, 3, 9, tzinfo=timezone.utc),
        ["Write the commit message for the footer change."],
    )
    fake_bin = tmp_path / "fake-bin"
    fake_cli.install(fake_bin)
    log = tmp_path / "cli.jsonl"
    out = run_cli(
        "dry-run",
        "--project",
        str(project),
        "--codex-home",
        str(codex_home),
        "--claude-home",
        str(tmp_path / "no-claude"),
        "--json",
        "--quiet",
        home=tmp_path / "home",
        path=str(fake_bin),
        extra={"FAKE_CLI_LOG": str(log), "FAKE_CLI_MODE": "ok", "CODEX_HOME": str(codex_home)},
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["backends"]["target"].startswith("codex-cli")
    assert report["backend_choice"].startswith("auto chose codex-cli: Codex sessions were harvested")
    assert report["documents"]["memory"] == str(project / "AGENTS.md")
    assert {Path(c["argv"][0]).name for c in fake_cli.runs(log)} == {"codex"}


@pytest.mark.parametrize(
    ("flag", "listed", "opted"),
    [
        (False, [], False),
        (True, [], True),
        (False, ["skillopt-sleep-learned"], True),
        (False, ["another-skill"], False),
    ],
)
def test_whole_skill_editing_is_on_by_flag_or_config_list_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: bool, listed: list[str], opted: bool
) -> None:
    import skillopt_sleep.night as night_module
    from skillopt_sleep.cli import build_parser

    for verb in ("run", "dry-run", "demo"):
        assert build_parser().parse_args([verb, "--edit-whole-skill"]).edit_whole_skill is True
        assert build_parser().parse_args([verb]).edit_whole_skill is False
    seen: list[bool] = []
    real = night_module.load_documents

    def spy(*args, **kwargs):
        seen.append(kwargs["whole_skill"])
        return real(*args, **kwargs)

    monkeypatch.setattr(night_module, "load_documents", spy)
    tasks = write_tasks_file(tmp_path / "tasks.json", make_tasks(), reviewed=True)
    config = Config(backend="sim:seed=1", agent="claude", edit_whole_skill=listed)
    run_night(NightOptions(project=tmp_path, config=config, mode="dry-run", tasks_file=tasks, edit_whole_skill=flag))
    assert seen == [opted]


# -- the --deadline flag -------------------------------------------------------------------------


def test_the_deadline_flag_and_config(tmp_path: Path, home: Path) -> None:
    from skillopt_sleep.commands.run import parse_duration

    assert parse_duration("90") == 90.0 and parse_duration("30m") == 1800.0 and parse_duration("2h") == 7200.0
    with pytest.raises(UserError):
        parse_duration("soon")
    assert Config().models.night_deadline and Config().models.call_timeout


def test_a_bad_deadline_flag_is_a_usage_error(home: Path, tmp_path: Path, capsys) -> None:
    from skillopt_sleep.cli import main

    with pytest.raises(SystemExit) as info:
        main(["dry-run", "--project", str(tmp_path), "--deadline", "soon"])
    assert info.value.code == 2
    assert "is not a duration" in capsys.readouterr().err


# -- dry-run -------------------------------------------------------------------------------------


def test_dry_run_says_nothing_was_staged_and_writes_nothing(demo, tmp_path: Path) -> None:
    home, claude, project = demo
    before = tree(home, project, claude)
    out = run_cli(
        "dry-run",
        "--project",
        str(project),
        "--claude-home",
        str(claude),
        "--source",
        "claude",
        "--agent",
        "claude",
        "--backend",
        "sim:seed=3",
        "--quiet",
        home=home,
        path=os.environ["PATH"],
    )
    assert out.returncode == 0, out.stderr
    assert "accepted" in out.stdout  # a whole night's work was done
    last = out.stdout.rstrip("\n").splitlines()[-1]
    assert last == (
        f"  dry-run: nothing was staged or saved — nothing written in {project_dirs(project).root} "
        f"nor in {home / 'state'} (no proposal, harvest checkpoint or history); "
        "`skillopt-sleep run` stages a proposal"
    )
    assert tree(home, project, claude) == before
