#!/usr/bin/env python3
"""The Claude Code plugin's bridge to the skillopt-sleep engine. Standard library only.

    engine.py check             where the engine is, and whether its version is the plugin's
    engine.py night [ARGS...]   start `skillopt-sleep run --agent claude ARGS` in the background
    engine.py engine ARGS...    run `skillopt-sleep ARGS...` in the foreground

The engine is found through ``SKILLOPT_SLEEP_PYTHON`` (an interpreter that has the package),
then ``skillopt-sleep`` on PATH, then an interpreter on PATH that can import it. When it is
missing, or its version is not the plugin's, this prints the exact command that installs the
matching version instead of a traceback.

The session hooks are ``hook.py``: they read the engine's precomputed notices and never start it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLUGIN_ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "skillopt-sleep"
MODULE = "skillopt_sleep"
MAX_ENGINE_OUTPUT = 64 * 1024
MAX_LINE = 240
EXIT_NO_ENGINE = 3

_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.")
# C0/C1 controls, line/paragraph separators, and invisible or direction-changing characters.
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def plugin_version() -> str:
    try:
        manifest = json.loads((PLUGIN_ROOT / ".claude-plugin" / "plugin.json").read_text("utf-8"))
        return str(manifest["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return "unknown"


def clean_line(text: object) -> str:
    """One printable line: no escape sequences or control characters, bounded length."""
    line = " ".join(_CONTROLS.sub(" ", _ESCAPES.sub("", str(text))).split())
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1].rstrip() + "…"


# --------------------------------------------------------------------------- finding the engine


def _source_checkout() -> Path | None:
    """The repository this plugin directory sits in, when it is a checkout of the engine too."""
    for parent in PLUGIN_ROOT.parents:
        pyproject = parent / "pyproject.toml"
        if pyproject.is_file():
            try:
                text = pyproject.read_text("utf-8")
            except OSError:
                return None
            return parent if re.search(r'^name\s*=\s*"skillopt-sleep"', text, re.M) else None
    return None


def install_command(version: str) -> str:
    checkout = _source_checkout()
    if checkout is not None:
        return f"python3 -m pip install {shlex.quote(str(checkout))}"
    if version == "unknown":
        return f"pipx install {PACKAGE}"
    return f"pipx install --force '{PACKAGE}=={version}'"


def _imports_engine(python: str, timeout: float) -> bool:
    if Path(python).resolve() == Path(sys.executable).resolve():
        import importlib.util

        return importlib.util.find_spec(MODULE) is not None
    probe = f"import importlib.util,sys; sys.exit(0 if importlib.util.find_spec({MODULE!r}) else 1)"
    result = call([python, "-c", probe], timeout)
    return result is not None and result[0] == 0


def find_engine(deadline: float) -> tuple[list[str] | None, str]:
    """(argv prefix that runs the engine, how it was found) or (None, why not)."""
    configured = os.environ.get("SKILLOPT_SLEEP_PYTHON")
    if configured:
        python = shutil.which(configured) or configured
        if not (Path(python).is_file() and os.access(python, os.X_OK)):
            return None, f"SKILLOPT_SLEEP_PYTHON={configured} is not an executable"
        return [python, "-m", MODULE], f"SKILLOPT_SLEEP_PYTHON ({python})"
    on_path = shutil.which(PACKAGE)
    if on_path:
        return [on_path], f"{PACKAGE} on PATH ({on_path})"
    candidates: list[str] = []
    for name in (sys.executable, shutil.which("python3"), shutil.which("python")):
        if name and name not in candidates:
            candidates.append(name)
    for python in candidates:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        if _imports_engine(python, remaining):
            return [python, "-m", MODULE], f"{python} -m {MODULE}"
    return None, "not on PATH, and no python3 on PATH imports it"


# --------------------------------------------------------------------------- calling it


def _kill(proc: subprocess.Popen) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except OSError:
        pass
    try:
        proc.wait(timeout=0.2)
    except subprocess.TimeoutExpired:
        pass


def call(argv: list[str], timeout: float) -> tuple[int, bytes] | None:
    """Run ``argv`` with a hard timeout; (exit code, first bytes of stdout) or None when it
    could not start or ran out of time (then its whole process group is killed)."""
    if timeout <= 0:
        return None
    group = {"start_new_session": True} if os.name == "posix" else {
        "creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
    with tempfile.TemporaryFile() as out:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.DEVNULL, **group)
        except (OSError, ValueError):
            return None
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            return None
        out.seek(0)
        return code, out.read(MAX_ENGINE_OUTPUT)


# --------------------------------------------------------------------------- the slash command


def _ready_engine() -> list[str] | None:
    """The engine, after checking its version; prints what to do and returns None otherwise."""
    version = plugin_version()
    engine, why = find_engine(time.monotonic() + 10)
    if engine is None:
        print(f"skillopt-sleep: engine not found ({why}).\nInstall it with:\n  {install_command(version)}\n"
              "or set SKILLOPT_SLEEP_PYTHON to a Python interpreter that has it.")
        return None
    result = call(engine + ["--version"], 30)
    found = clean_line(result[1].decode("utf-8", "replace")).split()[-1:] if result and result[0] == 0 else []
    if found != [version]:
        shown = found[0] if found else "unreadable"
        print(f"skillopt-sleep: the engine ({clean_line(' '.join(engine))}) is version {shown}, but this "
              f"plugin is {version}.\nInstall the matching engine with:\n  {install_command(version)}")
        return None
    return engine


def check() -> int:
    engine = _ready_engine()
    if engine is None:
        return EXIT_NO_ENGINE
    print(f"skillopt-sleep: engine {plugin_version()} found: {' '.join(engine)}")
    return 0


def run_engine(args: list[str]) -> int:
    engine = _ready_engine()
    if engine is None:
        return EXIT_NO_ENGINE
    sys.stdout.flush()
    try:
        return subprocess.run(engine + args, stdin=subprocess.DEVNULL, timeout=600).returncode
    except subprocess.TimeoutExpired:
        print("skillopt-sleep: the engine did not finish within 10 minutes; stopped it.")
        return 1


def start_night(args: list[str]) -> int:
    """A night takes minutes: start it detached, with its output in a log file."""
    engine = _ready_engine()
    if engine is None:
        return EXIT_NO_ENGINE
    project = os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    fd, log = tempfile.mkstemp(prefix="skillopt-sleep-night-", suffix=".log")
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT")}
    argv = engine + ["run", "--project", project, "--agent", "claude", *args]
    detach = {"start_new_session": True} if os.name == "posix" else {
        "creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        | getattr(subprocess, "DETACHED_PROCESS", 0)}
    with os.fdopen(fd, "wb") as out:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                    cwd=project, env=env, **detach)
        except OSError as exc:
            print(f"skillopt-sleep: could not start the night: {clean_line(exc)}")
            return 1
    print(f"skillopt-sleep: started a night for {clean_line(project)} (pid {proc.pid}).\n"
          f"It runs in the background; its output goes to {log}.\n"
          "When it is done, `/skillopt-sleep:skillopt-sleep` shows the result and `/skillopt-sleep:skillopt-sleep review` the proposal.")
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    action, rest = argv[0], argv[1:]
    if action == "check":
        return check()
    if action == "night":
        return start_night(rest)
    if action == "engine":
        return run_engine(rest)
    print(f"engine.py: unknown action {clean_line(action)!r}; see engine.py --help")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
