"""Codex headless (``codex exec``) on the user's own login, for ChatGPT subscription users.

Run as the user has it, Codex offers the model executable tools (shell, stdin, web search, MCP,
sub-agents), starts the user's MCP servers and sends their ``~/.codex/AGENTS.md``, skills list and
its own coding-agent instructions — thousands of tokens of someone else's context in every replay.
So each call runs isolated, in a ``ReplaySandbox``:

- a private ``CODEX_HOME`` holding only what login needs: a copy of the user's ``auth.json`` and,
  from their ``config.toml``, the keys that choose the model and provider (``LOGIN_KEYS``) — no
  MCP servers, hooks, AGENTS.md, skills, profiles or state databases; a token Codex refreshes
  during the call is copied back so the user's login stays valid;
- the documents as the model instructions (``model_instructions_file``) in place of Codex's own,
  and no environment, permissions, apps or skills preamble;
- every tool off (``ISOLATION_FLAGS``), a read-only sandbox, ``--ephemeral`` (no rollout file);
- the task on stdin, the final message read from the ``-o`` file, ``--json`` events on stdout for
  usage and errors.

A stream that drops and reconnects (``{"type":"error","message":"Reconnecting…"}`` then
``turn.completed``) is a success. An auth or bad-request failure that Codex would retry five times
stops the process at the first report. A login prompt, a non-zero exit, a failed turn or an empty
answer is an error. A turn that failed with "Incomplete response returned, reason:
max_output_tokens" was cut off at the output-token limit: ``truncated``, not an error.

Options (spec ``codex-cli:model=gpt-5-codex``): ``model``, ``command`` (path to ``codex``),
``timeout`` (seconds), ``price_*``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from skillopt_sleep.backends.base import FATAL_ERRORS, Completion, Request
from skillopt_sleep.backends.cli_common import (
    CliBackend,
    SYSTEM_PROMPT_FILE,
    ReplaySandbox,
    classify_failure,
    copy_back_refreshed,
    looks_like_auth_failure,
    parse_usage,
    run_cli,
)
from skillopt_sleep.backends.sdk_errors import clean_message
from skillopt_sleep.files import read_regular, read_regular_text
from skillopt_sleep.types import Usage

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, published as tomli for older Pythons
    import tomli as tomllib

COMMAND = "codex"  # the binary run unless backend_options.codex-cli.command names another
DEFAULT_TIMEOUT = 600.0
OUTPUT_FILE = "last-message.txt"
# Codex refuses an empty instructions file, and without one it sends its own coding-agent prompt.
EMPTY_INSTRUCTIONS = "Answer the user's message."

# What Codex 0.169 offers unless told otherwise, each turned off: shell and exec tools, web
# search, sub-agents, goals, image viewing, asking the user; and the preambles it sends besides
# the model instructions.
ISOLATION_FLAGS = [
    "--disable",
    "shell_tool",
    "--disable",
    "unified_exec",
    "--disable",
    "multi_agent",
    "--disable",
    "goals",
    "--disable",
    "view_image",
    "--disable",
    "apps",
    "--disable",
    "plugins",
    "-c",
    'web_search="disabled"',
    "-c",
    "tools.experimental_request_user_input={enabled=false}",
    "-c",
    "include_environment_context=false",
    "-c",
    "include_permissions_instructions=false",
    "-c",
    "include_apps_instructions=false",
    "-c",
    "skills.include_instructions=false",
]

# The user's config.toml keys a replay keeps: which model, through which provider, logged in how.
LOGIN_KEYS = (
    "model",
    "model_provider",
    "model_providers",
    "model_reasoning_effort",
    "openai_base_url",
    "chatgpt_base_url",
    "forced_login_method",
    "forced_chatgpt_workspace_id",
    "cli_auth_credentials_store",
)
AUTH_FILE = "auth.json"
# How codex reports a Responses API answer that ended ``incomplete`` at the output-token limit.
_CUT_OFF = re.compile(r"incomplete response returned, reason: max_output_tokens", re.I)


def build_argv(
    instructions_file: str,
    output_file: str,
    *,
    command: str = COMMAND,
    model: str | None = None,
) -> list[str]:
    """The argv for one call; the task itself goes on stdin (the ``-`` argument)."""
    argv = [
        command,
        "exec",
        "--ephemeral",
        "--sandbox",
        "read-only",
        "--skip-git-repo-check",
        "--ignore-rules",
        "--color",
        "never",
        "--json",
        "-o",
        output_file,
        *ISOLATION_FLAGS,
        "-c",
        f"model_instructions_file={json.dumps(instructions_file)}",
    ]
    if model:
        argv += ["--model", model]
    argv.append("-")
    return argv


def user_codex_home() -> Path:
    configured = os.environ.get("CODEX_HOME")
    return Path(configured) if configured else Path.home() / ".codex"


def login_config(user_home: Path) -> dict[str, Any]:
    """The ``LOGIN_KEYS`` of the user's config.toml (nothing when it is missing or unreadable)."""
    try:
        config = tomllib.loads(read_regular_text(user_home / "config.toml", 1024 * 1024))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    return {key: config[key] for key in LOGIN_KEYS if key in config}


def to_toml(config: dict[str, Any]) -> str:
    """A TOML document for plain values: top-level keys, then one table per nested mapping."""
    lines = [f"{_key(k)} = {_value(v)}" for k, v in config.items() if not isinstance(v, dict)]
    for name, table in config.items():
        if isinstance(table, dict):
            lines += _table([name], table)
    return "\n".join(lines) + "\n"


