"""What the ``claude`` and ``codex`` CLI backends share.

Each call runs inside a ``ReplaySandbox``: a private directory tree holding an empty working
directory named with ``REPLAY_DIR_PREFIX`` (so a harvester recognises and skips anything the agent
might record about it), a private ``TMPDIR`` (the CLIs drop probes and sockets there) and the files
the call needs (the system prompt, the answer file, a private config home). The whole tree is
removed afterwards, so a replay leaves nothing a later harvest or the user would see.

``run_cli`` streams the process's output through a ``watch`` function that may stop it early (an
auth failure the CLI would otherwise retry for minutes). Failure text becomes an error kind with
``classify_failure``; token counts become a ``Usage`` with ``parse_usage``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt_sleep.backends.pricing import Price, price_for
from skillopt_sleep.backends.sdk_errors import clean_message
from skillopt_sleep.files import read_regular
from skillopt_sleep.paths import REPLAY_DIR_PREFIX
from skillopt_sleep.types import Usage

RUN_DIR_PREFIX = "skillopt-sleep-cli-"
SYSTEM_PROMPT_FILE = "system-prompt.md"

# A watch function sees each stdout line as it arrives; a returned (kind, message) stops the run.
Watch = Callable[[str], tuple[str, str] | None]


@dataclass
class CliRun:
    returncode: int
    stdout: str
    stderr: str
    latency: float
    error: str | None = None  # set when the process could not run, timed out or was stopped
    error_message: str = ""
    pid: int | None = None  # the process that ran (gone by now), for cleaning up what it left


@dataclass
class ReplaySandbox:
    """A private directory tree for one headless call; ``close()`` removes all of it."""

    root: Path
    cwd: Path = field(init=False)
    tmp: Path = field(init=False)
    files: Path = field(init=False)

    def __post_init__(self) -> None:
        self.cwd = Path(tempfile.mkdtemp(prefix=REPLAY_DIR_PREFIX, dir=self.root))
        self.tmp = self.root / "tmp"
        self.files = self.root / "files"
        for directory in (self.tmp, self.files):
            directory.mkdir(mode=0o700)

    @classmethod
    def create(cls) -> ReplaySandbox:
        return cls(Path(tempfile.mkdtemp(prefix=RUN_DIR_PREFIX)))

    def write(self, name: str, text: str) -> Path:
        """A private file (mode 0600) outside the working directory."""
        path = self.files / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        return path

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The caller's environment with the private TMPDIR (and ``extra``) on top."""
        env = os.environ.copy()
        for name in ("TMPDIR", "TMP", "TEMP"):
            env[name] = str(self.tmp)
        env.update(extra or {})
        return env

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ReplaySandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def copy_back_refreshed(copied: bytes, private: Path, user: Path, limit: int = 1024 * 1024) -> None:
    """Write a login file the CLI refreshed in its private config (``private``, a copy of
    ``copied``) back over the user's own, unless the user's file changed meanwhile (then theirs is
    newer). An OAuth refresh replaces the refresh token: a stale copy would be a lost login."""
    try:
        refreshed = read_regular(private, limit)
        if refreshed == copied or read_regular(user, limit) != copied:
            return
        staging = user.with_name(f".{user.name}.skillopt-sleep.tmp")
        fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(refreshed)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(staging, user)
    except OSError:
        return


def run_cli(
    argv: list[str],
    stdin: str,
    timeout: float,
    sandbox: ReplaySandbox,
    *,
    env: Mapping[str, str] | None = None,
    watch: Watch | None = None,
    keep: Callable[[str], bool] | None = None,
    watch_stderr: Watch | None = None,
) -> CliRun:
    """Run ``argv`` in ``sandbox.cwd`` with ``stdin``; stop it at ``timeout`` or when ``watch``
    (stdout lines) or ``watch_stderr`` (stderr lines, for a CLI that reports retries only in its
    log) says so. The process gets its own process group, so stopping it stops its children too.
    A stdout line ``keep`` refuses is watched but not kept (a CLI that streams a growing message
    on every line would otherwise fill memory with copies of it)."""
    started = time.monotonic()
    name = os.path.basename(argv[0])
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            cwd=sandbox.cwd,
            env=dict(env) if env is not None else sandbox.env(),
            start_new_session=True,
        )
    except FileNotFoundError:
        return CliRun(-1, "", "", time.monotonic() - started, "unavailable", f"{argv[0]!r} not found on PATH")
    except OSError as exc:  # not executable, or an argument list the OS refuses
        return CliRun(
            -1, "", "", time.monotonic() - started, "unavailable", clean_message(f"cannot run {argv[0]!r}: {exc}")
        )

    stopped: list[tuple[str, str]] = []
    out_lines: list[str] = []
    err_chunks: list[str] = []

    def read_stdout() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if keep is None or keep(line):
                out_lines.append(line)
            verdict = watch(line) if watch is not None and not stopped else None
            if verdict is not None:
                stopped.append(verdict)
                _kill(proc)

    def read_stderr() -> None:
        assert proc.stderr is not None
        if watch_stderr is None:
            err_chunks.append(proc.stderr.read())
            return
        for line in proc.stderr:
            err_chunks.append(line)
            verdict = watch_stderr(line) if not stopped else None
            if verdict is not None:
                stopped.append(verdict)
                _kill(proc)

    def write_stdin() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write(stdin)
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass

    threads = [threading.Thread(target=t, daemon=True) for t in (write_stdin, read_stdout, read_stderr)]
    for thread in threads:
        thread.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(proc)
        proc.wait()
    except BaseException:  # Ctrl-C: the CLI runs in its own session, so it would outlive us
        _kill(proc)
        raise
    for thread in threads:
        thread.join(timeout=5)
    latency = time.monotonic() - started
    stdout, stderr = "".join(out_lines), "".join(err_chunks)
    if stopped:
        kind, message = stopped[0]
        return CliRun(proc.returncode, stdout, stderr, latency, kind, clean_message(f"{name}: {message}"), proc.pid)
    if timed_out:
        return CliRun(
            proc.returncode, stdout, stderr, latency, "timeout", f"{name} did not answer within {timeout:g}s", proc.pid
        )
    return CliRun(proc.returncode, stdout, stderr, latency, pid=proc.pid)


