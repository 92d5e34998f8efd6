"""Per-call progress on stderr for a night's model work: counts, rate and an ETA.

On a terminal it is one line rewritten in place (at most ~5 times a second); otherwise a plain line
at most every ``plain_every`` seconds, so a log still shows the night moving. The total is what the
night has asked for so far (``expect``), so the ETA is for the calls already scheduled.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO


class CallProgress:
    def __init__(
        self, stream: TextIO | None = None, *, plain_every: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.plain_every = plain_every
        self._clock = clock
        self._lock = threading.Lock()
        self._started = clock()
        self._last = float("-inf")
        self.expected = 0
        self.completed = 0
        self._shown = False
        self._width = 0

    def expect(self, n: int) -> None:
        with self._lock:
            self.expected += max(0, int(n))

    def done(self, n: int = 1) -> None:
        with self._lock:
            self.completed += n
            now = self._clock()
            every = 0.2 if self.tty else self.plain_every
            if now - self._last < every and self.completed < self.expected:
                return
            self._last = now
            line = self.line(now)
        self._write(line)

    def line(self, now: float | None = None) -> str:
        now = self._clock() if now is None else now
        elapsed = max(now - self._started, 1e-9)
        total = max(self.expected, self.completed)
        text = f"model calls {self.completed}/{total}, {elapsed:.0f}s"
        left = total - self.completed
        if self.completed and left:
            text += f", ETA {_duration(left * elapsed / self.completed)}"
        return text

    def finish(self) -> None:
        if self.tty and self._shown:
            self._write_raw("\n")

    def _write(self, line: str) -> None:
        if self.tty:  # rewrite the line in place; spaces cover a longer previous line
            text = f"skillopt-sleep: {line}"
            self._write_raw("\r" + text.ljust(self._width))
            self._width = len(text)
        else:
            self._write_raw(f"skillopt-sleep: {line}\n")
        self._shown = True

    def _write_raw(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed stderr must not end the night
            pass


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
