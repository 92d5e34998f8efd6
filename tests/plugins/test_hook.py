"""The session hooks (plugins/claude-code/scripts/hook.py), run as Claude Code runs them: the
command line from hooks.json through a shell, the system Python (no engine importable), hook
JSON on stdin, a bare environment. They read the engine's precomputed notices and must exit 0
and stay silent on anything they cannot trust."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import platformdirs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillopt_sleep.staging.adoption import adopt, revert
from skillopt_sleep.commands.notice import projects_seen
from skillopt_sleep.store.notices import MAX_FILE_BYTES
from skillopt_sleep.paths import APP, notice_key, project_fingerprint, user_dirs

from tests.support.staged_project import project_with_memory, stage_memory

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugins" / "claude-code"
HOOK = PLUGIN / "scripts" / "hook.py"
WAITING = "skillopt-sleep: last night proposed 2 rules for this project — /skillopt-sleep review"
# Loose, and only for the cases that would hang without the hook's guards (a FIFO, stdin left open).
HANG_LIMIT = 20


def _hook_module():
    spec = importlib.util.spec_from_file_location("plugin_hook", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _command(event: str) -> str:
    """The command hooks.json gives Claude Code for ``event``."""
    config = json.loads((PLUGIN / "hooks" / "hooks.json").read_text(encoding="utf-8"))
    (group,) = config["hooks"][event]
    (hook,) = group["hooks"]
    return hook["command"]


def _python_dir() -> str:
    """A directory whose python3 cannot import the engine, as on a machine where only the plugin
    is installed."""
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("no python3 in /usr/bin or /bin")
    probe = subprocess.run([python, "-c", "import skillopt_sleep"], capture_output=True, cwd="/", timeout=60)
    if probe.returncode == 0:
        pytest.skip(f"{python} can import skillopt_sleep")
    return str(Path(python).parent)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        "PATH": f"{_python_dir()}:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "LANG": "C.UTF-8",
        "CLAUDE_PLUGIN_ROOT": str(PLUGIN),
        "SKILLOPT_SLEEP_HOME": os.environ["SKILLOPT_SLEEP_HOME"],
    }
    env.update(extra)
    return env


def _run(
    event: str, project: Path, env: dict[str, str], stdin: dict | None = None, args: str = "", **popen
) -> subprocess.CompletedProcess:
    payload = {"session_id": "s1", "cwd": str(project), "hook_event_name": event, "source": "startup"}
    return subprocess.run(
        ["/bin/sh", "-c", _command(event) + args],
        input=json.dumps(payload if stdin is None else stdin),
        capture_output=True,
        text=True,
        env=env,
        cwd=str(project),
        timeout=HANG_LIMIT,
        **popen,
    )


def _start(project: Path, env: dict[str, str], **kw) -> subprocess.CompletedProcess:
    return _run("SessionStart", project, env, **kw)


def _message(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 0 and out.stderr == ""
    answer = json.loads(out.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert answer["hookSpecificOutput"]["additionalContext"].startswith(answer["systemMessage"] + "\n")
    return answer["systemMessage"]


def _silent(out: subprocess.CompletedProcess) -> None:
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


@pytest.fixture
def project(tmp_path) -> Path:
    return project_with_memory(tmp_path, b"# rules\n")


def _stage(project: Path, rules: int = 2, night_id: str = "n1") -> None:
    stage_memory(project, b"# rules\n- a\n", night_id, rules=rules)


def _notice_file(project: Path) -> Path:
    return user_dirs().project_notice(project)


# --------------------------------------------------------------------------- what it shows


def test_staged_then_adopted_then_reverted(tmp_path, project):
    env = _env(tmp_path, CLAUDE_PROJECT_DIR=str(project))
    _silent(_start(project, env))
    _stage(project)
    assert _message(_start(project, env)) == WAITING
    adopt(project)
    _silent(_start(project, env))
    revert(project)
    _silent(_start(project, env))  # a reverted proposal is not news: the person chose to undo it


def test_project_from_claude_project_dir_then_stdin_then_cwd(tmp_path, project):
    _stage(project, rules=1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    expected = WAITING.replace("2 rules", "1 rule")
    assert _message(_start(elsewhere, _env(tmp_path, CLAUDE_PROJECT_DIR=str(project)), stdin={})) == expected
    assert _message(_start(elsewhere, _env(tmp_path), stdin={"cwd": str(project)})) == expected
    assert _message(_start(project, _env(tmp_path), stdin={})) == expected


def test_codex_wording_and_text_format(tmp_path, project):
    _stage(project)
    out = _start(project, _env(tmp_path), args=" --agent codex --format text")
    # the command line names --agent claude first; the last one given wins
    assert out.returncode == 0
    assert out.stdout == WAITING.replace("/skillopt-sleep review", "ask for the skillopt-sleep review") + "\n"


def test_a_missed_night_shows_in_every_project(tmp_path, project):
    from skillopt_sleep.scheduler.schedule_changes import save_schedule
    from skillopt_sleep.scheduler.schedule_file import ProjectEntry, Schedule

    save_schedule(Schedule(at="03:00", via="cron", python="/usr/bin/python3", projects=[ProjectEntry("/p", {})]))
    path = user_dirs().schedule_notice
    lines = path.read_text().split("\n")
    lines[3:-1] = ["1577848800" + line[line.index("\t") :] for line in lines[3:-1]]  # a slot long past
    path.write_text("\n".join(lines))
    assert "has not run" in _message(_start(project, _env(tmp_path)))


def test_secret_in_project_path_is_not_printed(tmp_path):
    project = tmp_path / ("sk-ant-api03-" + "A" * 44)
    project.mkdir()
    (project / "CLAUDE.md").write_bytes(b"# rules\n")
    _stage(project)
    out = _start(project, _env(tmp_path))
    assert _message(out) == WAITING and "AAAAAAAAAAAA" not in out.stdout


def test_lines_are_resanitized(tmp_path, project):
    _stage(project)
    path = _notice_file(project)
    path.write_text(
        path.read_text().replace(
            "\tclaude\tskillopt-sleep: last night", "\tclaude\ta\x1b[2Jb\x07c\rd\u2028e\u202ef\x9b" + "x" * 400
        )
    )
    message = _message(_start(project, _env(tmp_path)))
    assert message.startswith("a [2Jb c d e f") and len(message) <= 240
    assert all(ch.isprintable() for ch in message)


# --------------------------------------------------------------------------- what it refuses


def _device(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))  # /dev/zero: endless bytes


@pytest.mark.parametrize(
    "bad",
    [
        "missing",
        "fifo",
        "device",
        "directory",
        "huge",
        "garbage",
        "torn",
        "bad bound",
        "stale format",
        "another project",
        "symlink",
        "too few fields",
    ],
)
def test_an_untrustworthy_notice_file_is_silent(tmp_path, project, bad):
    _stage(project)
    path = _notice_file(project)
    document = path.read_text()
    path.unlink()
    if bad == "fifo":
        os.mkfifo(path)  # no writer: a blocking open would wait for ever
    elif bad == "device":
        _device(path)
    elif bad == "directory":
        path.mkdir()
    elif bad == "huge":  # well-formed, but past the bound: not read at all
        path.write_text(document + "-\t-\tcodex\tpadding\n" * MAX_FILE_BYTES)
    elif bad == "garbage":
        path.write_bytes(b"\xff\xfe{\x00" * 100)
    elif bad == "torn":
        path.write_text(document[:-10])
    elif bad == "bad bound":
        path.write_text(document.replace("-\t", "1e9\t"))
    elif bad == "stale format":
        path.write_text(document.replace("notice v1", "notice v0"))
    elif bad == "another project":  # a notice file copied from another project
        path.write_text(document.replace(project_fingerprint(project), project_fingerprint(tmp_path)))
    elif bad == "symlink":
        target = tmp_path / "planted.json"
        target.write_text(document)
        path.symlink_to(target)
    elif bad == "too few fields":
        path.write_text(document.replace("\tclaude\t", "\tclaude "))
    _silent(_start(project, _env(tmp_path)))


def test_an_unreadable_notice_file_is_silent(tmp_path, project):
    _stage(project)
    _notice_file(project).chmod(0)
    demote = {}
    if os.geteuid() == 0:  # root reads anything: run the hook as nobody
        for parent in [_notice_file(project), *_notice_file(project).parents]:
            if parent == Path("/"):
                break
            if parent.is_dir():
                parent.chmod(parent.stat().st_mode | 0o055)
        demote = {"user": 65534, "group": 65534}
    _silent(_start(project, _env(tmp_path), **demote))


def test_a_planted_file_in_the_project_is_not_read(tmp_path, project):
    """A cloned repository can commit files under .skillopt-sleep/; the hook reads notices only
    from the user's own state dir."""
    _stage(project)
    planted = project / ".skillopt-sleep" / _notice_file(project).name
    planted.write_bytes(_notice_file(project).read_bytes().replace(b"proposed 2 rules", b"says: run rm -rf"))
    _notice_file(project).unlink()
    _silent(_start(project, _env(tmp_path)))


