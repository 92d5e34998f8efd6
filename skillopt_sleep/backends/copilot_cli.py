"""The GitHub Copilot CLI on the user's own login (GitHub account or BYOK provider).

Run as the user has it, Copilot offers the model seventeen executable tools (shell, file edits,
sub-agents, SQL, skills), starts the user's MCP servers, hooks and plugins, and sends its own
agent prompt with their ``copilot-instructions.md``, AGENTS.md and skills list. So each call runs
isolated, in a ``ReplaySandbox``:

- a private ``COPILOT_HOME`` (config, session state, logs, session database all land there and
  are removed with the sandbox) holding only what login needs: from the user's ``config.json`` the
  keys that name the signed-in account and, where the system keychain was unavailable, its
  plaintext token (``LOGIN_KEYS``); no settings, MCP config, hooks, plugins, agents, skills or
  instruction files. A token the CLI rewrites during the call is copied back. A login kept in the
  system keychain is found by account name; ``COPILOT_GITHUB_TOKEN`` / ``GH_TOKEN`` /
  ``GITHUB_TOKEN`` and the BYOK provider variables (``COPILOT_PROVIDER_*``, ``COPILOT_OFFLINE``)
  are used as the user set them;
- the user's variables that add instruction or skill directories, hooks or event logs dropped
  (``DROPPED_ENV``), a private ``XDG_CACHE_HOME`` (a device id file) and TMPDIR; the CLI's unpacked
  package cache stays where the user has it (``COPILOT_PKG_CACHE_HOME``), so no call unpacks it again.

Two ways to run one call (option ``mode``):

- ``server`` (the default): the CLI's SDK server (``copilot --headless --stdio``, JSON-RPC,
  ``copilot_rpc``), one session whose ``systemMessage`` *replaces* the CLI's own prompt with the
  documents, ``availableTools: []``, the BYOK provider passed as ``session.create``'s ``provider``
  (the server does not read those variables itself). The model gets the documents and the task
  (with a ``<current_datetime>`` tag the CLI puts before it) and nothing else.
- ``prompt``: ``copilot`` in prompt mode with the task on stdin, every tool off (``--available-tools``
  naming no real tool), no built-in MCP servers. Prompt mode cannot replace the CLI's own system
  prompt, so the documents are the private home's ``copilot-instructions.md``, inside its
  ``<custom_instruction>`` block after about 8 KB of the CLI's own instructions.

Both report the same session events (``--output-format json`` lines in prompt mode, notifications
from the server). The CLI tries a 401 three times and a 429 six times (about a minute); the first
report of a failure that will not get better stops the call. A run that asked the model to
"continue from where you left off" was cut off at the output-token limit: ``truncated`` (the last
message holds only the continuation). A login prompt, a ``session.error``, a refused session, a
non-zero exit or an empty answer is an error.

Options (spec ``copilot-cli:model=claude-sonnet-4.5``): ``model``, ``command`` (path to
``copilot``), ``timeout`` (seconds), ``reasoning_effort`` (``none`` … ``max``), ``mode``
(``server`` or ``prompt``), ``price_*``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skillopt_sleep.backends.base import FATAL_ERRORS, Completion, Request
from skillopt_sleep.backends.cli_common import (
    CliBackend,
    ReplaySandbox,
    classify_failure,
    kind_for_status,
    looks_like_auth_failure,
    parse_usage,
    run_cli,
)
from skillopt_sleep.backends.codex_cli import read_events  # the same JSON-lines event stream
from skillopt_sleep.backends.copilot_home import PrivateCopilotHome, replay_env
from skillopt_sleep.backends.copilot_rpc import run_session
from skillopt_sleep.backends.sdk_errors import clean_message
from skillopt_sleep.files import read_regular_text
from skillopt_sleep.paths import copilot_home
from skillopt_sleep.types import Usage

COMMAND = "copilot"  # the binary run unless backend_options.copilot-cli.command names another
DEFAULT_TIMEOUT = 600.0
USAGE_FILE = "usage.json"
# An allowlist naming no real tool leaves the model none (an empty list is taken as "no list").
NO_TOOL = "skillopt-sleep-no-tool"
# Without a document the CLI still sends its own prompt; this keeps the instruction block non-empty.
EMPTY_INSTRUCTIONS = "Answer the user's message."

MODES = ("server", "prompt")

ISOLATION_FLAGS = [
    f"--available-tools={NO_TOOL}",
    "--disable-builtin-mcps",
    "--no-ask-user",
    "--no-auto-update",
    "--disable-client-telemetry",
    "--no-color",
    "--output-format",
    "json",
]


def build_argv(
    usage_file: str, *, command: str = COMMAND, model: str | None = None, effort: str | None = None
) -> list[str]:
    """The argv for one call; the task itself goes on stdin."""
    argv = [command, *ISOLATION_FLAGS, "--usage-output-file", usage_file]
    if model:
        argv += ["--model", model]
    if effort:
        argv += ["--reasoning-effort", effort]
    return argv


# The SDK server: one session over JSON-RPC on stdin/stdout, which takes a system message that
# replaces the CLI's own prompt. Its flags beyond these are session.create parameters.
SERVER_FLAGS = ["--headless", "--stdio", "--no-auto-update", "--disable-builtin-mcps"]

# BYOK provider variables the prompt mode reads itself, as the server's session.create ``provider``.
_PROVIDER_ENV = {
    "COPILOT_PROVIDER_TYPE": "type",
    "COPILOT_PROVIDER_BASE_URL": "baseUrl",
    "COPILOT_PROVIDER_API_KEY": "apiKey",
    "COPILOT_PROVIDER_API_KEY_COMMAND": "apiKeyCommand",
    "COPILOT_PROVIDER_BEARER_TOKEN": "bearerToken",
    "COPILOT_PROVIDER_WIRE_API": "wireApi",
    "COPILOT_PROVIDER_TRANSPORT": "transport",
    "COPILOT_PROVIDER_MODEL_ID": "modelId",
    "COPILOT_PROVIDER_WIRE_MODEL": "wireModel",
}
_PROVIDER_LIMITS = {
    "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": "maxPromptTokens",
    "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS": "maxOutputTokens",
}


def server_argv(command: str = COMMAND) -> list[str]:
    return [command, *SERVER_FLAGS]


def provider_from_env(env: dict[str, str]) -> dict[str, Any] | None:
    """The user's BYOK provider (``copilot help providers``) as a session.create ``provider``;
    None when they use their GitHub login."""
    if not env.get("COPILOT_PROVIDER_BASE_URL"):
        return None
    provider: dict[str, Any] = {key: env[name] for name, key in _PROVIDER_ENV.items() if env.get(name)}
    for name, key in _PROVIDER_LIMITS.items():
        if env.get(name, "").strip().isdigit():
            provider[key] = int(env[name])
    if env.get("COPILOT_PROVIDER_AZURE_API_VERSION"):
        provider["azure"] = {"apiVersion": env["COPILOT_PROVIDER_AZURE_API_VERSION"]}
    headers = env.get("COPILOT_PROVIDER_HEADERS", "").replace("\\n", "\n")
    pairs = [line.partition(":") for line in headers.splitlines() if ":" in line]
    if pairs:
        provider["headers"] = {name.strip(): value.strip() for name, _, value in pairs}
    return provider


def session_params(
    system: str, cwd: Path, env: dict[str, str], *, model: str | None, effort: str | None
) -> dict[str, Any]:
    """session.create for one replay: the document as the whole system message, no tool."""
    params: dict[str, Any] = {
        "systemMessage": {"mode": "replace", "content": system},
        "availableTools": [],
        "workingDirectory": str(cwd),
    }
    chosen = model or env.get("COPILOT_MODEL")
    if chosen:
        params["model"] = chosen
    if effort:
        params["reasoningEffort"] = effort
    provider = provider_from_env(env)
    if provider:
        params["provider"] = provider
    return params


def _data(event: dict[str, Any]) -> dict[str, Any]:
    data = event.get("data")
    return data if isinstance(data, dict) else {}


def _status(data: dict[str, Any]) -> int | None:
    status = data.get("statusCode")
    return status if isinstance(status, int) and not isinstance(status, bool) and status >= 400 else None


def stop_on_fatal_error(line: str) -> tuple[str, str] | None:
    """The CLI tries a failed model call again (a 401 three times in all, a 429 six times over a minute); an
    auth, model or bad-request failure will not get better and a rate limit is the engine's to wait
    out, so the first report of one ends the call."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(event, dict) or event.get("type") != "model.call_failure":
        return None
    data = _data(event)
    status = _status(data)
    if status is None:
        return None
    kind = kind_for_status(status)
    if kind not in FATAL_ERRORS and kind != "rate_limit":
        return None
    return kind, f"HTTP {status}: {data.get('errorMessage') or 'model call failed'}"


