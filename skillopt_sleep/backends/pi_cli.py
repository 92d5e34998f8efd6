"""Pi headless (``pi -p --mode json``) on the user's own login, for people whose agent is Pi.

Run as the user has it, Pi offers the model its read / bash / edit / write tools, loads the user's
extensions, skills, prompt templates and packages, and sends its own coding-agent prompt plus every
``AGENTS.md`` / ``CLAUDE.md`` from its agent dir and the cwd's ancestors, ``SYSTEM.md`` and
``APPEND_SYSTEM.md``; it saves a session file for every run. So each call runs isolated, in a
``ReplaySandbox``:

- a private agent dir (``PI_CODING_AGENT_DIR``) holding only what login needs: copies of the user's
  ``auth.json`` (API keys and OAuth tokens) and ``models.json`` (their custom providers and
  models), and a ``settings.json`` with only the keys that choose the model (``LOGIN_SETTINGS``)
  plus the replay's own (``REPLAY_SETTINGS``: Pi's retries off, the engine retries; no
  compaction). No extensions, skills, prompts, themes, packages, sessions or context files. Pi
  refreshes an expired OAuth token into ``auth.json``; a refreshed one is copied back so the user's
  login stays valid; while a login is about to expire, one call runs alone and refreshes it, and
  the calls made meanwhile wait and copy the refreshed one;
- the documents as the system prompt (``--system-prompt <file>``) in place of Pi's own; every tool
  off and nothing discovered (``ISOLATION_FLAGS``), ``--no-session`` (no session file), no
  start-up network calls or telemetry (``REPLAY_ENV``);
- the task on stdin, the JSON event stream on stdout: the last assistant message's text, usage,
  ``stopReason`` and ``errorMessage``.

What Pi still sends that cannot be turned off: two lines it appends to any system prompt, "Current
date: <date>" and "Current working directory: <the sandbox's empty directory>".

Pi exits 0 in JSON mode whatever happened, so the message decides: ``stopReason`` ``length`` is
``truncated``; ``error`` / ``aborted`` is an error classified by the provider's status at the start
of ``errorMessage`` (``401 {...}``); no assistant message at all (no login, an unknown model) is an
error from stderr; an answer with no text is ``empty``.

Options (spec ``pi-cli:model=anthropic/claude-sonnet-4-5``): ``model`` (Pi's ``--model`` pattern,
``provider/id`` allowed), ``command`` (path to ``pi``), ``timeout`` (seconds), ``price_*``.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.cli_common import (
    CliBackend,
    SYSTEM_PROMPT_FILE,
    ReplaySandbox,
    classify_failure,
    copy_back_refreshed,
    kind_for_status,
    run_cli,
)
from skillopt_sleep.backends.sdk_errors import clean_message
from skillopt_sleep.files import read_regular
from skillopt_sleep.paths import pi_home
from skillopt_sleep.types import Usage

COMMAND = "pi"  # the binary run unless backend_options.pi-cli.command names another
DEFAULT_TIMEOUT = 600.0
# Pi sends its own coding-agent prompt when the given one is empty.
EMPTY_INSTRUCTIONS = "Answer the user's message."

# Every tool off (built-in and extension), nothing discovered from the agent dir, the cwd or
# ~/.agents, no session file.
ISOLATION_FLAGS = [
    "--no-session",
    "--no-tools",
    "--no-extensions",
    "--no-skills",
    "--no-prompt-templates",
    "--no-themes",
    "--no-context-files",
]
# No version check, tool downloads or install telemetry.
REPLAY_ENV = {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}

AUTH_FILE = "auth.json"  # API keys and OAuth tokens, per provider; Pi refreshes tokens into it
MODELS_FILE = "models.json"  # the user's own providers and models (base URL, API, key, headers)
SETTINGS_FILE = "settings.json"
# The user's settings.json keys a replay keeps: which model, how it thinks, how it is reached.
LOGIN_SETTINGS = ("defaultProvider", "defaultModel", "defaultThinkingLevel", "thinkingBudgets", "transport")
REPLAY_SETTINGS: dict[str, Any] = {
    "retry": {"enabled": False, "provider": {"maxRetries": 0}},
    "compaction": {"enabled": False},
    "enableInstallTelemetry": False,
    "quietStartup": True,
}
_LIMIT = 1024 * 1024
# An OAuth login that expires within this many seconds is refreshed by one call at a time.
REFRESH_MARGIN = 120.0
_REFRESH_LOCK = threading.Lock()
# Pi's events that repeat the whole message so far on every streamed token: not needed, not kept.
_STREAMED = '{"type":"message_update"'
_STATUS = re.compile(r"^\s*(\d{3})\b")
_NO_LOGIN = re.compile(r"no api key found|use /login|no models? (are )?available", re.I)


def build_argv(system_prompt_file: str, *, command: str = COMMAND, model: str | None = None) -> list[str]:
    """The argv for one call; the task itself goes on stdin."""
    argv = [command, "-p", "--mode", "json", *ISOLATION_FLAGS, "--system-prompt", system_prompt_file]
    if model:
        argv += ["--model", model]
    return argv


def login_settings(user_dir: Path) -> dict[str, Any]:
    """The ``LOGIN_SETTINGS`` of the user's settings.json (nothing when missing or unreadable)."""
    try:
        settings = json.loads(read_regular(user_dir / SETTINGS_FILE, _LIMIT))
    except (OSError, ValueError):
        return {}
    if not isinstance(settings, dict):
        return {}
    return {key: settings[key] for key in LOGIN_SETTINGS if key in settings}


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


