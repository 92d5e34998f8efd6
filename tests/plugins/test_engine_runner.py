"""The Claude Code plugin's runner (plugins/claude-code/scripts/engine.py), run as Claude Code runs
it: a separate process, hook JSON on stdin, a bare environment. The hooks must exit 0 quickly and
print nothing harmful whatever the engine does."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skillopt_sleep import __version__
from skillopt_sleep.adoption import adopt

from tests.support.staged_project import project_with_memory, stage_memory

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / "plugins" / "claude-code" / "scripts" / "engine.py"
SYSTEM_PYTHON = "/usr/bin/python3"
# Loose: the runner's own budget is 0.7 s; this only catches a hook that waits for a hung engine.
HOOK_WALL_LIMIT = 5.0


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


def _hook(event: str, project: Path, env: dict[str, str], python: str | None = None,
          stdin: dict | None = None) -> tuple[subprocess.CompletedProcess, float]:
    payload = stdin if stdin is not None else {"session_id": "s1", "cwd": str(project),
                                               "hook_event_name": event, "source": "startup"}
    started = time.monotonic()
    out = subprocess.run([python or _no_engine_python(), str(RUNNER), event],
                         input=json.dumps(payload), capture_output=True, text=True, env=env,
                         cwd=str(project), timeout=60)
    return out, time.monotonic() - started


def _assert_clean(text: str) -> None:
    assert all(ch in "\n" or (ch.isprintable()) for ch in text), repr(text)
    assert "\x1b" not in text and "Traceback" not in text


@pytest.fixture
def project(tmp_path) -> Path:
    return project_with_memory(tmp_path, b"# rules\n")


def _stage(project: Path, n_rules: int = 2) -> None:
    stage_memory(project, b"# rules\n- a\n", rules=n_rules)


# --------------------------------------------------------------------------- broken engines


def test_missing_engine_prints_the_install_command(tmp_path, project):
    out, elapsed = _hook("session-start", project, _env(tmp_path, tmp_path / "empty"))
    assert out.returncode == 0 and elapsed < HOOK_WALL_LIMIT
    answer = json.loads(out.stdout)
    assert answer["systemMessage"].startswith("skillopt-sleep: engine not found")
    assert f"python3 -m pip install {REPO}" in answer["systemMessage"]  # a checkout: install it
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    _assert_clean(out.stdout)


@pytest.mark.parametrize("body", [
    # raises, with a traceback and a secret on stderr
    "#!/bin/sh\necho 'Traceback (most recent call last): sk-ant-api03-SECRETSECRETSECRET' >&2\nexit 1\n",
    # prints garbage with control characters and a secret, exit 0
    "#!/bin/sh\nprintf '\\033[31mboom\\007 sk-ant-api03-SECRETSECRETSECRETSECRET\\n{not json'\nexit 0\n",
    # prints well-formed JSON of the wrong shape
    "#!/bin/sh\necho '{\"notices\": \"sk-ant-api03-SECRETSECRETSECRET\"}'\n",
    # hangs, and leaves a grandchild holding its stdout
    "#!/bin/sh\nsleep 30 &\nsleep 30\n",
])
@pytest.mark.parametrize("event", ["session-start", "session-end"])
def test_broken_engine_on_path_is_silent_and_quick(tmp_path, project, body, event):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir / "skillopt-sleep", body)
    out, elapsed = _hook(event, project, _env(tmp_path, bin_dir))
    assert out.returncode == 0
    assert elapsed < HOOK_WALL_LIMIT
    assert out.stdout == "" and "SECRET" not in out.stderr


def test_broken_interpreter_in_skillopt_sleep_python(tmp_path, project):
    broken = _script(tmp_path / "python-broken", "#!/bin/sh\nsleep 30\n")
    out, elapsed = _hook("session-start", project,
                         _env(tmp_path, SKILLOPT_SLEEP_PYTHON=str(broken)))
    assert (out.returncode, out.stdout) == (0, "") and elapsed < HOOK_WALL_LIMIT


def test_skillopt_sleep_python_that_does_not_exist(tmp_path, project):
    out, _ = _hook("session-start", project,
                   _env(tmp_path, SKILLOPT_SLEEP_PYTHON=str(tmp_path / "nope")))
    assert out.returncode == 0
    assert "SKILLOPT_SLEEP_PYTHON" in json.loads(out.stdout)["systemMessage"]


def test_engine_of_another_version_prints_the_install_command(tmp_path, project):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir / "skillopt-sleep",
            "#!/bin/sh\necho '{\"version\": \"0.0.1\", \"notices\": [\"old\"]}'\n")
    # A generous budget: the fake engine must answer, however loaded the machine (this is not about speed).
    out, _ = _hook("session-start", project, _env(tmp_path, bin_dir, SKILLOPT_SLEEP_HOOK_BUDGET="30"))
    message = json.loads(out.stdout)["systemMessage"]
    assert message.startswith(f"skillopt-sleep: the engine is 0.0.1 but the plugin is {__version__}")
    assert "pip install" in message


def test_notices_are_resanitized(tmp_path, project):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    answer = {"version": __version__, "notices": ["a\x1b[2Jb\x07c\nd\u2028e\u202ef" + "x" * 400, 5]}
    (tmp_path / "answer.json").write_text(json.dumps(answer))
    _script(bin_dir / "skillopt-sleep", f"#!/bin/sh\ncat {tmp_path / 'answer.json'}\n")
    # A generous budget: the fake engine must answer, however loaded the machine (this is not about speed).
    out, _ = _hook("session-start", project, _env(tmp_path, bin_dir, SKILLOPT_SLEEP_HOOK_BUDGET="30"))
    message = json.loads(out.stdout)["systemMessage"]
    assert message.startswith("ab c d e f") and len(message) <= 240
    _assert_clean(message)


def test_stdin_left_open_does_not_hang(tmp_path, project):
    env = _env(tmp_path, tmp_path / "empty")
    proc = subprocess.Popen([_no_engine_python(), str(RUNNER), "session-start"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=str(project))
    try:
        code = proc.wait(timeout=HOOK_WALL_LIMIT)  # stdin is never written nor closed
        stdout = proc.stdout.read().decode()
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()
    assert code == 0 and "engine not found" in stdout


# --------------------------------------------------------------------------- the real engine


def _real_env(tmp_path: Path) -> dict[str, str]:
    # Generous budget: these tests check what is printed, not speed (the machine may be loaded).
    return _env(tmp_path, SKILLOPT_SLEEP_PYTHON=sys.executable, SKILLOPT_SLEEP_HOOK_BUDGET="30")


def test_notice_appears_when_staged_and_disappears_after_adopt(tmp_path, project):
    env = _real_env(tmp_path)
    out, _ = _hook("session-start", project, env)
    assert (out.returncode, out.stdout) == (0, "")
    _stage(project, 2)
    out, _ = _hook("session-start", project, env)
    answer = json.loads(out.stdout)
    assert answer["systemMessage"] == ("skillopt-sleep: last night proposed 2 rules for this project "
                                       "— /skillopt-sleep:skillopt-sleep review")
    assert answer["hookSpecificOutput"]["additionalContext"].startswith(answer["systemMessage"])
    _assert_clean(out.stdout)
    adopt(project)
    out, _ = _hook("session-start", project, env)
    assert (out.returncode, out.stdout) == (0, "")


def test_project_comes_from_claude_project_dir(tmp_path, project):
    _stage(project, 1)
    env = _real_env(tmp_path) | {"CLAUDE_PROJECT_DIR": str(project)}
    out, _ = _hook("session-start", tmp_path, env, stdin={})
    assert "proposed 1 rule for this project" in json.loads(out.stdout)["systemMessage"]


def test_secret_in_project_path_is_not_printed(tmp_path):
    project = tmp_path / "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    project.mkdir()
    (project / "CLAUDE.md").write_bytes(b"# rules\n")
    _stage(project, 2)
    out, _ = _hook("session-start", project, _real_env(tmp_path))
    assert "proposed 2 rules" in out.stdout and "AAAAAAAAAAAA" not in out.stdout


def test_session_end_records_the_project(tmp_path, project):
    out, _ = _hook("session-end", project, _real_env(tmp_path))
    assert (out.returncode, out.stdout) == (0, "")
    records = (Path(os.environ["SKILLOPT_SLEEP_HOME"]) / "state" / "sessions-seen.jsonl").read_text()
    entry = json.loads(records.splitlines()[-1])
    assert entry["project"] == str(project.resolve()) and entry["agent"] == "claude"


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
