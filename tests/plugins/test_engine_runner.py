"""The Claude Code plugin's runner (plugins/claude-code/scripts/engine.py), run as the slash command
runs it: a separate process, a bare environment. (The session hooks are hook.py:
tests/plugins/test_hook.py.)"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skillopt_sleep import __version__

from tests.support.staged_project import project_with_memory, stage_memory

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / "plugins" / "claude-code" / "scripts" / "engine.py"
SYSTEM_PYTHON = "/usr/bin/python3"


def _no_engine_python() -> str:
    """An interpreter that cannot import skillopt_sleep (the engine is "not installed")."""
    if not os.path.exists(SYSTEM_PYTHON):
        pytest.skip(f"{SYSTEM_PYTHON} is not available")
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import skillopt_sleep"], capture_output=True,
                           cwd="/", timeout=60)
    if probe.returncode == 0:
        pytest.skip(f"{SYSTEM_PYTHON} can import skillopt_sleep")
    return SYSTEM_PYTHON


def _script(path: Path, body: str) -> Path:
    path.write_text(body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _env(tmp_path: Path, bin_dir: Path | None = None, **extra: str) -> dict[str, str]:
    """A bare environment: only our bin dir and the system dirs on PATH (no venv)."""
    dirs = ([str(bin_dir)] if bin_dir else []) + ["/usr/bin", "/bin"]
    env = {"PATH": os.pathsep.join(dirs), "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8",
           "SKILLOPT_SLEEP_HOME": os.environ["SKILLOPT_SLEEP_HOME"]}
    env.update(extra)
    return env


@pytest.fixture
def project(tmp_path) -> Path:
    return project_with_memory(tmp_path, b"# rules\n")


def _stage(project: Path, n_rules: int = 2) -> None:
    stage_memory(project, b"# rules\n- a\n", rules=n_rules)


def _real_env(tmp_path: Path) -> dict[str, str]:
    return _env(tmp_path, SKILLOPT_SLEEP_PYTHON=sys.executable)


# --------------------------------------------------------------------------- the slash command's actions


def _action(args: list[str], env: dict[str, str], cwd: Path, python: str | None = None):
    return subprocess.run([python or sys.executable, str(RUNNER), *args], capture_output=True,
                          text=True, env=env, cwd=str(cwd), timeout=120)


def test_check_without_engine_prints_the_install_command(tmp_path, project):
    out = _action(["check"], _env(tmp_path, tmp_path / "empty"), project, _no_engine_python())
    assert out.returncode == 3
    assert f"python3 -m pip install {REPO}" in out.stdout and "Traceback" not in out.stdout + out.stderr


def test_engine_action_runs_the_real_engine(tmp_path, project):
    _stage(project, 2)
    env = _real_env(tmp_path)
    out = _action(["check"], env, project)
    assert out.returncode == 0 and f"engine {__version__} found" in out.stdout
    out = _action(["engine", "status", "--project", str(project)], env, project)
    assert out.returncode == 0 and "latest proposal: night n1 (staged)" in out.stdout
    out = _action(["engine", "adopt", "--project", str(project)], env, project)
    assert out.returncode == 0 and "Adopted night n1" in out.stdout
    out = _action(["engine", "adopt", "--project", str(project)], env, project)
    assert out.returncode == 6  # the engine's own exit code comes through


def test_engine_action_refuses_another_version(tmp_path, project):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir / "skillopt-sleep", "#!/bin/sh\necho 'skillopt-sleep 9.9.9'\n")
    out = _action(["engine", "status"], _env(tmp_path, bin_dir), project, _no_engine_python())
    assert out.returncode == 3
    assert f"version 9.9.9, but this plugin is {__version__}" in out.stdout


def test_night_starts_in_the_background(tmp_path, project):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "argv.txt"
    _script(bin_dir / "skillopt-sleep",
            f"#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'skillopt-sleep {__version__}'; exit 0; fi\n"
            f"echo \"$@\" > {record}.tmp && mv {record}.tmp {record}\nsleep 30\n")
    env = _env(tmp_path, bin_dir, CLAUDE_PROJECT_DIR=str(project), CLAUDECODE="1")
    started = time.monotonic()
    out = _action(["night", "--backend", "claude-cli"], env, project, _no_engine_python())
    assert out.returncode == 0 and time.monotonic() - started < 20  # did not wait for the night
    assert "started a night for" in out.stdout
    log = Path(out.stdout.split("its output goes to ")[1].split(".log")[0] + ".log")
    try:
        deadline = time.monotonic() + 20
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert record.read_text().split() == ["run", "--project", str(project), "--agent", "claude",
                                              "--backend", "claude-cli"]
    finally:
        pid = int(out.stdout.split("(pid ")[1].split(")")[0])
        try:
            os.killpg(pid, 9)
        except OSError:
            pass
        log.unlink(missing_ok=True)


def test_unknown_action_is_a_usage_error(tmp_path, project):
    out = _action(["frobnicate"], _env(tmp_path), project)
    assert out.returncode == 2 and "unknown action" in out.stdout