class PrivateAgentDir:
    """A ``PI_CODING_AGENT_DIR`` inside the sandbox with only what login needs (see the module
    docstring)."""

    def __init__(self, sandbox: ReplaySandbox, user_dir: Path):
        self.user_dir = user_dir
        self.path = sandbox.root / "pi-agent"
        self.path.mkdir(mode=0o700)
        settings = {**login_settings(user_dir), **REPLAY_SETTINGS}
        _write_private(self.path / SETTINGS_FILE, json.dumps(settings, indent=2).encode("utf-8"))
        self.copied: dict[str, bytes] = {}
        for name in (AUTH_FILE, MODELS_FILE):
            try:
                self.copied[name] = read_regular(user_dir / name, _LIMIT)
            except OSError:
                continue
            _write_private(self.path / name, self.copied[name])

    def sync_refreshed_login(self) -> None:
        """Pi may refresh an OAuth token during a call; keep the refreshed login, unless the
        user's own file changed meanwhile (then theirs is newer)."""
        copied = self.copied.get(AUTH_FILE)
        if copied is not None:
            copy_back_refreshed(copied, self.path / AUTH_FILE, self.user_dir / AUTH_FILE)


def login_expiring(user_dir: Path, margin: float = REFRESH_MARGIN) -> bool:
    """Whether an OAuth login in the user's auth.json expires within ``margin`` seconds (Pi keeps
    ``expires`` in epoch milliseconds and refreshes the token once it has passed)."""
    try:
        auth = json.loads(read_regular(user_dir / AUTH_FILE, _LIMIT))
    except (OSError, ValueError):
        return False
    if not isinstance(auth, dict):
        return False
    deadline = (time.time() + margin) * 1000
    return any(
        isinstance(cred, dict)
        and cred.get("type") == "oauth"
        and isinstance(cred.get("expires"), (int, float))
        and cred["expires"] <= deadline
        for cred in auth.values()
    )


@contextmanager
def one_refresh_at_a_time(user_dir: Path) -> Iterator[None]:
    """Calls that would each refresh an expiring login wait for the first: an OAuth refresh
    replaces the refresh token, so a second refresh with the old one would fail. Once the first
    call's refreshed login is back in the user's auth.json, the others copy that one."""
    if not login_expiring(user_dir):
        yield
        return
    with _REFRESH_LOCK:
        if login_expiring(user_dir):
            yield
            return
    yield


