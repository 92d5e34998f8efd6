"""A command that may not write where it must: a read-only file system or a directory without
permission — most often an agent's sandbox. Codex's sandbox keeps everything outside the workspace
read-only (the user's skillopt-sleep state too), and inside it ``.agents/``, ``.codex/`` and
``.git/``; under ``codex exec`` the whole disk is read-only. Such a failure is the place a command
runs in, not a bug: one line says which path and how to let the engine write there.
"""

from __future__ import annotations

import errno
import json
import os
import shlex
import sys
from pathlib import Path

from skillopt_sleep.errors import EXIT_NOT_WRITABLE

NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)
LAUNCHER_ENV = "SKILLOPT_SLEEP_LAUNCHER"  # the plugin's launcher names itself here


def engine_program() -> str:
    """How the skill calls the engine: the plugin's launcher by its path, else from PATH."""
    return os.environ.get(LAUNCHER_ENV) or "skillopt-sleep"


def codex_rule() -> str:
    """The line of Codex rules that lets it run the engine outside its sandbox."""
    return f'prefix_rule(pattern = [{json.dumps(engine_program())}], decision = "allow")'


def codex_rules_file() -> str:
    """Where the user's own Codex rules live (``$CODEX_HOME/rules``), ``~`` for the home."""
    home = Path.home()
    base = Path(os.environ["CODEX_HOME"]) if os.environ.get("CODEX_HOME") else home / ".codex"
    path = base / "rules" / "skillopt-sleep.rules"
    try:
        return "~/" + path.relative_to(home).as_posix()
    except ValueError:
        return str(path)


def in_codex_sandbox() -> bool:
    """Codex marks the commands it runs in its sandbox (no network on Linux; Seatbelt on macOS)."""
    return os.environ.get("CODEX_SANDBOX_NETWORK_DISABLED") == "1" or bool(os.environ.get("CODEX_SANDBOX"))


def not_writable_message(exc: BaseException) -> str | None:
    """The one line for a write refused by the file system, or None for any other failure."""
    if not isinstance(exc, OSError) or exc.errno not in NOT_WRITABLE:
        return None
    where = exc.filename if exc.filename else "a file it must write"
    message = f"cannot write {where}: {exc.strerror or os.strerror(exc.errno)}"
    if in_codex_sandbox() and shlex.quote(engine_program()) != engine_program():
        # measured: Codex matches its rules only against a program word that is not quoted
        return (
            message + f"; Codex's sandbox keeps it read-only, and its rules cannot allow a program whose "
            f"path needs quoting ({engine_program()}): run the same command in a terminal"
        )
    if in_codex_sandbox():
        return (
            message + "; Codex's sandbox keeps it read-only. Let Codex run the engine outside its sandbox: "
            f"put the line {codex_rule()} in {codex_rules_file()} (or approve the command when Codex asks), "
            "then ask again"
        )
    return message + "; run the command where that path is writable"


def report_not_writable(exc: BaseException, as_json: bool) -> int | None:
    """Print the one line (and the ``--json`` failure object) and return the exit code, or None
    when ``exc`` is not a refused write."""
    message = not_writable_message(exc)
    if message is None:
        return None
    from skillopt_sleep.redact import redact
    from skillopt_sleep.sanitize import sanitize

    message = sanitize(redact(message))
    if as_json:
        print(json.dumps({"ok": False, "error": message, "code": EXIT_NOT_WRITABLE}))
    print(f"skillopt-sleep: {message}", file=sys.stderr)
    return EXIT_NOT_WRITABLE
