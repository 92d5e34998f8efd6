"""How many calls run at once, and how long one may take.

``Limiter`` is one concurrency limit shared by every Client of a night. ``call_within`` bounds one
call by its own time limit and by the night's ``Deadline``: the call runs in a daemon thread that
is abandoned when time is up or the night is cancelled (its answer, should it come, is dropped;
the backend's connections are closed when the night ends, ``Models.close``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from skillopt_sleep.backends.base import Completion
from skillopt_sleep.backends.deadline import Deadline


class Limiter:
    """One concurrency limit shared by every Client of a night (target and optimizer)."""

    def __init__(self, limit: int):
        self.limit = max(1, int(limit))
        self._sem = threading.BoundedSemaphore(self.limit)

    def __enter__(self) -> Limiter:
        self._sem.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sem.release()


def call_within(
    call: Callable[[], Completion], limit: float | None, deadline: Deadline, *, name: str = "skillopt-call"
) -> Completion:
    """``call()`` bounded by ``limit`` seconds and by ``deadline`` (its time left and its cancel).

    Without any limit the call runs inline. Running out of time is a ``timeout`` Completion, a
    cancelled night a ``cancelled`` one; an exception the call raises is raised here."""
    night_left = deadline.remaining()
    if night_left is not None:
        limit = night_left if limit is None else min(limit, night_left)
    if limit is None:
        return call()
    box: dict[str, object] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["completion"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name=name, daemon=True).start()
    ends = time.monotonic() + limit
    while not done.wait(max(0.0, min(0.05, ends - time.monotonic()))):
        if deadline.cancelled:
            return Completion(text="", error="cancelled", error_message=deadline.reason)
        if time.monotonic() >= ends:
            return Completion(text="", error="timeout", error_message=f"no complete answer within {limit:g}s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["completion"]  # type: ignore[return-value]
