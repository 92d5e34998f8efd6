"""OpenCode headless (``opencode run``) on the user's own login.

Run as the user has it, OpenCode sends its own coding-agent prompt, the user's ``AGENTS.md`` (global
and every one from the working directory up), ``~/.claude/CLAUDE.md``, offers a dozen executable
tools, starts the user's MCP servers and plugins, and records every run in the session database
under ``$XDG_DATA_HOME/opencode``. So each call runs isolated, in a ``ReplaySandbox``:

- a private HOME with private ``XDG_CONFIG_HOME`` / ``XDG_DATA_HOME`` / ``XDG_CACHE_HOME`` /
  ``XDG_STATE_HOME`` inside it, holding only what login needs: a copy of the user's
  ``$XDG_DATA_HOME/opencode/auth.json`` (API keys and OAuth tokens), the ``LOGIN_KEYS`` of their
  global ``opencode.json`` (which model, which providers and how to reach them) and their cached
  models.dev catalogue; the session database, logs, locks and snapshots OpenCode writes land there
  and are removed with it; a token refreshed during the call is copied back, and while an OAuth
  login is about to expire one call runs alone and refreshes it (a refresh replaces the refresh
  token), the calls made meanwhile wait and copy the refreshed one;
- a custom primary agent whose ``prompt`` is the documents (in place of OpenCode's own prompt),
  every tool off and every permission denied, no instruction files (``instructions: []``, no
  project config, no Claude Code files, no external skills or plugins), no MCP servers, LSP,
  formatters, snapshots or sharing, no update check or models.dev fetch, and the plugin package
  marked installed in the private config dir (else every run fetches it from npm);
- the user's ``OPENCODE_*`` variables dropped (they would name another config, database or
  permission set), except the login ones (``LOGIN_ENV``);
- the task on stdin, a fixed ``--title`` (no title-generation call to the model), ``--format json``
  events on stdout for the answer, usage and errors.

What OpenCode still sends and cannot be turned off: a line naming the model and an ``<env>`` block
(working directory — the empty sandbox —, platform, date) after the documents, and its session id
in ``x-session-id`` headers. An admin-managed config (``/etc/opencode``) still applies: OpenCode
puts it above every other.

OpenCode retries a rate limit or a server error five times (for as long as a ``Retry-After`` says)
and reports the retries only in its log: with ``--print-logs`` the first ``stream error`` in the
log ends the call, unless OpenCode itself fails the call at once (a 401 or 400 comes on stdout
with its status). A step that finished for ``length`` was cut off at the output-token limit:
``truncated``, not an error.

Options (spec ``opencode-cli:model=anthropic/claude-sonnet-4-5``): ``model`` (``provider/model``),
``command`` (path to ``opencode``), ``timeout`` (seconds), ``price_*``.
"""

from __future__ import annotations

import json
import os
import re
import time
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
    parse_usage,
    run_cli,
)
from skillopt_sleep.backends.codex_cli import read_events  # the same one JSON object a line
from skillopt_sleep.backends.gemini_cli import without_comments  # the same JSON with comments
from skillopt_sleep.backends.pi_cli import one_refresh_at_a_time  # the same auth.json format
from skillopt_sleep.backends.sdk_errors import clean_message
from skillopt_sleep.files import read_regular, read_regular_text
from skillopt_sleep.types import Usage

COMMAND = "opencode"  # the binary run unless backend_options.opencode-cli.command names another
DEFAULT_TIMEOUT = 600.0
AGENT = "skillopt-replay"
TITLE = "skillopt-sleep replay"
# Without a prompt of its own the agent gets OpenCode's coding-agent prompt.
EMPTY_INSTRUCTIONS = "Answer the user's message."

# The user's global config keys a replay keeps: which model, through which providers, reached how.
LOGIN_KEYS = ("model", "provider", "enabled_providers", "disabled_providers")
# The user's OPENCODE_* variables a replay keeps: credentials given in the environment.
LOGIN_ENV = ("OPENCODE_AUTH_CONTENT", "OPENCODE_API_KEY")
AUTH_FILE = "auth.json"
MODELS_CACHE = "models.json"
PLUGIN_PACKAGE = "@opencode-ai/plugin"
CONFIG_NAMES = ("config.json", "opencode.json", "opencode.jsonc")  # read in this order, later wins