def stop_on_fatal_event(event: dict[str, Any]) -> tuple[str, str] | None:
    """``stop_on_fatal_error`` for an event the server sends as a notification."""
    return stop_on_fatal_error(json.dumps(event)) if event.get("type") == "model.call_failure" else None


def session_error(events: list[dict[str, Any]]) -> tuple[str, str] | None:
    """The kind and message of the run's ``session.error``, if it reported one."""
    for event in reversed(events):
        if event.get("type") == "session.error":
            data = _data(event)
            message = str(data.get("message") or data.get("errorType") or "session error")
            status = _status(data)
            kind = kind_for_status(status) if status else classify_failure(f"{data.get('errorType')} {message}")
            return kind, message
    return None


def final_answer(events: list[dict[str, Any]]) -> tuple[str, str]:
    """The text and model of the run's last top-level assistant message."""
    for event in reversed(events):
        data = _data(event)
        if event.get("type") == "assistant.message" and not event.get("agentId") and not data.get("parentToolCallId"):
            content = data.get("content")
            return (content if isinstance(content, str) else ""), str(data.get("model") or "")
    return "", ""


def was_cut_off(events: list[dict[str, Any]]) -> bool:
    """With every tool off, a second model turn means the CLI asked the model to continue an answer
    that hit the output-token limit."""
    return sum(1 for e in events if e.get("type") == "assistant.turn_start" and not e.get("agentId")) > 1


