"""Handoff: a night with no API key and no model process of ours. Every call the night makes is
written as a prompt file; the person's own agent session (a fresh sub-agent per prompt) writes the
answer beside it, and the same command run again reads the answers and goes on.

The files live in the project (``.skillopt-sleep/handoff/``, where the agent works anyway):
``prompts/<key>.md`` holds one call — what it is for, how to reply, the instructions and the
request — and its answer goes in ``answers/<key>.md``. Keys are the requests' content hashes, so
an answer can only answer the request it was written for, whichever night asks it again. A call
without an answer raises ``AnswerPending``: the client lets every other call of the phase write its
prompt too, and the night stops with ``EXIT_HANDOFF`` saying how many prompts wait. Each stop is
a round (``rounds.jsonl``); the night that finishes says how many rounds and prompts it took and
clears the folder.

A round may also ask ahead (``handoff:ahead=N``, default none): an attempt whose answer is
missing writes its next ``N`` samples' prompts too (the same request, the following sample
numbers). A gate's next look asks exactly those, so it finds them answered and takes no round of
its own; a sample asked ahead that the night never needs is an answer nobody reads. Fewer rounds
for more prompts: measured in docs/benchmarks.md ("A handoff night's rounds").

An answer is read like any model reply (bounded, through the client's one boundary for replies);
a prompt is written from a request the client has already redacted.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skillopt_sleep.backends.base import AnswerPending, Completion, Request
from skillopt_sleep.backends.pricing import FREE
from skillopt_sleep.files import append_jsonl, atomic_write_text, read_jsonl, read_regular
from skillopt_sleep.paths import user_dirs

COMMAND = None  # runs no CLI
KEY_ENV = None  # needs no key
FOLDER = "handoff"
MAX_ANSWER_BYTES = 1024 * 1024  # a model reply; anything longer is not one
AHEAD = 0  # samples of an attempt asked ahead (``handoff:ahead=3``: one look of the gate, its val_samples)
AHEAD_PURPOSES = ("attempt",)  # the calls drawn again and again under one prompt
PROMPT_HEADER = "skillopt-sleep handoff prompt"


class HandoffBackend:
    """Answers from ``answers/<key>.md``; a call without one becomes ``prompts/<key>.md``."""

    offline = False  # a real model answers: the person's own agent
    price = FREE  # billed to the person's own agent session, not to this engine

    def __init__(self, directory: Path, ahead: int = AHEAD) -> None:
        self.directory = Path(directory)
        self.ahead = max(0, ahead)
        self.id = "handoff"

    @property
    def prompts(self) -> Path:
        return self.directory / "prompts"

    @property
    def answers(self) -> Path:
        return self.directory / "answers"

    def key(self, request: Request) -> str:
        return request.cache_key(self.id)[:32]

    def complete(self, request: Request) -> Completion:
        if request.purpose == "preflight":  # nobody to reach before the night: the person answers
            return Completion(text="OK", model=self.id)
        key = self.key(request)
        try:
            text = read_regular(self.answers / f"{key}.md", MAX_ANSWER_BYTES, nofollow=True).decode("utf-8", "replace")
        except FileNotFoundError:
            text = ""
        except OSError as exc:  # a folder or a link where an answer should be: not an answer
            return Completion(text="", error="bad_request", error_message=f"answer {key}: {exc.strerror or exc}")
        if text.strip():
            return Completion(text=text, model=self.id)
        self._ask(request)
        if request.purpose in AHEAD_PURPOSES:
            for later in range(request.sample + 1, request.sample + 1 + self.ahead):
                self._ask(replace(request, sample=later))
        raise AnswerPending(key)

    def _ask(self, request: Request) -> None:
        """Write the prompt of ``request`` unless it is there or already answered."""
        key = self.key(request)
        prompt, answer = self.prompts / f"{key}.md", self.answers / f"{key}.md"
        if not prompt.exists() and not answer.exists():
            atomic_write_text(prompt, render_prompt(key, request, answer))
            # the answers' folder is there to write into: an agent writing with its shell cannot
            # create a file in a folder that does not exist
            self.answers.mkdir(parents=True, exist_ok=True)

    def waiting(self) -> list[str]:
        """Keys of the prompts that have no answer yet, in name order."""
        try:
            names = sorted(p.stem for p in self.prompts.glob("*.md"))
        except OSError:
            return []
        return [k for k in names if not (self.answers / f"{k}.md").is_file()]

    def stopped(self, night_id: str) -> int:
        """Record a round (the night stopped for answers); the number of prompts waiting."""
        waiting = len(self.waiting())
        append_jsonl(
            self.directory / "rounds.jsonl",
            {"night_id": night_id, "at": datetime.now(timezone.utc).isoformat(), "waiting": waiting},
        )
        return waiting

    def finished(self) -> str:
        """The line a finished night's report carries; the folder is cleared for the next night."""
        try:
            rounds = len(read_jsonl(self.directory / "rounds.jsonl"))
        except OSError:
            rounds = 0
        try:
            prompts = sum(1 for _ in self.answers.glob("*.md"))
        except OSError:
            prompts = 0
        shutil.rmtree(self.directory, ignore_errors=True)
        return f"handoff: {prompts} prompt(s) answered by your agent over {rounds + 1} round(s)"


def render_prompt(key: str, request: Request, answer: Path) -> str:
    """One call as a person's agent reads it: what to do, then the instructions and the request."""
    reply = (
        "Reply with one JSON value that fits this schema, and nothing else:\n\n```json\n"
        + json.dumps(request.json_schema, indent=2, sort_keys=True)
        + "\n```"
        if request.json_schema
        else "Reply with the answer itself, and nothing else."
    )
    return "\n".join(
        [
            f"<!-- {PROMPT_HEADER} {key} ({request.purpose}, sample {request.sample}) -->",
            "",
            "Answer this as a fresh assistant with no other context: follow the instructions, answer",
            "the request, and write only your reply to the answer file named below (with your tool for",
            "writing a file). Do nothing else for it: run nothing but that write and look at no other file.",
            "",
            f"Answer file: {answer}",
            "",
            reply,
            "",
            "## Instructions",
            "",
            request.system.strip() or "(none)",
            "",
            "## Request",
            "",
            request.user.strip(),
            "",
        ]
    )


def from_options(options: dict[str, Any], model: str | None) -> HandoffBackend:
    """``dir``: the folder of prompt and answer files; a night sets its project's, and a backend
    built outside a night uses the user's state dir."""
    directory = options.get("dir") or user_dirs().state / FOLDER
    ahead = options.get("ahead", AHEAD)
    if not isinstance(ahead, int) or isinstance(ahead, bool) or ahead < 0:
        raise ValueError(f"ahead must be a whole number of samples >= 0, not {ahead!r}")
    return HandoffBackend(Path(os.path.expanduser(str(directory))), ahead)