def _kill(proc: subprocess.Popen[str]) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "auth",
        re.compile(
            r"not logged in|please run /login|run `?\w* ?login|(invalid|incorrect) api key|authenticat|unauthori[sz]ed"
            r"|\b401\b|\b403\b|oauth token|credentials?|forbidden",
            re.I,
        ),
    ),
    ("budget", re.compile(r"credit balance is too low|insufficient[_ ]quota|billing", re.I)),
    ("rate_limit", re.compile(r"rate.?limit|usage limit|limit reached|too many requests|\b429\b|quota", re.I)),
    ("overloaded", re.compile(r"overloaded|\b529\b", re.I)),
    ("model", re.compile(r"model .*(not found|does not exist|not available|not supported)|unknown model", re.I)),
    ("bad_request", re.compile(r"unknown option|unexpected argument|unrecognized|invalid value|usage:", re.I)),
    ("timeout", re.compile(r"timed? ?out", re.I)),
    ("server", re.compile(r"\b5\d\d\b|internal server error|service unavailable|connection|network", re.I)),
]


def classify_failure(text: str, default: str = "server") -> str:
    """The error kind a CLI's failure text describes (first matching pattern wins)."""
    for kind, pattern in _PATTERNS:
        if pattern.search(text):
            return kind
    return default


_STATUS_KINDS = {
    400: "bad_request",
    401: "auth",
    403: "auth",
    404: "model",
    408: "timeout",
    413: "bad_request",
    429: "rate_limit",
    529: "overloaded",
}


def kind_for_status(status: int) -> str:
    """The error kind of an HTTP status a CLI reports from its provider."""
    return _STATUS_KINDS.get(status, "server" if status >= 500 else "bad_request")


def looks_like_auth_failure(text: str) -> bool:
    """A short answer that is really the CLI asking for a login."""
    head = text.strip()[:200]
    return (
        bool(head)
        and len(text.strip()) < 400
        and bool(re.search(r"not logged in|please run /login|invalid api key|run `?\w* ?login", head, re.I))
    )


def parse_usage(raw: Any, *, cached_key: str, written_key: str, input_includes_cached: bool) -> Usage:
    """A CLI's token counts as a ``Usage`` (uncached input, output, cache read, cache write).

    Claude Code reports uncached ``input_tokens`` beside its cache counts; Codex reports
    ``input_tokens`` that include the cached ones, which ``input_includes_cached`` subtracts.
    """
    if not isinstance(raw, dict):
        return Usage()

    def count(key: str) -> int:
        value = raw.get(key)
        return max(0, int(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0

    cached, written = count(cached_key), count(written_key)
    uncached = count("input_tokens") - (cached + written if input_includes_cached else 0)
    return Usage(
        input_tokens=max(0, uncached),
        output_tokens=count("output_tokens"),
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


class CliBackend:
    """What every agent-CLI backend holds: the model it asks for (None: the CLI's default), the
    binary it runs, a time limit per call and a price. Each backend names itself (``NAME``, the
    spec's name) and its defaults (the module's ``COMMAND`` and ``DEFAULT_TIMEOUT``);
    ``from_options`` reads a spec's options the same way for all of them."""

    offline = False
    NAME = ""
    COMMAND = ""
    DEFAULT_TIMEOUT = 600.0

    def __init__(
        self,
        model: str | None = None,
        *,
        command: str | None = None,
        timeout: float | None = None,
        price: Price | None = None,
    ):
        self.model = model
        self.command = command or self.COMMAND
        self.timeout = float(self.DEFAULT_TIMEOUT if timeout is None else timeout)
        self.price = price
        self.id = f"{self.NAME}:{model or 'default'}"

    @classmethod
    def options(cls, options: Mapping[str, Any], model: str | None) -> dict[str, Any]:
        """A spec's ``model``, ``command``, ``timeout`` and ``price_*`` options as constructor
        arguments (the model named in the options wins over the config's)."""
        model = options.get("model") or model
        return {
            "model": str(model) if model else None,
            "command": str(options.get("command", cls.COMMAND)),
            "timeout": float(options.get("timeout", cls.DEFAULT_TIMEOUT)),
            "price": price_for(str(model or ""), options),
        }