def _table(path: list[str], table: dict[str, Any]) -> list[str]:
    lines = ["", "[" + ".".join(_key(p) for p in path) + "]"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in table.items() if not isinstance(v, dict)]
    for name, sub in table.items():
        if isinstance(sub, dict):
            lines += _table([*path, name], sub)
    return lines


def _key(key: str) -> str:
    return key if key and all(c.isalnum() or c in "_-" for c in key) and key.isascii() else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value))


class PrivateCodexHome:
    """A CODEX_HOME inside the sandbox with only what login needs (see the module docstring)."""

    def __init__(self, sandbox: ReplaySandbox, user_home: Path):
        self.user_home = user_home
        self.path = sandbox.root / "codex-home"
        self.path.mkdir(mode=0o700)
        login = login_config(user_home)
        (self.path / "config.toml").write_text(to_toml(login), encoding="utf-8")
        self.store = str(login.get("cli_auth_credentials_store") or "file")
        self.auth_copied: bytes | None = None
        try:
            self.auth_copied = read_regular(user_home / AUTH_FILE, 1024 * 1024)
        except OSError:
            return
        fd = os.open(self.path / AUTH_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(self.auth_copied)

    def unreachable_login(self) -> str:
        """Why a login failure may be this private home's doing: Codex keys a login it keeps in the
        system keyring by the CODEX_HOME path, so a private home cannot find it."""
        if self.store in ("keyring", "auto") and self.auth_copied is None:
            return (
                f'your Codex login is in the system keyring (cli_auth_credentials_store = "{self.store}"), '
                'which codex-cli replays cannot reach: set it to "file" and run `codex login` again'
            )
        return ""

    def sync_refreshed_login(self) -> None:
        """Codex may refresh the login during a call; keep the refreshed one, unless the user's
        own file changed meanwhile (then theirs is newer)."""
        if self.auth_copied is not None:
            copy_back_refreshed(self.auth_copied, self.path / AUTH_FILE, self.user_home / AUTH_FILE)


def read_events(stdout: str) -> list[dict[str, Any]]:
    events = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict):
                events.append(event)
    return events


def stop_on_fatal_error(line: str) -> tuple[str, str] | None:
    """Codex retries every failed request five times; an auth, model or bad-request failure will
    not get better, so the first report of one ends the call."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(event, dict) or event.get("type") != "error":
        return None
    message = str(event.get("message") or "")
    kind = classify_failure(message)
    return (kind, message) if kind in FATAL_ERRORS else None


def turn_failure(events: list[dict[str, Any]]) -> str:
    """Why the turn failed, or "" when it completed (errors before a ``turn.completed`` were
    reconnects that worked)."""
    for event in reversed(events):
        kind = event.get("type")
        if kind == "turn.completed":
            return ""
        if kind == "turn.failed":
            error = event.get("error")
            return str(error.get("message") if isinstance(error, dict) else error or "turn failed")
        if kind == "error":
            return str(event.get("message") or "error")
    return ""


def _usage(events: list[dict[str, Any]]) -> Usage:
    total = Usage()
    for event in events:
        if event.get("type") == "turn.completed":
            total = total + parse_usage(
                event.get("usage"),
                cached_key="cached_input_tokens",
                written_key="cache_write_input_tokens",
                input_includes_cached=True,
            )
    return total


class CodexCliBackend(CliBackend):
    NAME = "codex-cli"
    COMMAND = COMMAND
    DEFAULT_TIMEOUT = DEFAULT_TIMEOUT

    def complete(self, request: Request) -> Completion:
        with ReplaySandbox.create() as sandbox:
            home = PrivateCodexHome(sandbox, user_codex_home())
            instructions = sandbox.write(
                SYSTEM_PROMPT_FILE, request.system if request.system.strip() else EMPTY_INSTRUCTIONS
            )
            output_file = sandbox.files / OUTPUT_FILE
            argv = build_argv(str(instructions), str(output_file), command=self.command, model=self.model)
            env = sandbox.env({"CODEX_HOME": str(home.path)})
            run = run_cli(argv, request.user, self.timeout, sandbox, env=env, watch=stop_on_fatal_error)
            home.sync_refreshed_login()
            keyring_note = home.unreachable_login()
            try:
                answer = read_regular_text(output_file, errors="replace").strip()
            except OSError:
                answer = ""
        if run.error:
            message = run.error_message
            if run.error == "auth" and keyring_note:
                message = clean_message(f"codex: {keyring_note} ({message})")
            return Completion(text="", error=run.error, error_message=message, latency=run.latency)
        events = read_events(run.stdout)
        failure = turn_failure(events)
        if failure and _CUT_OFF.search(failure):
            return Completion(
                text="", usage=_usage(events), model=self.model or "codex", latency=run.latency, truncated=True
            )
        if run.returncode != 0 or failure or looks_like_auth_failure(answer):
            detail = failure or answer or run.stderr.strip() or run.stdout.strip() or "no output"
            kind = classify_failure(detail)
            if kind == "auth" and keyring_note:  # the explanation first: the detail may be cut
                detail = f"{keyring_note} ({detail})"
            return Completion(
                text="",
                error=kind,
                latency=run.latency,
                error_message=clean_message(f"codex exited {run.returncode}: {detail}"),
            )
        return Completion(text=answer, usage=_usage(events), model=self.model or "codex", latency=run.latency)


def from_options(options: dict[str, Any], model: str | None) -> CodexCliBackend:
    return CodexCliBackend(**CodexCliBackend.options(options, model))
