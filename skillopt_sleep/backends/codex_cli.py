"""Codex headless (``codex exec``) on the user's own login, for ChatGPT subscription users.

``--ephemeral`` keeps Codex from writing a rollout file, so no session is left for a harvest;
the run happens in a fresh empty temp dir with a read-only sandbox; the prompt (documents, then
the task) comes on stdin (the ``-`` argument); the final message is read from the ``-o`` file,
which lives outside the working directory; ``--json`` events on stdout carry the usage and any
error. A login prompt, a non-zero exit, a failed turn or an empty answer is an error.

Options (spec ``codex-cli:model=gpt-5-codex``): ``model``, ``command`` (path to ``codex``),
``timeout`` (seconds), ``price_*``.
"""

from __future__ import annotations

import json
import os
import tempfile
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


def build_argv(request: Request, output_file: str, *, command: str = "codex", model: str | None = None) -> tuple[list[str], str]:
    """The argv and stdin text for one call."""
    argv = [
        command, "exec", "--ephemeral", "--sandbox", "read-only", "--skip-git-repo-check",
        "--color", "never", "--json", "-o", output_file,
    ]
    if model:
        argv += ["--model", model]
    argv.append("-")
    stdin = f"{request.system}\n\n---\n\n{request.user}" if request.system else request.user
    return argv, stdin


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


def _event_error(events: list[dict[str, Any]]) -> str:
    for event in reversed(events):
        kind = event.get("type")
        if kind == "turn.failed":
            error = event.get("error")
            return str(error.get("message") if isinstance(error, dict) else error or "turn failed")
        if kind == "error":
            return str(event.get("message") or "error")
    return ""


def _usage(events: list[dict[str, Any]]) -> Usage:
    total = Usage()
    for event in events:
        raw = event.get("usage") if event.get("type") == "turn.completed" else None
        if isinstance(raw, dict):
            cached = int(raw.get("cached_input_tokens") or 0)
            total = total + Usage(
                input_tokens=max(0, int(raw.get("input_tokens") or 0) - cached),
                output_tokens=int(raw.get("output_tokens") or 0),
                cache_read_tokens=cached,
            )
    return total


class CodexCliBackend:
    def __init__(
        self, model: str | None = None, *, command: str = "codex", timeout: float = DEFAULT_TIMEOUT,
        price: Price | None = None,
    ):
        self.model = model
        self.command = command
        self.timeout = float(timeout)
        self.price = price
        self.id = f"codex-cli:{model or 'default'}"

    def complete(self, request: Request) -> Completion:
        fd, output_file = tempfile.mkstemp(prefix="skillopt-sleep-codex-", suffix=".txt")
        os.close(fd)
        try:
            argv, stdin = build_argv(request, output_file, command=self.command, model=self.model)
            run = run_in_replay_dir(argv, stdin, self.timeout)
            if run.error:
                return Completion(text="", error=run.error, error_message=run.error_message, latency=run.latency)
            with open(output_file, encoding="utf-8", errors="replace") as handle:
                answer = handle.read().strip()
        finally:
            os.unlink(output_file)
        events = read_events(run.stdout)
        failure = _event_error(events)
        if run.returncode != 0 or failure or looks_like_auth_failure(answer):
            detail = failure or answer or run.stderr.strip() or run.stdout.strip() or "no output"
            return Completion(
                text="", error=classify_failure(detail), latency=run.latency,
                error_message=clean_message(f"codex exited {run.returncode}: {detail}"),
            )
        return Completion(text=answer, usage=_usage(events), model=self.model or "codex", latency=run.latency)


def from_options(options: dict[str, Any], model: str | None) -> CodexCliBackend:
    model = options.get("model") or model
    return CodexCliBackend(
        str(model) if model else None,
        command=str(options.get("command", "codex")),
        timeout=float(options.get("timeout", DEFAULT_TIMEOUT)),
        price=price_for(str(model or ""), options),
    )
