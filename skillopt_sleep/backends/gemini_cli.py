"""Gemini CLI headless (``gemini -p``) on the user's own login.

Run as the user has it, Gemini CLI sends its own coding-agent system prompt, the user's
``GEMINI.md`` files, a folder tree, declarations of a dozen tools, and starts their MCP servers,
hooks and extensions. So each call runs isolated, in a ``ReplaySandbox``:

- a private ``GEMINI_CLI_HOME`` whose ``.gemini`` holds only what login needs: copies of
  ``LOGIN_FILES`` (the Google sign-in tokens, the signed-in account, the encrypted-file store of an
  API key entered in the CLI) and a ``settings.json`` made of the user's ``LOGIN_SETTINGS`` (auth
  type, model, billing) over ``DEFAULT_MODEL_SETTINGS``, plus ``ISOLATION_SETTINGS``; the ``LOGIN_ENV_KEYS`` the CLI would read from
  the user's ``~/.gemini/.env`` or ``~/.env`` are passed in the environment. A sign-in token the
  CLI refreshes during the call is copied back, so the user's login stays valid. No GEMINI.md,
  extensions, skills, agents, commands, MCP servers, hooks, policies or sessions of the user;
  system settings files are pointed at nothing, and the user's environment variables that would
  bring context or send the call elsewhere (``DROPPED_ENV``) are removed;
- the documents as the whole system prompt (``GEMINI_SYSTEM_MD``) in place of the CLI's own;
- no tool declared at all (``tools.core = []``), no sub-agents, no directory tree, no
  GEMINI.md discovery beyond the empty working directory, the CLI's own retries off
  (``general.maxAttempts = 1``: the engine's retry layer decides, so a 401 or 429 ends the call at
  the first report), no update check, usage statistics or IDE connection;
- the task on stdin (a task that starts with ``/`` gets a leading newline, or the CLI would run
  it as one of its slash commands), the answer and usage from ``--output-format json``.

What the CLI still sends that cannot be turned off: a first user part ``<session_context>`` with
the date, the OS and the private temporary directory, before the task. In the system file the
CLI replaces ``${AgentSkills}``, ``${SubAgents}``, ``${AvailableTools}`` and ``${<tool>_ToolName}``;
a document containing those literal strings is sent with them replaced.

The JSON output does not say why the model stopped, so the CLI's telemetry is written to a
private file (``target: local``, prompts not logged) and the main call's ``finish_reasons``
read from it: ``length`` is an answer cut off at the output-token limit (``truncated``).

Options (spec ``gemini-cli:model=gemini-2.5-pro``): ``model``, ``command`` (path to ``gemini``),
``timeout`` (seconds), ``price_*``. Without a model the user's ``model.name`` applies, else the
CLI's ``pro`` alias: the model its router would fall back to, without the router's extra
small-model call, so a replay is one model request. A user whose ``model.name`` is ``auto`` keeps
the router and its extra call.
"""

from __future__ import annotations

import json
import os
import re
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
    looks_like_auth_failure,
    run_cli,
)
from skillopt_sleep.backends.sdk_errors import clean_message
from skillopt_sleep.files import read_regular, read_regular_text
from skillopt_sleep.types import Usage

COMMAND = "gemini"  # the binary run unless backend_options.gemini-cli.command names another
DEFAULT_TIMEOUT = 600.0
# With an empty system file the CLI would send an empty system instruction; say something neutral.
EMPTY_INSTRUCTIONS = "Answer the user's message."
TELEMETRY_FILE = "telemetry.jsonl"
MAX_TELEMETRY_BYTES = 64 * 1024 * 1024

# Files of the user's ~/.gemini that a login needs: Google sign-in tokens (refreshed by the CLI),
# the signed-in account (without it the CLI asks Google for it on every start), and the
# encrypted-file fallback of the CLI's keychain (an API key entered in the CLI; sign-in tokens
# under GEMINI_FORCE_ENCRYPTED_FILE_STORAGE). A key in the native keychain is found without a
# file: the keychain is keyed by service name, not by the home directory.
LOGIN_FILES = ("oauth_creds.json", "google_accounts.json", "gemini-credentials.json")
REFRESHED_FILES = ("oauth_creds.json", "gemini-credentials.json")
# The keys the CLI reads from ~/.gemini/.env or ~/.env for a login (its own auth whitelist).
LOGIN_ENV_KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION")
# The settings a replay keeps from the user's: how they log in, which model, how they are billed.
LOGIN_SETTINGS = (("security", "auth"), ("model", "name"), ("billing",))

