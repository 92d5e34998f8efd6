"""An in-process backend whose replies a test scripts: for unit tests of the shared layers."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.pricing import Price
from skillopt_sleep.types import Usage


def ok(text: str = "fine", tokens: int = 10) -> Completion:
    return Completion(text=text, usage=Usage(input_tokens=tokens, output_tokens=tokens))


def err(kind: str, message: str = "scripted", retry_after: float | None = None, text: str = "") -> Completion:
    return Completion(text=text, error=kind, error_message=message, retry_after=retry_after)


class ScriptedBackend:
    """Pops scripted Completions (FIFO); when the script is empty, ``default(request)`` answers."""

    def __init__(self, *script: Completion, default: Callable[[Request], Completion] | None = None,
                 price: Price | None = None, model: str = "scripted", offline: bool = False):
        self.id = f"scripted:{model}"
        self.offline = offline
        self.script = deque(script)
        self.default = default or (lambda request: ok(f"answer to {request.user}"))
        self.price = price
        self.calls: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def complete(self, request: Request) -> Completion:
        with self._lock:
            self.calls.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            scripted = self.script.popleft() if self.script else None
        try:
            return scripted if scripted is not None else self.default(request)
        finally:
            with self._lock:
                self.in_flight -= 1
