"""Completions kept beyond the client's in-memory cache: the protocol a persistent store offers
``layers.Client``, and how a stored completion is written and read back.

A store keeps only whole answers (``keepable``: no failure, no reply cut off at the token
limit), keyed by the request's cache key. What reaches the disk is redacted: a stored answer comes back as its
redacted text.
"""

from __future__ import annotations

from typing import Any, Protocol

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.redact import redact
from skillopt_sleep.types import Usage


class CallStore(Protocol):
    def get(self, key: str, request: Request) -> Completion | None:
        """A completion kept for this request, or None."""

    def put(self, key: str, request: Request, completion: Completion) -> None:
        """Keep a completion that just succeeded (the store decides whether it wants it)."""

    # Optional: ``has(key, request) -> bool``, whether ``get`` would answer, without counting a
    # hit (a capped night plans with it: ``Client.has``). A store without it is not consulted.


def keepable(completion: Completion) -> bool:
    """Only a whole answer is kept: never a failure, never a reply cut off at the token limit
    (the night leaves that out of the score; a later one draws it again)."""
    return completion.ok and not completion.truncated


def completion_record(completion: Completion) -> dict[str, Any]:
    """The parts of a completion worth keeping, redacted."""
    return {
        "text": redact(completion.text),
        "model": completion.model,
        "usage": completion.usage.to_dict(),
        "tools_called": list(completion.tools_called),
    }


def completion_from(record: Any) -> Completion | None:
    """A completion back from ``completion_record``; None for anything malformed."""
    if not isinstance(record, dict) or not isinstance(record.get("text"), str):
        return None
    tools = record.get("tools_called") or []
    usage = record.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    counts = {
        k: v
        for k, v in usage.items()
        if k in Usage.__dataclass_fields__ and isinstance(v, int) and not isinstance(v, bool) and v >= 0
    }
    kept_usage = Usage(**counts)
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        return None
    return Completion(
        text=record["text"], usage=kept_usage, model=str(record.get("model") or ""), tools_called=list(tools)
    )
