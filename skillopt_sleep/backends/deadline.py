"""A night's clock and its cancel switch, shared by every ``Client`` of the night.

Time is bounded twice: the whole night (``night_deadline``) and each call (``call_timeout``, wall
time across all its tries, the case the SDK's per-read timeout misses: a server that drips a byte
every few seconds never trips a read timeout). When one call fails for good the night is over, so
the failing client cancels the deadline: calls in flight stop waiting, none retries, none starts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Deadline:
    """Thread-safe. ``seconds=None``: no overall limit (cancellation still works)."""

    def __init__(self, seconds: float | None = None, *, clock: Callable[[], float] = time.monotonic):
        self.seconds = seconds
        self._clock = clock
        self._ends = None if seconds is None else clock() + float(seconds)
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self.reason = ""
        self.cause: BaseException | None = None  # the failure that cancelled the night, if any

    def remaining(self) -> float | None:
        """Seconds left before the night's deadline (never below 0), or None without one."""
        if self._ends is None:
            return None
        return max(0.0, self._ends - self._clock())

    def cancel(self, reason: str, cause: BaseException | None = None) -> None:
        """End the night's model work; the first reason (and the failure behind it) is kept."""
        with self._lock:
            if not self._cancelled.is_set():
                self.reason, self.cause = reason, cause
                self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def stop_reason(self) -> str | None:
        """Why no more calls may run, or None while they may."""
        if self._cancelled.is_set():
            return self.reason or "the night was cancelled"
        if self._ends is not None and self._clock() >= self._ends:
            return f"the night's deadline of {self.seconds:g}s passed"
        return None

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds`` (cut short by the deadline); True when cancelled meanwhile."""
        left = self.remaining()
        if left is not None:
            seconds = min(seconds, left)
        return self._cancelled.wait(max(0.0, seconds))
