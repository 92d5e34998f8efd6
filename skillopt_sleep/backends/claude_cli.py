"""Claude Code in print mode (``claude -p``) on the user's own login, for subscription users.

A replay must carry none of the user's own context and have no side effects, so each call runs
with ``--safe-mode`` (no user CLAUDE.md, skills, hooks, plugins or MCP servers; login still works),
``--strict-mcp-config``, every built-in tool off (``--tools ""``), no session persistence, in a
``ReplaySandbox`` (empty cwd, private TMPDIR) with a private ``CLAUDE_CONFIG_DIR`` that keeps the
user's login where it is and everything else the CLI writes out of their ``~/.claude`` (see
``claude_home``). The documents go in ``--system-prompt-file`` (argv
cannot hold a long document), the task on stdin. ``CLAUDE_CODE_MAX_RETRIES=0`` turns off the CLI's
own retries (about three minutes of them on a 401 or 429): the engine's retry layer decides.

``--output-format json`` gives the answer, usage, ``total_cost_usd`` and, on failure, the provider's
``api_error_status``; a login prompt, a non-zero exit, an ``is_error`` result or an empty answer is
an error, never an answer. An answer cut off at the output-token limit (``api_error:
"max_output_tokens"``, reported after the CLI's own attempts to continue it) is ``truncated``.

Options (spec ``claude-cli:model=sonnet``): ``model``, ``command`` (path to ``claude``),
``timeout`` (seconds), ``session_persistence`` (``true`` drops ``--no-session-persistence`` for
CLIs too old to know it), ``price_*``.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.cli_common import (
    CliBackend,
    SYSTEM_PROMPT_FILE,
    ReplaySandbox,
    classify_failure,
    kind_for_status,
    looks_like_auth_failure,
    parse_usage,
    run_cli,
)
from skillopt_sleep.backends.claude_home import PrivateClaudeConfig
from skillopt_sleep.backends.sdk_errors import clean_message

COMMAND = "claude"  # the binary run unless backend_options.claude-cli.command names another
DEFAULT_TIMEOUT = 600.0

# The CLI's own retries off (the engine retries), and no traffic beyond the model call itself
# (telemetry that fails offline leaves files behind in ~/.claude).
REPLAY_ENV = {
    "CLAUDE_CODE_MAX_RETRIES": "0",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


def build_argv(
    system_prompt_file: str,
    *,
    command: str = COMMAND,
    model: str | None = None,
    session_persistence: bool = False,
) -> list[str]:
    """The argv for one call; the task itself goes on stdin."""
    argv = [
        command,
        "-p",
        "--output-format",
        "json",
        "--safe-mode",
        "--strict-mcp-config",
        "--tools",
        "",
        "--system-prompt-file",
        system_prompt_file,
    ]
    if not session_persistence:
        argv.append("--no-session-persistence")
    if model:
        argv += ["--model", model]
    return argv


class ClaudeCliBackend(CliBackend):
    NAME = "claude-cli"
    COMMAND = COMMAND
    DEFAULT_TIMEOUT = DEFAULT_TIMEOUT

    def __init__(self, model: str | None = None, *, session_persistence: bool = False, **common: Any):
        super().__init__(model, **common)
        self.session_persistence = session_persistence

    def complete(self, request: Request) -> Completion:
        with ReplaySandbox.create() as sandbox:
            system_file = sandbox.write(SYSTEM_PROMPT_FILE, request.system)
            argv = build_argv(
                str(system_file),
                command=self.command,
                model=self.model,
                session_persistence=self.session_persistence,
            )
            config = PrivateClaudeConfig(sandbox)
            env = sandbox.env({**REPLAY_ENV, **config.env()})
            run = run_cli(argv, request.user, self.timeout, sandbox, env=env)
        if run.error:
            return Completion(text="", error=run.error, error_message=run.error_message, latency=run.latency)
        completion = self._parse(run.stdout, run.stderr, run.returncode)
        completion.latency = run.latency
        return completion

    def _parse(self, stdout: str, stderr: str, returncode: int) -> Completion:
        result = _result_object(stdout)
        if result is None:
            text = (stderr + "\n" + stdout).strip()
            if returncode != 0 or looks_like_auth_failure(stdout) or not text:
                return _failure(text or f"claude exited {returncode} with no output", returncode)
            return Completion(
                text="", error="server", error_message=clean_message(f"claude printed no JSON result: {text}")
            )

        answer = result.get("result")
        answer = answer if isinstance(answer, str) else ""
        cost = _cost(result)
        usage = parse_usage(
            result.get("usage"),
            cached_key="cache_read_input_tokens",
            written_key="cache_creation_input_tokens",
            input_includes_cached=False,
        )
        if result.get("api_error") == "max_output_tokens" or _CUT_OFF.search(answer if result.get("is_error") else ""):
            # The CLI asks for the model's own maximum and has already tried to continue: the
            # answer was cut off (its text is the CLI's error message, not a fragment of it).
            return Completion(text="", usage=usage, model=_model(result, self.model), cost_usd=cost, truncated=True)
        if result.get("is_error") or returncode != 0 or result.get("subtype", "success") != "success":
            detail = answer or stderr.strip() or str(result.get("subtype") or "error")
            failure = _failure(detail, returncode, status=result.get("api_error_status"))
            failure.cost_usd = cost
            return failure
        if looks_like_auth_failure(answer):
            return _failure(answer, returncode)
        return Completion(text=answer, usage=usage, model=_model(result, self.model), cost_usd=cost)


def _result_object(stdout: str) -> dict[str, Any] | None:
    try:
        parsed = json.loads(stdout) if stdout.strip() else None
    except json.JSONDecodeError:
        return None
    if isinstance(parsed, list):  # some versions print the event list
        parsed = next((e for e in reversed(parsed) if isinstance(e, dict) and e.get("type") == "result"), None)
    return parsed if isinstance(parsed, dict) else None


# "API Error: Claude's response exceeded the 128000 output token maximum. To configure …"
_CUT_OFF = re.compile(r"response exceeded the \d+ output token maximum", re.I)
_RESET_AT = re.compile(r"limit reached\|(\d{9,11})")


def _failure(text: str, returncode: int, *, status: Any = None) -> Completion:
    reset = _RESET_AT.search(text)  # "Claude AI usage limit reached|<epoch of the reset>"
    known_status = isinstance(status, int) and not isinstance(status, bool) and status >= 400
    return Completion(
        text="",
        error=kind_for_status(status) if known_status else classify_failure(text),
        error_message=clean_message(f"claude exited {returncode}: {text}"),
        retry_after=max(0.0, int(reset.group(1)) - time.time()) if reset else None,
    )


def _cost(result: dict[str, Any]) -> float | None:
    """What the CLI says the call cost (USD), for the budget; None when it does not say."""
    cost = result.get("total_cost_usd")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
        return float(cost)
    return None


def _model(result: dict[str, Any], fallback: str | None) -> str:
    models = result.get("modelUsage")
    if isinstance(models, dict) and models:
        return str(next(iter(models)))
    return fallback or "claude"


def from_options(options: dict[str, Any], model: str | None) -> ClaudeCliBackend:
    return ClaudeCliBackend(
        **ClaudeCliBackend.options(options, model), session_persistence=bool(options.get("session_persistence", False))
    )