# The model when the person set none. The CLI's own default, ``auto``, asks its model router
# first: one more request, to a small model, before the task's. ``pro`` is the model the router
# falls back to (the newest Pro model the account may use) and skips the router entirely.
DEFAULT_MODEL_SETTINGS: dict[str, Any] = {"model": {"name": "pro"}}

# Everything else the CLI would bring or do, off.
ISOLATION_SETTINGS: dict[str, Any] = {
    "general": {
        "enableAutoUpdate": False,
        "enableAutoUpdateNotification": False,
        "maxAttempts": 1,
        "retryFetchErrors": False,
        "checkpointing": {"enabled": False},
        "sessionRetention": {"enabled": False},
    },
    "security": {"folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "ide": {"enabled": False},
    "tools": {"core": [], "sandbox": False},
    "mcpServers": {},
    "hooksConfig": {"enabled": False},
    "skills": {"enabled": False},
    "experimental": {"enableAgents": False},
    "context": {"includeDirectoryTree": False, "memoryBoundaryMarkers": [], "discoveryMaxDirs": 0},
    "model": {"skipNextSpeakerCheck": True, "disableLoopDetection": True},
    "advanced": {"ignoreLocalEnv": True},
}

# The user's environment variables that would bring their context into a replay, write files
# elsewhere or send the call's telemetry to their collector; the replay sets its own.
DROPPED_ENV = (
    "GEMINI_SYSTEM_MD",
    "GEMINI_WRITE_SYSTEM_MD",
    "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
    "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
    "GEMINI_CLI_TRUSTED_FOLDERS_PATH",
    "GEMINI_CLI_ACTIVITY_LOG_TARGET",
    "GEMINI_DEBUG_LOG_FILE",
    "GEMINI_CONTEXT_TRACE_DIR",
    "GEMINI_SANDBOX",
)
DROPPED_ENV_PREFIXES = ("GEMINI_TELEMETRY_", "GEMINI_CLI_IDE_", "GEMINI_PROMPT_", "OTEL_")


def build_argv(*, command: str = COMMAND, model: str | None = None) -> list[str]:
    """The argv for one call; the task goes on stdin (``-p ""`` is appended to it)."""
    argv = [command, "--prompt", "", "--output-format", "json", "--skip-trust", "--approval-mode", "default"]
    if model:
        argv += ["--model", model]
    return argv


def user_home() -> Path:
    """The directory holding the user's ``.gemini`` (the CLI reads ``GEMINI_CLI_HOME``)."""
    configured = os.environ.get("GEMINI_CLI_HOME")
    return Path(configured) if configured else Path.home()


def system_settings_paths() -> list[Path]:
    """The system defaults and system settings files, lowest precedence first."""
    if os.name == "nt":  # pragma: no cover - Windows
        base = Path("C:/ProgramData/gemini-cli")
    elif os.uname().sysname == "Darwin":
        base = Path("/Library/Application Support/GeminiCli")
    else:
        base = Path("/etc/gemini-cli")
    defaults = os.environ.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or str(base / "system-defaults.json")
    system = os.environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or str(base / "settings.json")
    return [Path(defaults), Path(system)]


def without_comments(text: str) -> str:
    """``text`` less its ``//`` and ``/* */`` comments outside strings: the CLI reads its settings
    files as JSON with comments."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _read_settings(path: Path) -> dict[str, Any]:
    try:
        parsed = json.loads(without_comments(read_regular_text(path, 1024 * 1024)))
    except (OSError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def login_settings(home: Path, system_files: list[Path] | None = None) -> dict[str, Any]:
    """The ``LOGIN_SETTINGS`` of the user's settings, with the system files' precedence: system
    defaults, then the user's, then system settings (which an administrator enforces)."""
    files = system_files if system_files is not None else system_settings_paths()
    layers = (
        [files[0], home / ".gemini" / "settings.json", *files[1:]] if files else [home / ".gemini" / "settings.json"]
    )
    kept: dict[str, Any] = {}
    for layer in layers:
        settings = _read_settings(layer)
        for path in LOGIN_SETTINGS:
            value: Any = settings
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if value is None:
                continue
            target = kept
            for key in path[:-1]:
                target = target.setdefault(key, {})
            target[path[-1]] = value
    return kept


def login_env(home: Path) -> dict[str, str]:
    """The ``LOGIN_ENV_KEYS`` the CLI would load from the user's first env file (``.gemini/.env``,
    then ``.env``), for those not already set in the environment."""
    for name in (".gemini/.env", ".env"):
        try:
            text = read_regular_text(home / name, 1024 * 1024, errors="replace")
        except OSError:
            continue
        found = {}
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("export "):
                line = line[len("export ") :].strip()
            key, eq, value = line.partition("=")
            key, value = key.strip(), value.strip()
            if not eq or key not in LOGIN_ENV_KEYS or key in os.environ:
                continue
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            else:
                value = value.split(" #", 1)[0].strip()
            found[key] = value
        return found
    return {}


def merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


class PrivateGeminiHome:
    """A GEMINI_CLI_HOME inside the sandbox with only what login needs (see the module docstring)."""

    def __init__(self, sandbox: ReplaySandbox, home: Path):
        self.user_dir = home / ".gemini"
        self.path = sandbox.root / "gemini-home"
        self.dir = self.path / ".gemini"
        self.dir.mkdir(mode=0o700, parents=True)
        self.telemetry = sandbox.files / TELEMETRY_FILE
        settings = merged(merged(DEFAULT_MODEL_SETTINGS, login_settings(home)), ISOLATION_SETTINGS)
        (self.dir / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
        self.login_env = login_env(home)
        self.copied: dict[str, bytes] = {}
        for name in LOGIN_FILES:
            try:
                data = read_regular(self.user_dir / name, 1024 * 1024)
            except OSError:
                continue
            _write_private(self.dir / name, data)
            self.copied[name] = data

    def env(self, sandbox: ReplaySandbox, system_file: Path) -> dict[str, str]:
        """The child's environment: the caller's, less ``DROPPED_ENV``, with the private home,
        the system prompt file, no system settings and telemetry only to a private file."""
        nowhere = sandbox.files / "no-system-settings.json"
        env = sandbox.env()
        for name in list(env):
            if name in DROPPED_ENV or name.startswith(DROPPED_ENV_PREFIXES):
                del env[name]
        env.update(self.login_env)
        env.update(
            {
                "GEMINI_CLI_HOME": str(self.path),
                "GEMINI_SYSTEM_MD": str(system_file),
                "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(nowhere),
                "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(nowhere),
                "GEMINI_TELEMETRY_ENABLED": "true",
                "GEMINI_TELEMETRY_TARGET": "local",
                "GEMINI_TELEMETRY_OUTFILE": str(self.telemetry),
                "GEMINI_TELEMETRY_LOG_PROMPTS": "false",
                "GEMINI_TELEMETRY_USE_COLLECTOR": "false",
                # One node process instead of a launcher that starts a second one.
                "GEMINI_CLI_NO_RELAUNCH": "true",
            }
        )
        return env

    def sync_refreshed_login(self) -> None:
        """The CLI rewrites the sign-in tokens when it refreshes them: keep the refreshed ones."""
        for name, copied in self.copied.items():
            if name in REFRESHED_FILES:
                copy_back_refreshed(copied, self.dir / name, self.user_dir / name)


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def json_documents(text: str) -> list[Any]:
    """The JSON values in ``text`` that start a line (the CLI may print other lines around its
    result, and its telemetry file is a run of pretty-printed objects)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    index = 0
    while True:
        start = text.find("{", index)
        if start < 0:
            return found
        if start == 0 or text[start - 1] == "\n":
            try:
                value, end = decoder.raw_decode(text, start)
            except json.JSONDecodeError:
                index = start + 1
                continue
            found.append(value)
            index = end
        else:
            index = start + 1


def result_object(stdout: str, stderr: str) -> dict[str, Any] | None:
    """The CLI's JSON result: ``response`` and ``stats`` on stdout, or ``error`` on stderr."""
    for stream in (stdout, stderr):
        for doc in reversed(json_documents(stream)):
            if isinstance(doc, dict) and ("response" in doc or "error" in doc or "stats" in doc):
                return doc
    return None


def parse_stats(stats: Any) -> Usage:
    """Token counts summed over every model the call used (a model router's call included):
    ``input`` is the prompt less its cached part, thinking tokens are billed as output."""
    models = stats.get("models") if isinstance(stats, dict) else None
    total = Usage()
    if not isinstance(models, dict):
        return total
    for entry in models.values():
        tokens = entry.get("tokens") if isinstance(entry, dict) else None
        if not isinstance(tokens, dict):
            continue

        def count(key: str, tokens: dict[str, Any] = tokens) -> int:
            value = tokens.get(key)
            return max(0, int(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0

        total = total + Usage(
            input_tokens=count("input") + count("tool"),
            output_tokens=count("candidates") + count("thoughts"),
            cache_read_tokens=count("cached"),
        )
    return total


def cut_off(telemetry: Path) -> bool:
    """Whether the last main-model response stopped at the output-token limit (OpenTelemetry
    finish reason ``length``), from the private telemetry file."""
    try:
        text = read_regular_text(telemetry, MAX_TELEMETRY_BYTES, errors="replace")
    except OSError:
        return False
    last: list[Any] | None = None
    for record in json_documents(text):
        attributes = record.get("attributes") if isinstance(record, dict) else None
        if not isinstance(attributes, dict) or attributes.get("event.name") != "gemini_cli.api_response":
            continue
        if attributes.get("role", "main") == "main" and isinstance(attributes.get("finish_reasons"), list):
            last = attributes["finish_reasons"]
    return bool(last) and "length" in last  # type: ignore[operator]


def task_text(user: str) -> str:
    """The task as the CLI's input: one that starts with ``/`` would run a slash command."""
    return "\n" + user if user.startswith("/") and not user.startswith(("//", "/*")) else user


# "The model returned an empty response with no text or thoughts. …"
_EMPTY = re.compile(r"returned an empty response", re.I)


def _model(result: dict[str, Any], fallback: str | None) -> str:
    stats = result.get("stats")
    models = stats.get("models") if isinstance(stats, dict) else None
    if isinstance(models, dict) and models:
        return str(list(models)[-1])
    return fallback or "gemini"


# How the CLI says it has no usable login: "When using Gemini API, you must specify the
# GEMINI_API_KEY environment variable", "Please set an Auth method …", "Manual authorization is
# required but the current session is non-interactive".
_NO_LOGIN = re.compile(r"you must specify|please set an auth method|manual authorization is required", re.I)
# Lines the CLI prints on stderr on every run, which would crowd the reason out of a message.
_NOISE = re.compile(r"^(Warning: .*color|Ripgrep is not available|The 'metricReader' option is deprecated)")


def _failure(detail: str, returncode: int, status: Any = None) -> Completion:
    known = isinstance(status, int) and not isinstance(status, bool) and 400 <= status < 600
    if known:
        kind = kind_for_status(status)
    else:
        kind = "auth" if _NO_LOGIN.search(detail) else classify_failure(detail)
    return Completion(text="", error=kind, error_message=clean_message(f"gemini exited {returncode}: {detail}"))


def _stderr(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line.strip() and not _NOISE.match(line.strip()))


class GeminiCliBackend(CliBackend):
    NAME = "gemini-cli"
    COMMAND = COMMAND
    DEFAULT_TIMEOUT = DEFAULT_TIMEOUT

    def complete(self, request: Request) -> Completion:
        with ReplaySandbox.create() as sandbox:
            home = PrivateGeminiHome(sandbox, user_home())
            system_file = sandbox.write(
                SYSTEM_PROMPT_FILE, request.system if request.system.strip() else EMPTY_INSTRUCTIONS
            )
            argv = build_argv(command=self.command, model=self.model)
            run = run_cli(argv, task_text(request.user), self.timeout, sandbox, env=home.env(sandbox, system_file))
            home.sync_refreshed_login()
            truncated = cut_off(home.telemetry)
        if run.error:
            return Completion(text="", error=run.error, error_message=run.error_message, latency=run.latency)
        completion = self._parse(run.stdout, run.stderr, run.returncode, truncated)
        completion.latency = run.latency
        return completion

    def _parse(self, stdout: str, stderr: str, returncode: int, truncated: bool) -> Completion:
        result = result_object(stdout, stderr)
        if result is None:
            text = (_stderr(stderr) + "\n" + stdout.strip()).strip()
            return _failure(text or "no output", returncode)
        usage = parse_stats(result.get("stats"))
        model = _model(result, self.model)
        error = result.get("error")
        if isinstance(error, dict) or error:
            details = error if isinstance(error, dict) else {"message": str(error)}
            message = str(details.get("message") or details.get("type") or "error")
            if truncated or "MAX_TOKENS" in message:  # stopped at the limit before any text
                return Completion(text="", usage=usage, model=model, truncated=True)
            if _EMPTY.search(message):
                return Completion(
                    text="", usage=usage, model=model, error="empty", error_message=clean_message(message)
                )
            return _failure(message, returncode, details.get("code"))
        answer = result.get("response")
        answer = answer if isinstance(answer, str) else ""
        if truncated:
            return Completion(text="", usage=usage, model=model, truncated=True)
        if returncode != 0 or looks_like_auth_failure(answer):
            return _failure(answer or _stderr(stderr) or "error", returncode)
        if not answer.strip():
            return Completion(
                text="", usage=usage, model=model, error="empty", error_message="gemini returned an empty answer"
            )
        return Completion(text=answer, usage=usage, model=model)


def from_options(options: dict[str, Any], model: str | None) -> GeminiCliBackend:
    return GeminiCliBackend(**GeminiCliBackend.options(options, model))