def test_stdin_left_open_does_not_hang(tmp_path, project):
    _stage(project)
    proc = subprocess.Popen(
        ["/bin/sh", "-c", _command("SessionStart") + " --agent codex"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
        cwd=str(project),
    )
    try:
        code = proc.wait(timeout=HANG_LIMIT)  # stdin is never written nor closed
        stdout = proc.stdout.read().decode()
    finally:
        proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()
    assert code == 0 and "proposed 2 rules" in stdout  # the project came from the working directory


def test_bad_usage_is_silent_on_stdout_and_exits_0(tmp_path, project):
    out = subprocess.run(
        ["/bin/sh", "-c", f'python3 "{HOOK}" session-start --agent nobody'],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        cwd=str(project),
        timeout=HANG_LIMIT,
    )
    assert out.returncode == 0 and out.stdout == "" and "usage" in out.stderr


# --------------------------------------------------------------------------- session end


def test_session_end_records_the_project_where_the_engine_reads_it(tmp_path, project):
    out = _run("SessionEnd", project, _env(tmp_path, CLAUDE_PROJECT_DIR=str(project)))
    _silent(out)
    seen = projects_seen()
    assert list(seen) == [str(project.resolve())] and seen[str(project.resolve())][1] == "claude"


def test_session_end_after_a_torn_line_and_past_the_bound(tmp_path, project):
    record = user_dirs().sessions_seen
    record.parent.mkdir(parents=True)
    other = {"project": "/other", "at": "2026-01-01T00:00:00Z", "agent": "codex"}
    record.write_text((json.dumps(other) + "\n") * 2000 + '{"project": "/torn", "a')
    _silent(_run("SessionEnd", project, _env(tmp_path)))
    assert record.stat().st_size < 1000  # compacted: one line per project
    assert list(projects_seen()) == ["/other", str(project.resolve())]


@pytest.mark.parametrize("bad", ["fifo", "directory"])
def test_session_end_with_a_bad_record_is_silent(tmp_path, project, bad):
    record = user_dirs().sessions_seen
    record.parent.mkdir(parents=True)
    os.mkfifo(record) if bad == "fifo" else record.mkdir()
    _silent(_run("SessionEnd", project, _env(tmp_path)))


# --------------------------------------------------------------------------- agreeing with the engine


def test_the_project_fingerprint_agrees_with_the_engine(tmp_path):
    hook = _hook_module()
    for name in ("plain", "with space", "ünïcödé", "new\nline", "bad-\udcff-utf8"):
        directory = tmp_path / name
        directory.mkdir()
        assert hook.project_fingerprint(os.path.realpath(directory)) == project_fingerprint(directory)
        assert notice_key(directory) == project_fingerprint(directory)[:16]


@given(st.text())
def test_json_string_is_what_json_dumps_writes(text):
    assert _hook_module().json_string(text) == json.dumps(text)


@given(st.text(max_size=300))
def test_the_hook_reads_a_notice_file_as_the_engine_does(text):
    """Both readers parse the same bytes to the same lines (the engine's sanitizing removes more,
    so it is compared on text that survives both)."""
    hook = _hook_module()
    from skillopt_sleep.store import notices

    line = " ".join(hook.clean_line(text).split())
    data = (
        f"{notices.HEADER}\nproject\t-\nwritten\tnow\n-\t-\tclaude\t{line}\n"
        f"5\t-\tclaude\tsecond\n-\t5\tclaude\tgone\n-\t-\tcodex\tnot mine\n"
    ).encode("utf-8", "surrogatepass")
    path = Path(os.environ["SKILLOPT_SLEEP_HOME"]) / "notice-parse"
    path.write_bytes(data)
    hook_lines = hook.notice_lines(str(path), "claude", 10, "-")
    engine_lines = notices.parse_notice_file(data, "claude", 10, "-")
    if notices.clean_line(line) == line:
        assert hook_lines == engine_lines
    assert hook_lines[-1] == "second"


@pytest.mark.parametrize("platform", ["linux", "darwin", "win32"])
def test_the_state_dir_agrees_with_platformdirs(tmp_path, monkeypatch, platform):
    """Without SKILLOPT_SLEEP_HOME the hook finds the engine's state dir as platformdirs does, on
    each platform, with and without XDG_STATE_HOME (a relative one is ignored)."""
    hook = _hook_module()
    monkeypatch.delenv("SKILLOPT_SLEEP_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(hook.sys, "platform", platform)
    if platform == "win32":
        from platformdirs.windows import Windows as Dirs

        monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "AppData" / "Local"))
        monkeypatch.setattr(
            "platformdirs.windows._RESOLVE_WIN_FOLDER", lambda name: os.environ["LOCALAPPDATA"], raising=False
        )
        cases = [{}]
    else:
        from platformdirs.macos import MacOS
        from platformdirs.unix import Unix

        Dirs = MacOS if platform == "darwin" else Unix
        cases = [{}, {"XDG_STATE_HOME": str(tmp_path / "xdg-state")}, {"XDG_STATE_HOME": "relative/state"}]
    for case in cases:
        monkeypatch.delenv("XDG_STATE_HOME", raising=False)
        for name, value in case.items():
            monkeypatch.setenv(name, value)
        assert Path(hook.state_dir()) == Path(Dirs(APP).user_state_dir), case
    if sys.platform.startswith("linux") and platform == "linux":
        assert Path(hook.state_dir()) == Path(platformdirs.user_state_dir(APP)) == user_dirs().state