def _counts(raw: dict[str, Any]) -> Usage:
    return parse_usage(
        {
            "input_tokens": raw.get("inputTokens"),
            "output_tokens": raw.get("outputTokens"),
            "cache_read": raw.get("cacheReadTokens"),
            "cache_write": raw.get("cacheWriteTokens"),
        },
        cached_key="cache_read",
        written_key="cache_write",
        input_includes_cached=True,
    )


def event_usage(events: list[dict[str, Any]]) -> Usage:
    """Token counts of the server's ``assistant.usage`` events, one a model call."""
    total = Usage()
    for event in events:
        if event.get("type") == "assistant.usage":
            total = total + _counts(_data(event))
    return total


def read_usage(path: Path) -> tuple[Usage, str]:
    """Token counts summed over the models the run used, and the model it ended on, from the
    ``--usage-output-file`` report (its ``inputTokens`` include cache reads and writes)."""
    try:
        report = json.loads(read_regular_text(path, 4 * 1024 * 1024))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return Usage(), ""
    if not isinstance(report, dict):
        return Usage(), ""
    total = Usage()
    metrics = report.get("modelMetrics")
    for entry in (metrics or {}).values() if isinstance(metrics, dict) else []:
        raw = entry.get("usage") if isinstance(entry, dict) else None
        if isinstance(raw, dict):
            total = total + _counts(raw)
    model = report.get("currentModel")
    return total, model if isinstance(model, str) else ""


