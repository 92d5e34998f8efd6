"""``/skillopt-sleep`` in real Claude Code sessions, both releases, in the default permission mode.

The model is scripted (tests/support/scripted_claude.py): it runs exactly the Bash command the
plugin's skill prescribes for the user's arguments. ``claude -p`` denies whatever would need a
permission prompt, so a command that runs here needs no prompt. Every project sits in a directory
whose name holds a space. The engine is the plugin's own: its launcher sets it up once per test run
from the plugin's package source (``engine_dir``), except in the marketplace test, which installs
the plugin into a fresh HOME with no engine anywhere and lets the first ``/skillopt-sleep status``
set it up.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.real_clients import RELEASES, client_env, real_cli
from tests.support.repo_clone import clone_of_repo
from tests.support.scheduler_tools import FAKES
from tests.support.scripted_claude import Session, run_session
from tests.support.staged_project import stage_memory
from skillopt_sleep import __version__

pytestmark = [pytest.mark.slow, pytest.mark.real_clis]

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugins" / "claude-code"
LAUNCHER = PLUGIN / "bin" / "skillopt-sleep"
OLD_RULES = b"# Project rules\n\nKeep it short.\n"
NEW_RULES = b"# Project rules\n\nKeep it short.\n- Use conventional commits.\n"
FIRST_USE = "skillopt-sleep: setting up its engine (first use)…"


def _project(tmp_path: Path, proposal: bool = True) -> Path:
    project = tmp_path / "my project"
    project.mkdir()
    (project / "CLAUDE.md").write_bytes(OLD_RULES)
    if proposal:
        stage_memory(project, NEW_RULES, rules=1)
    return project


def _env(tmp_path: Path, engine_dir: Path, **extra: str) -> dict[str, str]:
    return client_env(
        tmp_path,
        SKILLOPT_SLEEP_ENGINE_DIR=str(engine_dir),
        SKILLOPT_SLEEP_BACKEND="sim",
        SKILLOPT_SLEEP_HOME=os.environ["SKILLOPT_SLEEP_HOME"],
        **extra,
    )


def _engine(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """The same command the session ran, run directly as Claude Code's Bash tool runs it (which
    sets CLAUDECODE=1, so the engine names the slash command): the output to compare with."""
    return subprocess.run(
        [str(LAUNCHER), *args],
        capture_output=True,
        text=True,
        env=dict(env, CLAUDECODE="1"),
        cwd=str(cwd),
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def _session(release: str, typed: str, env: dict[str, str], cwd: Path, *extra: str) -> Session:
    return run_session(real_cli("claude", release), typed, env, cwd, "--plugin-dir", str(PLUGIN), *extra)


def _one_allowed_call(session: Session, command: str) -> str:
    """The session ran exactly ``command``, with no permission denial; its tool result."""
    assert session.denials == [], session.denials
    assert [call[0] for call in session.calls] == [command], (session.calls, session.stderr[-2000:])
    ((_, result, is_error),) = session.calls
    assert "requires approval" not in result and "can't be checked" not in result, result
    return result


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(
    "typed", ["/skillopt-sleep", "/skillopt-sleep status", "/skillopt-sleep:skillopt-sleep status"]
)
def test_status(tmp_path, engine_dir, release, typed):
    """The short name and the plugin-qualified one both reach the skill."""
    project = _project(tmp_path)
    env = _env(tmp_path, engine_dir)
    session = _session(release, typed, env, project)
    result = _one_allowed_call(session, "skillopt-sleep status")
    direct = _engine(["status"], env, project)
    assert direct.returncode == 0 and f"skillopt-sleep status for {project}" in direct.stdout
    assert _lines(direct.stdout) == _lines(result)


@pytest.mark.parametrize("release", RELEASES)
def test_review(tmp_path, engine_dir, release):
    project = _project(tmp_path)
    env = _env(tmp_path, engine_dir)
    result = _one_allowed_call(_session(release, "/skillopt-sleep review", env, project), "skillopt-sleep review")
    direct = _engine(["review"], env, project)
    assert direct.returncode == 0 and "Use conventional commits." in direct.stdout
    assert _lines(direct.stdout) == _lines(result)


@pytest.mark.parametrize("release", RELEASES)
def test_adopt_then_revert(tmp_path, engine_dir, release):
    project = _project(tmp_path)
    env = _env(tmp_path, engine_dir)
    result = _one_allowed_call(_session(release, "/skillopt-sleep adopt", env, project), "skillopt-sleep adopt")
    assert (project / "CLAUDE.md").read_bytes() == NEW_RULES, result
    assert f"memory {project / 'CLAUDE.md'}" in result
    result = _one_allowed_call(_session(release, "/skillopt-sleep revert", env, project), "skillopt-sleep revert")
    assert (project / "CLAUDE.md").read_bytes() == OLD_RULES, result


@pytest.mark.parametrize("release", RELEASES)
def test_schedule_then_unschedule(tmp_path, engine_dir, release):
    """With the fake crontab on PATH (tests/support/os_tools): the entry is written, then removed."""
    project = _project(tmp_path, proposal=False)
    tools = tmp_path / "fake-os"
    (tools / "bin").mkdir(parents=True)
    (tools / "bin" / "crontab").symlink_to(FAKES / "crontab")
    env = _env(
        tmp_path,
        engine_dir,
        SKILLOPT_FAKE_SCHED_LOG=str(tools / "calls.jsonl"),
        SKILLOPT_FAKE_CRONTAB=str(tools / "crontab.txt"),
    )
    env["PATH"] = f"{tools / 'bin'}{os.pathsep}{env['PATH']}"
    result = _one_allowed_call(
        _session(release, "/skillopt-sleep schedule --via cron --at 04:30", env, project),
        "skillopt-sleep schedule --via cron --at 04:30",
    )
    table = (tools / "crontab.txt").read_text(encoding="utf-8")
    assert re.search(r"^30 4 \* \* \* .* nightly ", table, re.M), table
    assert "nightly at 04:30 via cron" in result and str(project) in result
    result = _one_allowed_call(
        _session(release, "/skillopt-sleep unschedule", env, project), "skillopt-sleep unschedule"
    )
    table = (tools / "crontab.txt").read_text(encoding="utf-8") if (tools / "crontab.txt").exists() else ""
    assert " nightly " not in table, table
    assert "removed" in result


def _supports(flag: str, env: dict[str, str], cwd: Path) -> bool:
    return flag in _engine(["run", "--help"], env, cwd).stdout


@pytest.mark.parametrize("release", RELEASES)
def test_run_shows_the_estimate_and_start_starts_the_night(tmp_path, engine_dir, release):
    """``/skillopt-sleep run`` runs ``run --estimate`` (it starts nothing) and asks; ``/skillopt-sleep
    start`` runs ``run --detach``. Each is its own invocation of the skill: a "yes" typed in the
    same conversation is a new turn, where the skill's allowed-tools no longer apply and Claude
    Code denies ``run --detach`` (measured with both releases). Both tool results are the engine's
    own output; with an engine that has the two flags, both succeed."""
    project = _project(tmp_path, proposal=False)
    env = _env(tmp_path, engine_dir)
    estimate = _one_allowed_call(
        _session(release, "/skillopt-sleep run", env, project), "skillopt-sleep run --estimate --agent claude"
    )
    direct = _engine(["run", "--estimate", "--agent", "claude"], env, project)
    assert _lines(direct.stdout + direct.stderr) and set(_lines(direct.stdout + direct.stderr)) <= set(_lines(estimate))
    session = _session(release, "/skillopt-sleep start", env, project)
    started = _one_allowed_call(session, "skillopt-sleep run --detach --agent claude")
    if _supports("--estimate", env, project) and _supports("--detach", env, project):
        assert direct.returncode == 0 and session.calls[0][2] is False, (estimate, started)
        assert (project / ".skillopt-sleep").is_dir()
    else:  # an engine without the flags: the tool results are its own usage errors
        assert direct.returncode == 2 and "unrecognized arguments" in started


# --------------------------------------------------------------------------- from a marketplace


@pytest.mark.parametrize("release", RELEASES)
def test_installed_from_a_marketplace_it_sets_up_its_engine_on_first_use(tmp_path, release):
    claude = real_cli("claude", release)
    env = client_env(tmp_path, SKILLOPT_SLEEP_BACKEND="sim", SKILLOPT_SLEEP_HOME=str(tmp_path / "state"))
    assert shutil.which("skillopt-sleep", path=env["PATH"]) is None
    assert not {"SKILLOPT_SLEEP_PYTHON", "SKILLOPT_SLEEP_ENGINE_DIR", "CLAUDE_PLUGIN_DATA"} & set(env)
    clone = clone_of_repo(tmp_path / "clone")
    for command in (["marketplace", "add", str(clone)], ["install", "skillopt-sleep@skillopt-sleep"]):
        out = subprocess.run(
            [claude, "plugin", *command],
            capture_output=True,
            text=True,
            env=env,
            cwd=str(tmp_path),
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        assert out.returncode == 0, out.stdout + out.stderr
    project = _project(tmp_path)
    session = run_session(claude, "/skillopt-sleep status", env, project)
    result = _one_allowed_call(session, "skillopt-sleep status")
    assert FIRST_USE in result
    assert f"skillopt-sleep status for {project}" in result and "latest proposal" in result
    cache = Path(env["HOME"]) / ".claude" / "plugins" / "cache" / "skillopt-sleep" / "skillopt-sleep" / __version__
    data = Path(re.search(r"sets itself up \([^)]*\), in\s+(\S+)\.", session.skill).group(1))  # ${CLAUDE_PLUGIN_DATA}
    assert data == Path(env["HOME"]) / ".claude" / "plugins" / "data" / "skillopt-sleep-skillopt-sleep"
    marker = json.loads((data / "engine" / "skillopt-sleep-engine.json").read_text(encoding="utf-8"))
    assert marker["installer"] == "pip"
    # Claude Code runs a directory marketplace's plugin in place (its bin/ on PATH is the clone's),
    # and keeps a copy, symlinks dereferenced, in its cache
    assert marker["source"] in (str(clone / "plugins" / "claude-code" / "engine"), str(cache / "engine"))
    assert sorted(p.name for p in (cache / "engine").iterdir()) == ["README.md", "pyproject.toml", "skillopt_sleep"]
    assert not any(p.is_symlink() for p in (cache / "engine").iterdir())
    again = run_session(claude, "/skillopt-sleep status", env, project)
    assert FIRST_USE not in _one_allowed_call(again, "skillopt-sleep status")
