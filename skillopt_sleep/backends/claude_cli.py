"""Claude Code in print mode (``claude -p``) on the user's own login, for subscription users.

Each call runs in a fresh empty temp dir (see ``cli_common``), with every built-in tool and MCP
server disabled, no session persistence, the documents as the system prompt and the task on
stdin. ``--output-format json`` gives the answer with its usage; a login prompt, a non-zero exit,
an ``is_error`` result or an empty answer is an error, never an answer.

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
    classify_failure,
    looks_like_auth_failure,
    run_in_replay_dir,
)
from skillopt_sleep.backends.pricing import Price, price_for
from skillopt_sleep.backends.sdk_errors import clean_message
from skillopt_sleep.types import Usage

DEFAULT_TIMEOUT = 600.0
MAX_ARG_CHARS = 100_000  # Linux caps one argv string at 128 KiB; longer system text goes on stdin


def build_argv(
    request: Request, *, command: str = "claude", model: str | None = None,
    session_persistence: bool = False,
) -> tuple[list[str], str]:
    """The argv and stdin text for one call."""
    argv = [command, "-p", "--output-format", "json", "--tools", "", "--strict-mcp-config"]
    if not session_persistence:
        argv.append("--no-session-persistence")
    if model:
        argv += ["--model", model]
    stdin = request.user
    if request.system and len(request.system) <= MAX_ARG_CHARS:
        argv += ["--system-prompt", request.system]
    elif request.system:
        stdin = f"{request.system}\n\n---\n\n{request.user}"
    return argv, stdin


class ClaudeCliBackend:
    def __init__(
        self, model: str | None = None, *, command: str = "claude", timeout: float = DEFAULT_TIMEOUT,
        session_persistence: bool = False, price: Price | None = None,
    ):
        self.model = model
        self.command = command
        self.timeout = float(timeout)
        self.session_persistence = session_persistence
        self.price = price
        self.id = f"claude-cli:{model or 'default'}"

    def complete(self, request: Request) -> Completion:
        argv, stdin = build_argv(
            request, command=self.command, model=self.model,
            session_persistence=self.session_persistence,
        )
        run = run_in_replay_dir(argv, stdin, self.timeout)
        if run.error:
            return Completion(text="", error=run.error, error_message=run.error_message, latency=run.latency)
        completion = self._parse(run.stdout, run.stderr, run.returncode)
        completion.latency = run.latency
        return completion

    def _parse(self, stdout: str, stderr: str, returncode: int) -> Completion:
        result: dict[str, Any] | None = None
        try:
            parsed = json.loads(stdout) if stdout.strip() else None
            if isinstance(parsed, list):  # some versions print the event list
                parsed = next((e for e in reversed(parsed) if isinstance(e, dict) and e.get("type") == "result"), None)
            result = parsed if isinstance(parsed, dict) else None
        except json.JSONDecodeError:
            result = None

        if result is None:
            text = (stderr + "\n" + stdout).strip()
            if returncode != 0 or looks_like_auth_failure(stdout) or not text:
                return _failure(text or f"claude exited {returncode} with no output", returncode)
            return Completion(text="", error="server",
                              error_message=clean_message(f"claude printed no JSON result: {text}"))

        answer = result.get("result")
        answer = answer if isinstance(answer, str) else ""
        if result.get("is_error") or returncode != 0 or result.get("subtype", "success") != "success":
            detail = answer or stderr.strip() or str(result.get("subtype") or "error")
            return _failure(detail, returncode)
        if looks_like_auth_failure(answer):
            return _failure(answer, returncode)
        return Completion(text=answer, usage=_usage(result.get("usage")), model=_model(result, self.model))


_RESET_AT = re.compile(r"limit reached\|(\d{9,11})")


def _failure(text: str, returncode: int) -> Completion:
    reset = _RESET_AT.search(text)  # "Claude AI usage limit reached|<epoch of the reset>"
    return Completion(
        text="", error=classify_failure(text),
        error_message=clean_message(f"claude exited {returncode}: {text}"),
        retry_after=max(0.0, int(reset.group(1)) - time.time()) if reset else None,
    )


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=int(raw.get("cache_read_input_tokens") or 0),
        cache_write_tokens=int(raw.get("cache_creation_input_tokens") or 0),
    )


def _model(result: dict[str, Any], fallback: str | None) -> str:
    models = result.get("modelUsage")
    if isinstance(models, dict) and models:
        return str(next(iter(models)))
    return fallback or "claude"


def from_options(options: dict[str, Any], model: str | None) -> ClaudeCliBackend:
    model = options.get("model") or model
    return ClaudeCliBackend(
        str(model) if model else None,
        command=str(options.get("command", "claude")),
        timeout=float(options.get("timeout", DEFAULT_TIMEOUT)),
        session_persistence=bool(options.get("session_persistence", False)),
        price=price_for(str(model or ""), options),
    )
