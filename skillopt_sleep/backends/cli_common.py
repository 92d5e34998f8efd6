"""What the ``claude`` and ``codex`` CLI backends share: running the agent headless in a fresh,
empty directory named with ``REPLAY_DIR_PREFIX`` (so a harvester recognises and skips anything
the agent might record about it), removed afterwards; and reading failure text as error kinds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass

from skillopt_sleep.backends.sdk_errors import clean_message
from skillopt_sleep.paths import REPLAY_DIR_PREFIX


@dataclass
class CliRun:
    returncode: int
    stdout: str
    stderr: str
    latency: float
    error: str | None = None  # set when the process could not run or timed out
    error_message: str = ""


def run_in_replay_dir(argv: list[str], stdin: str, timeout: float) -> CliRun:
    """Run ``argv`` with ``stdin`` in a new empty temp dir, then delete the dir."""
    workdir = tempfile.mkdtemp(prefix=REPLAY_DIR_PREFIX)
    started = time.monotonic()
    try:
        proc = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, encoding="utf-8",
            errors="replace", cwd=workdir, timeout=timeout, env=os.environ.copy(),
        )
    except FileNotFoundError:
        return CliRun(-1, "", "", time.monotonic() - started, "unavailable",
                      f"{argv[0]!r} not found on PATH")
    except PermissionError as exc:
        return CliRun(-1, "", "", time.monotonic() - started, "unavailable",
                      clean_message(f"cannot run {argv[0]!r}: {exc}"))
    except subprocess.TimeoutExpired:
        return CliRun(-1, "", "", time.monotonic() - started, "timeout",
                      f"{os.path.basename(argv[0])} did not answer within {timeout:g}s")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return CliRun(proc.returncode, proc.stdout or "", proc.stderr or "", time.monotonic() - started)


_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("auth", re.compile(
        r"not logged in|please run /login|run `?\w* ?login|invalid api key|authenticat|unauthori[sz]ed"
        r"|\b401\b|\b403\b|oauth token|credentials?|forbidden", re.I)),
    ("budget", re.compile(r"credit balance is too low|insufficient[_ ]quota|billing", re.I)),
    ("rate_limit", re.compile(
        r"rate.?limit|usage limit|limit reached|too many requests|\b429\b|quota", re.I)),
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


def looks_like_auth_failure(text: str) -> bool:
    """A short answer that is really the CLI asking for a login."""
    head = text.strip()[:200]
    return bool(head) and len(text.strip()) < 400 and bool(
        re.search(r"not logged in|please run /login|invalid api key|run `?\w* ?login", head, re.I)
    )