# Everything the user may have set up that reaches a model call, turned off for the replay.
ISOLATION_CONFIG: dict[str, Any] = {
    "autoupdate": False,
    "share": "disabled",
    "snapshot": False,
    "instructions": [],
    "plugin": [],
    "mcp": {},
    "lsp": False,
    "formatter": False,
    "compaction": {"auto": False, "prune": False},
    "permission": {"*": "deny"},
}
ISOLATION_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "OPENCODE_DISABLE_AUTOCOMPACT": "1",
    "OPENCODE_PURE": "1",
}
# The first report of a failed model request in OpenCode's log (``--print-logs``).
_STREAM_ERROR = re.compile(r'message="stream error".*?error\.error="(?P<error>.*)"\s*$')
# How long a reported failure may take to end the run by itself (a 401 does, at once) before the
# call is stopped; shorter than OpenCode's first retry delay (two seconds).
STREAM_ERROR_GRACE = 1.5


def build_argv(*, command: str = COMMAND, model: str | None = None) -> list[str]:
    """The argv for one call; the task itself goes on stdin."""
    argv = [
        command,
        "run",
        "--format",
        "json",
        "--agent",
        AGENT,
        "--title",
        TITLE,
        "--pure",
        "--print-logs",
        "--log-level",
        "ERROR",
    ]
    if model:
        argv += ["--model", model]
    return argv


def replay_config(login: dict[str, Any], instructions_file: Path) -> dict[str, Any]:
    """The private ``opencode.json``: the login keys, everything else off, and the replay agent
    (its prompt read from a file, so nothing in the documents is taken for a ``{env:…}``)."""
    config: dict[str, Any] = {**login, **ISOLATION_CONFIG}
    config["default_agent"] = AGENT
    config["agent"] = {
        AGENT: {
            "mode": "primary",
            "description": "Answers with the given documents as its only instructions.",
            "prompt": "{file:" + str(instructions_file) + "}",
            "tools": {"*": False},
            "permission": {"*": "deny"},
        }
    }
    return config


def _xdg(name: str, default: str) -> Path:
    value = os.environ.get(name)
    return Path(value) if value and os.path.isabs(value) else Path.home() / default


def user_config_dir() -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config") / "opencode"


def user_data_dir() -> Path:
    return _xdg("XDG_DATA_HOME", ".local/share") / "opencode"


def user_cache_dir() -> Path:
    return _xdg("XDG_CACHE_HOME", ".cache") / "opencode"


def strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas (OpenCode's config format) as plain JSON."""
    return re.sub(r",(\s*[}\]])", r"\1", without_comments(text))


def _absolute_file_refs(text: str, base: Path) -> str:
    """``{file:…}`` references made absolute: OpenCode resolves ``~`` against HOME (private in a
    replay) and a relative path against the config file's own directory."""

    def absolute(match: re.Match[str]) -> str:
        path = match.group(1)
        if path.startswith("~/"):
            path = str(Path.home() / path[2:])
        elif not os.path.isabs(path):
            path = str(base / path)
        return "{file:" + path + "}"

    return re.sub(r"\{file:([^}]+)\}", absolute, text)


def _login_keys(text: str, base: Path) -> dict[str, Any]:
    try:
        config = json.loads(strip_jsonc(_absolute_file_refs(text, base)))
    except ValueError:
        return {}
    return {key: config[key] for key in LOGIN_KEYS if isinstance(config, dict) and key in config}


def login_config(config_dir: Path) -> dict[str, Any]:
    """The ``LOGIN_KEYS`` of the user's global config files and of ``OPENCODE_CONFIG`` /
    ``OPENCODE_CONFIG_CONTENT`` when set (nothing from a file that is missing or unreadable)."""
    found: dict[str, Any] = {}
    files = [config_dir / name for name in CONFIG_NAMES]
    if os.environ.get("OPENCODE_CONFIG"):
        files.append(Path(os.environ["OPENCODE_CONFIG"]).expanduser())
    for path in files:
        try:
            text = read_regular_text(path, 1024 * 1024)
        except (OSError, ValueError):
            continue
        found.update(_login_keys(text, path.parent))
    content = os.environ.get("OPENCODE_CONFIG_CONTENT")
    if content:
        found.update(_login_keys(content, Path.cwd()))
    return found


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _mark_plugin_package_installed(config_dir: Path) -> None:
    """OpenCode installs its plugin package from npm into every config dir it reads, in the
    background of each run, unless the dir already lists it as installed: a replay needs no plugin,
    so the private config dir says it is there (an empty ``node_modules`` and the package in
    ``package.json`` and ``package-lock.json``)."""
    dependencies = {PLUGIN_PACKAGE: "*"}
    (config_dir / "node_modules").mkdir()
    (config_dir / "package.json").write_text(json.dumps({"dependencies": dependencies}), encoding="utf-8")
    lock = {"lockfileVersion": 3, "packages": {"": {"dependencies": dependencies}}}
    (config_dir / "package-lock.json").write_text(json.dumps(lock), encoding="utf-8")


class PrivateOpenCodeHome:
    """A HOME and XDG dirs inside the sandbox with only what login needs (see the module docstring)."""

    def __init__(self, sandbox: ReplaySandbox, instructions_file: Path):
        self.user_auth = user_data_dir() / AUTH_FILE
        self.home = sandbox.root / "home"
        self.config_home = self.home / ".config"
        self.data_home = self.home / ".local" / "share"
        self.cache_home = self.home / ".cache"
        self.state_home = self.home / ".local" / "state"
        for directory in (self.config_home, self.data_home, self.cache_home, self.state_home):
            (directory / "opencode").mkdir(mode=0o700, parents=True)
        config_dir = self.config_home / "opencode"
        config = replay_config(login_config(user_config_dir()), instructions_file)
        (config_dir / "opencode.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        _mark_plugin_package_installed(config_dir)
        try:  # a newer model list than the one built into the CLI, which may not know the user's model
            _write_private(self.cache_home / "opencode" / MODELS_CACHE, read_regular(user_cache_dir() / MODELS_CACHE))
        except OSError:
            pass
        self.auth_copied: bytes | None = None
        try:
            self.auth_copied = read_regular(self.user_auth, 1024 * 1024)
        except OSError:
            return
        _write_private(self.private_auth, self.auth_copied)

    @property
    def private_auth(self) -> Path:
        return self.data_home / "opencode" / AUTH_FILE

    def env(self, sandbox: ReplaySandbox) -> dict[str, str]:
        env = {
            name: value for name, value in sandbox.env().items() if not name.startswith("OPENCODE") or name in LOGIN_ENV
        }
        env.update(ISOLATION_ENV)
        env.update(
            PWD=str(sandbox.cwd),  # OpenCode takes its working directory (and project) from PWD
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.config_home),
            XDG_DATA_HOME=str(self.data_home),
            XDG_CACHE_HOME=str(self.cache_home),
            XDG_STATE_HOME=str(self.state_home),
            XDG_RUNTIME_DIR=str(sandbox.tmp),  # sockets, were a language server ever started
        )
        return env

    def sync_refreshed_login(self) -> None:
        """An OAuth login refreshed during the call is kept (``copy_back_refreshed``)."""
        if self.auth_copied is not None:
            copy_back_refreshed(self.auth_copied, self.private_auth, self.user_auth)


def stop_on_stream_error(line: str) -> tuple[str, str] | None:
    """A failed model request in OpenCode's log: OpenCode would retry it (a rate limit, a server
    error) for as long as the provider asks, so it ends the call, unless OpenCode ends the run
    itself within ``STREAM_ERROR_GRACE`` (then its own error event says what happened)."""
    match = _STREAM_ERROR.search(line)
    if match is None:
        return None
    message = match.group("error").replace('\\"', '"')
    time.sleep(STREAM_ERROR_GRACE)
    return classify_failure(message), message


def event_failure(events: list[dict[str, Any]], log: str = "") -> tuple[str, str] | None:
    """The error kind and message of the run's last ``error`` event, if it had one. An error
    OpenCode reports only as "Unexpected server error" names a ``ref`` whose cause is in ``log``."""
    for event in reversed(events):
        if event.get("type") != "error":
            continue
        error = event.get("error")
        data = error.get("data") if isinstance(error, dict) else None
        data = data if isinstance(data, dict) else {}
        name = str(error.get("name") or "") if isinstance(error, dict) else ""
        message = str(data.get("message") or name or error or "error")
        status = data.get("statusCode")
        if isinstance(status, int) and not isinstance(status, bool):
            return kind_for_status(status), f"{status} {message}"
        ref = data.get("ref")
        logged = re.search(rf'ref={re.escape(str(ref))} error="(?P<error>[^"]*)"', log) if ref else None
        if logged:
            message = logged.group("error")
        if name == "ProviderAuthError" or message.startswith("ProviderAuthError"):
            return "auth", message
        if "ModelNotFound" in name or message.startswith("ProviderModelNotFoundError"):
            return "model", message
        return classify_failure(f"{name} {message}", default="unknown"), message
    return None


def _parts(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    parts = [event.get("part") for event in events if event.get("type") == kind]
    return [part for part in parts if isinstance(part, dict)]


def answer_text(events: list[dict[str, Any]]) -> str:
    return "".join(str(part.get("text") or "") for part in _parts(events, "text")).strip()


def _usage(events: list[dict[str, Any]]) -> Usage:
    total = Usage()
    for part in _parts(events, "step_finish"):
        tokens = part.get("tokens")
        if not isinstance(tokens, dict):
            continue
        cache = tokens.get("cache")
        cache = cache if isinstance(cache, dict) else {}
        # OpenCode reports input without the cached tokens, and output without the reasoning.
        output = sum(v for v in (tokens.get("output"), tokens.get("reasoning")) if isinstance(v, int))
        raw = {
            "input_tokens": tokens.get("input"),
            "output_tokens": output,
            "cache_read": cache.get("read"),
            "cache_write": cache.get("write"),
        }
        total = total + parse_usage(
            raw, cached_key="cache_read", written_key="cache_write", input_includes_cached=False
        )
    return total


def cut_off(events: list[dict[str, Any]]) -> bool:
    finishes = _parts(events, "step_finish")
    return bool(finishes) and finishes[-1].get("reason") == "length"


class OpenCodeCliBackend(CliBackend):
    NAME = "opencode-cli"
    COMMAND = COMMAND
    DEFAULT_TIMEOUT = DEFAULT_TIMEOUT

    def complete(self, request: Request) -> Completion:
        with ReplaySandbox.create() as sandbox, one_refresh_at_a_time(user_data_dir()):
            instructions = sandbox.write(
                SYSTEM_PROMPT_FILE, request.system if request.system.strip() else EMPTY_INSTRUCTIONS
            )
            home = PrivateOpenCodeHome(sandbox, instructions)
            argv = build_argv(command=self.command, model=self.model)
            run = run_cli(
                argv, request.user, self.timeout, sandbox, env=home.env(sandbox), watch_stderr=stop_on_stream_error
            )
            home.sync_refreshed_login()
        model = self.model or "opencode"
        events = read_events(run.stdout)
        failure = event_failure(events, run.stderr)
        if failure is not None:  # OpenCode's own report, with the provider's status, comes first
            kind, detail = failure
            return Completion(
                text="", error=kind, latency=run.latency, error_message=clean_message(f"opencode: {detail}")
            )
        if run.error:
            return Completion(text="", error=run.error, error_message=run.error_message, latency=run.latency)
        if cut_off(events):
            return Completion(text="", usage=_usage(events), model=model, latency=run.latency, truncated=True)
        answer = answer_text(events)
        if run.returncode != 0:
            detail = run.stderr.strip()[-400:] or run.stdout.strip()[-400:] or "no output"
            return Completion(
                text="",
                error=classify_failure(detail),
                latency=run.latency,
                error_message=clean_message(f"opencode exited {run.returncode}: {detail}"),
            )
        if not answer:
            return Completion(
                text="",
                error="empty",
                usage=_usage(events),
                latency=run.latency,
                error_message="opencode finished without an answer",
            )
        return Completion(text=answer, usage=_usage(events), model=model, latency=run.latency)


def from_options(options: dict[str, Any], model: str | None) -> OpenCodeCliBackend:
    return OpenCodeCliBackend(**OpenCodeCliBackend.options(options, model))