def not_streamed(line: str) -> bool:
    return not line.startswith(_STREAMED)


def assistant_messages(stdout: str) -> list[dict[str, Any]]:
    """The assistant messages Pi finished (``message_end`` events), in order."""
    found = []
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(event, dict) or event.get("type") != "message_end":
            continue
        message = event.get("message")
        if isinstance(message, dict) and message.get("role") == "assistant":
            found.append(message)
    return found


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(
        str(block.get("text") or "")
        for block in content or []
        if isinstance(block, dict) and block.get("type") == "text"
    )


def message_usage(message: dict[str, Any]) -> Usage:
    raw = message.get("usage")
    if not isinstance(raw, dict):
        return Usage()

    def count(key: str) -> int:
        value = raw.get(key)
        return max(0, int(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0

    return Usage(
        input_tokens=count("input"),
        output_tokens=count("output"),
        cache_read_tokens=count("cacheRead"),
        cache_write_tokens=count("cacheWrite"),
    )


def failure_kind(text: str) -> str:
    """The error kind of Pi's ``errorMessage`` (the provider's status first) or stderr."""
    status = _STATUS.match(text)
    if status:
        return kind_for_status(int(status.group(1)))
    if _NO_LOGIN.search(text):
        return "auth"
    return classify_failure(text)


class PiCliBackend(CliBackend):
    NAME = "pi-cli"
    COMMAND = COMMAND
    DEFAULT_TIMEOUT = DEFAULT_TIMEOUT

    def complete(self, request: Request) -> Completion:
        user_dir = pi_home()
        with ReplaySandbox.create() as sandbox, one_refresh_at_a_time(user_dir):
            agent_dir = PrivateAgentDir(sandbox, user_dir)
            system_file = sandbox.write(
                SYSTEM_PROMPT_FILE, request.system if request.system.strip() else EMPTY_INSTRUCTIONS
            )
            argv = build_argv(str(system_file), command=self.command, model=self.model)
            env = sandbox.env({**REPLAY_ENV, "PI_CODING_AGENT_DIR": str(agent_dir.path)})
            run = run_cli(argv, request.user, self.timeout, sandbox, env=env, keep=not_streamed)
            agent_dir.sync_refreshed_login()
        if run.error:
            return Completion(text="", error=run.error, error_message=run.error_message, latency=run.latency)
        completion = self._parse(run.stdout, run.stderr, run.returncode)
        completion.latency = run.latency
        return completion

    def _parse(self, stdout: str, stderr: str, returncode: int) -> Completion:
        messages = assistant_messages(stdout)
        if not messages:
            detail = stderr.strip() or stdout.strip() or "no output"
            return Completion(
                text="", error=failure_kind(detail), error_message=clean_message(f"pi exited {returncode}: {detail}")
            )
        last = messages[-1]
        usage = Usage()
        for message in messages:
            usage = usage + message_usage(message)
        model = str(last.get("model") or self.model or "pi")
        stop = last.get("stopReason")
        if stop == "length":
            return Completion(text="", usage=usage, model=model, truncated=True)
        if stop in ("error", "aborted"):
            detail = str(last.get("errorMessage") or stderr.strip() or f"request {stop}")
            return Completion(
                text="", usage=usage, error=failure_kind(detail), error_message=clean_message(f"pi: {detail}")
            )
        text = message_text(last).strip()
        if not text:
            return Completion(text="", usage=usage, model=model, error="empty", error_message="pi: empty answer")
        return Completion(text=text, usage=usage, model=model)


def from_options(options: dict[str, Any], model: str | None) -> PiCliBackend:
    return PiCliBackend(**PiCliBackend.options(options, model))
