"""Run an installed scheduler entry the way its OS would: the crontab line's command through
``/bin/sh -c``, the systemd service's ``ExecStart`` and the launchd plist's ``ProgramArguments``
exec'd directly, each with only the environment that OS gives a job (no SKILLOPT_SLEEP_HOME, no
virtualenv, a short PATH).

Output redirections the OS performs are honoured with its semantics and nothing more:
``StandardOutput=append:FILE`` / ``file:FILE`` (systemd) and ``StandardOutPath`` /
``StandardErrorPath`` (launchd) open the file, creating it but never a missing directory; when
that fails, the job never starts (systemd: status 209/STDOUT; launchd: exit 78), which is what
``Ran.started`` reports.
"""

from __future__ import annotations

import os
import plistlib
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

TIMEOUT = 300


def bare_env(home: Path, path: str = "/usr/bin:/bin") -> dict[str, str]:
    """What cron (Debian/Vixie) gives a job: HOME, LOGNAME, SHELL=/bin/sh and PATH=/usr/bin:/bin.
    The systemd user manager and launchd give about the same; none carries our variables."""
    user = os.environ.get("USER") or os.environ.get("LOGNAME") or "user"
    return {"HOME": str(home), "LOGNAME": user, "USER": user, "SHELL": "/bin/sh", "PATH": path}


@dataclass
class Ran:
    started: bool  # False: the OS could not even start the job (an output file it could not open)
    returncode: int | None
    output: str  # what reached the terminal (cron would mail it; nothing for systemd/launchd)
    why_not: str = ""


def _run(argv: list[str], env: dict[str, str], cwd: Path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) -> Ran:
    proc = subprocess.run(
        argv, env=env, cwd=cwd, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, timeout=TIMEOUT
    )
    out = proc.stdout.decode("utf-8", "replace") if isinstance(proc.stdout, bytes) else ""
    return Ran(True, proc.returncode, out)


def cron_command(line: str) -> str:
    """The command part of a crontab line as cron hands it to ``/bin/sh -c``: after the five time
    fields, with ``\\%`` turned into ``%`` (an unescaped ``%`` would start stdin; ours has none)."""
    fields = line.split(None, 5)
    assert len(fields) == 6, line
    command = fields[5]
    assert re.search(r"(?<!\\)%", command) is None, "an unescaped % would cut the command at it"
    return command.replace("\\%", "%")


def run_cron_line(line: str, home: Path) -> Ran:
    """cron runs the command with ``/bin/sh -c`` in HOME."""
    return _run(["/bin/sh", "-c", cron_command(line)], bare_env(home), home)


def _unit_values(text: str, key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(f"{key}=")]


def exec_start_argv(service: str) -> list[str]:
    """``ExecStart=``'s argv as systemd splits it: double-quoted words with backslash escapes,
    then ``%%`` -> ``%`` and ``$$`` -> ``$`` (our units use no other specifier or variable)."""
    (value,) = _unit_values(service, "ExecStart")
    words = shlex.split(value.lstrip("-@:+!"), posix=True)
    assert not any(re.search(r"%[^%]", w.replace("%%", "")) for w in words), "an unexpanded specifier"
    return [w.replace("%%", "%").replace("$$", "$") for w in words]


def job_argv(entry_argv: list[str]) -> list[str]:
    """The job's own argv inside an entry that runs ``/bin/sh -c "mkdir -p … && exec ARGV >>LOG
    2>&1"`` (or ARGV itself, for an entry that runs the job directly)."""
    if entry_argv[:2] != ["/bin/sh", "-c"]:
        return list(entry_argv)
    words = shlex.split(entry_argv[2])
    start = words.index("exec") + 1
    end = next(i for i, w in enumerate(words) if w.startswith(">>"))
    return words[start:end]


def _open_like_the_os(path: str, append: bool = True) -> int:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    return os.open(path, flags, 0o644)  # the directory must exist: nothing creates it


def run_systemd_service(service: str, home: Path) -> Ran:
    """The user manager execs ExecStart's argv (no shell) in HOME with its own small environment;
    StandardOutput= / StandardError= ``append:`` / ``file:`` files are opened first."""
    argv = exec_start_argv(service)
    fds: dict[str, int] = {}
    for key in ("StandardOutput", "StandardError"):
        for value in _unit_values(service, key):
            kind, _, target = value.partition(":")
            if kind in ("append", "file", "truncate"):
                try:
                    fds[key] = _open_like_the_os(target, append=kind == "append")
                except OSError as exc:
                    return Ran(False, 209, "", f"Failed to set up {key}: {exc.strerror} ({target})")
    try:
        env = bare_env(home, "/usr/local/bin:/usr/bin:/bin")
        return _run(
            argv,
            env,
            home,
            stdout=fds.get("StandardOutput", subprocess.PIPE),
            stderr=fds.get("StandardError", fds.get("StandardOutput", subprocess.STDOUT)),
        )
    finally:
        for fd in fds.values():
            os.close(fd)


def run_launchd_plist(plist_bytes: bytes, home: Path) -> Ran:
    """launchd execs ProgramArguments in ``/`` (or WorkingDirectory) with stdout/stderr on
    StandardOutPath / StandardErrorPath (else /dev/null), opening those files before the exec."""
    data = plistlib.loads(plist_bytes)
    argv = list(data["ProgramArguments"])
    fds: dict[str, int] = {}
    for key in ("StandardOutPath", "StandardErrorPath"):
        if data.get(key):
            try:
                fds[key] = _open_like_the_os(data[key])
            except OSError as exc:
                return Ran(False, 78, "", f"cannot open {key} {data[key]}: {exc.strerror}")
    try:
        env = bare_env(home, "/usr/bin:/bin:/usr/sbin:/sbin")
        return _run(
            argv,
            env,
            Path(data.get("WorkingDirectory") or "/"),
            stdout=fds.get("StandardOutPath", subprocess.DEVNULL),
            stderr=fds.get("StandardErrorPath", subprocess.DEVNULL),
        )
    finally:
        for fd in fds.values():
            os.close(fd)
