"""Replies cut off at the output-token limit (``Completion.truncated``).

A cut-off reply is a fragment, not an answer: scoring it would count the cap as the model's
mistake. The client retries such a call once with ``ROOM_FACTOR`` times the cap, when the backend
would really send a larger one; a reply still cut off after that is handed back marked, and the
caller leaves it out of the score and says so in the report.
"""

from __future__ import annotations

from dataclasses import replace

from skillopt_sleep.backends.base import Request

ROOM_FACTOR = 4


def with_more_room(request: Request, backend: object) -> Request | None:
    """``request`` with a larger output cap, or None when there is no point: the preflight only
    checks that the provider answers; a backend that caps output itself (the CLIs ask for the
    model's maximum) has no ``output_tokens``; a configured ``max_output`` may already bind."""
    cap = getattr(backend, "output_tokens", None)
    if request.purpose == "preflight" or not callable(cap):
        return None
    roomier = replace(request, max_tokens=request.max_tokens * ROOM_FACTOR)
    return roomier if cap(roomier.max_tokens) > cap(request.max_tokens) else None