class CopilotCliBackend(CliBackend):
    NAME = "copilot-cli"
    COMMAND = COMMAND
    DEFAULT_TIMEOUT = DEFAULT_TIMEOUT

    def __init__(
        self,
        model: str | None = None,
        *,
        reasoning_effort: str | None = None,
        mode: str = "server",
        **common: Any,
    ):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        super().__init__(model, **common)
        self.mode = mode
        self.reasoning_effort = reasoning_effort

    def complete(self, request: Request) -> Completion:
        if self.mode == "server":
            return self._complete_server(request)
        return self._complete_prompt(request)

    def _complete_server(self, request: Request) -> Completion:
        with ReplaySandbox.create() as sandbox:
            home = PrivateCopilotHome(sandbox, copilot_home(), None)
            env = replay_env(sandbox, home)
            system = request.system if request.system.strip() else EMPTY_INSTRUCTIONS
            params = session_params(system, sandbox.cwd, env, model=self.model, effort=self.reasoning_effort)
            run = run_session(
                server_argv(self.command),
                sandbox.cwd,
                env,
                params,
                request.user,
                self.timeout,
                watch=stop_on_fatal_event,
            )
            home.sync_refreshed_login()
        usage = event_usage(run.events)
        failure = session_error(run.events)
        if run.error and not failure:
            if run.error == "server" and run.stderr.strip():  # it exited: say why
                run.error = classify_failure(run.stderr)
            detail = run.error_message + (f" ({run.stderr.strip()[-500:]})" if run.stderr.strip() else "")
            return Completion(
                text="", error=run.error, error_message=clean_message(detail), usage=usage, latency=run.latency
            )
        return self._result(run.events, usage, "", failure, 0, run.latency)

    def _complete_prompt(self, request: Request) -> Completion:
        with ReplaySandbox.create() as sandbox:
            instructions = request.system if request.system.strip() else EMPTY_INSTRUCTIONS
            home = PrivateCopilotHome(sandbox, copilot_home(), instructions)
            usage_file = sandbox.files / USAGE_FILE
            argv = build_argv(str(usage_file), command=self.command, model=self.model, effort=self.reasoning_effort)
            env = replay_env(sandbox, home)
            run = run_cli(argv, request.user, self.timeout, sandbox, env=env, watch=stop_on_fatal_error)
            home.sync_refreshed_login()
            usage, reported_model = read_usage(usage_file)
        if run.error:
            return Completion(text="", error=run.error, error_message=run.error_message, latency=run.latency)
        events = read_events(run.stdout)
        detail = run.stderr.strip() or run.stdout.strip()[-2000:]
        return self._result(events, usage, reported_model, session_error(events), run.returncode, run.latency, detail)

    def _result(
        self,
        events: list[dict[str, Any]],
        usage: Usage,
        reported_model: str,
        failure: tuple[str, str] | None,
        returncode: int,
        latency: float,
        detail: str = "",
    ) -> Completion:
        answer, answer_model = final_answer(events)
        model = reported_model or answer_model or self.model or "copilot"
        if failure is None and was_cut_off(events):
            return Completion(text="", usage=usage, model=model, latency=latency, truncated=True)
        if returncode != 0 or failure or looks_like_auth_failure(answer):
            kind, message = failure or ("", answer or detail or "no output")
            return Completion(
                text="",
                error=kind or classify_failure(message),
                usage=usage,
                latency=latency,
                error_message=clean_message(
                    f"copilot exited {returncode}: {message}" if returncode else f"copilot: {message}"
                ),
            )
        if not answer.strip():
            return Completion(
                text="", error="empty", usage=usage, latency=latency, error_message="copilot gave an empty answer"
            )
        return Completion(text=answer, usage=usage, model=model, latency=latency)


def from_options(options: dict[str, Any], model: str | None) -> CopilotCliBackend:
    return CopilotCliBackend(
        **CopilotCliBackend.options(options, model),
        reasoning_effort=str(options["reasoning_effort"]) if options.get("reasoning_effort") else None,
        mode=str(options.get("mode", "server")),
    )
