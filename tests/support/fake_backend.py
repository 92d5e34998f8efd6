"""A backend whose replies come from a function the test hands it (httpx's MockTransport idea).

``FakeBackend(handler)`` passes every request to ``handler(request)`` and records it; the handler
returns a ``Completion`` (an answer or a failure, see ``ok`` / ``err``), a ``str`` (the answer's
text) or a ``dict`` / ``list`` (answered as JSON text). An exception the handler raises reaches the
caller as it would from a transport with a bug. Handlers compose: ``script(...)`` answers from a
FIFO of replies and then falls back to another handler, ``forward(backend)`` lets another backend
(the simulator, say) answer.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable

from skillopt_sleep.backends.base import Backend, Completion, Request
from skillopt_sleep.backends.pricing import Price
from skillopt_sleep.types import Usage

Reply = Completion | str | dict | list
Handler = Callable[[Request], Reply]


def ok(text: str = "fine", tokens: int = 10) -> Completion:
    """An answer that used ``tokens`` input and ``tokens`` output tokens."""
    return Completion(text=text, usage=Usage(input_tokens=tokens, output_tokens=tokens))


def err(kind: str, message: str = "scripted", retry_after: float | None = None, text: str = "") -> Completion:
    """A failed call of error ``kind`` (see ``base.TRANSIENT_ERRORS`` / ``FATAL_ERRORS``)."""
    return Completion(text=text, error=kind, error_message=message, retry_after=retry_after)


def echo(request: Request) -> Completion:
    """The default handler: answers every request, naming its user text."""
    return ok(f"answer to {request.user}")


def script(*replies: Reply, then: Handler = echo) -> Handler:
    """A handler that gives ``replies`` in order, one per request, and then answers with ``then``."""
    queue = deque(replies)
    lock = threading.Lock()

    def handler(request: Request) -> Reply:
        with lock:
            reply = queue.popleft() if queue else None
        return reply if reply is not None else then(request)

    return handler


def forward(inner: Backend) -> Handler:
    """A handler that lets ``inner`` answer (a night that runs through a recording backend)."""
    return inner.complete


def as_completion(reply: Reply) -> Completion:
    if isinstance(reply, Completion):
        return reply
    if isinstance(reply, str):
        return Completion(text=reply)
    return Completion(text=json.dumps(reply))


class FakeBackend:
    """Answers by ``handler`` and keeps every request (``requests``, thread-safe), with the peak
    number of calls in flight at once (``max_in_flight``) for tests of the concurrency limits.

    ``price`` is what its calls cost (``None``: unknown); ``tools=True`` lets it offer the
    model stub tools, as the SDK backends can."""

    def __init__(
        self,
        handler: Handler = echo,
        *,
        id: str = "fake",
        price: Price | None = None,
        tools: bool = False,
        offline: bool = False,
    ) -> None:
        self.id = id
        self.handler = handler
        self.price = price
        self.offline = offline
        self.tools = tools
        self.requests: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def can_offer_tools(self, names: tuple[str, ...]) -> bool:
        return self.tools

    def complete(self, request: Request) -> Completion:
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return as_completion(self.handler(request))
        finally:
            with self._lock:
                self.in_flight -= 1

    @property
    def purposes(self) -> list[str]:
        """The purpose of every request so far, in the order they arrived."""
        with self._lock:
            return [r.purpose for r in self.requests]