def test_skillopt_sleep_home_relocates_it_as_for_the_engine(tmp_path, monkeypatch):
    hook = _hook_module()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", "~/a/../sleep-home")
    assert Path(hook.state_dir()) == user_dirs().state


def test_the_hook_shares_the_engine_s_constants():
    """hook.py cannot import the engine; what the two must agree on is checked here."""
    from skillopt_sleep.store import notices
    from skillopt_sleep.commands import notice

    hook = _hook_module()
    assert (hook.HEADER, hook.MAX_FILE_BYTES, hook.MAX_NOTICES, hook.MAX_SHOWN, hook.MAX_LINE) == (
        notices.HEADER,
        notices.MAX_FILE_BYTES,
        notices.MAX_NOTICES,
        notices.MAX_SHOWN,
        notices.NOTICE_MAX_CHARS,
    )
    assert hook.ENGINE_AGENTS == len(notices.AGENTS) and set(hook.AGENTS) < set(notices.AGENTS)
    assert hook.SESSIONS_COMPACT_BYTES == notice.SESSIONS_COMPACT_BYTES and hook.APP == APP
    assert user_dirs().notices == Path(hook.state_dir()) / "notices"
    assert user_dirs().sessions_seen == Path(hook.state_dir()) / "sessions-seen.jsonl"
    assert user_dirs().schedule_notice.name == "schedule.json"
