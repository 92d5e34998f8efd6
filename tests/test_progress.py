"""Per-call progress with counts and an ETA (one updating line on a terminal,
plain periodic lines otherwise)."""

from __future__ import annotations

import io

from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.base import Request
from skillopt_sleep.progress import CallProgress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_are_periodic_and_carry_counts_and_an_eta() -> None:
    out, clock = io.StringIO(), Clock()
    progress = CallProgress(out, plain_every=10.0, clock=clock)
    progress.expect(4)
    clock.now = 5.0
    progress.done()  # first line at once
    clock.now = 6.0
    progress.done()  # too soon for another line
    clock.now = 20.0
    progress.done()
    clock.now = 21.0
    progress.done()  # the last call always shows
    lines = out.getvalue().splitlines()
    assert lines == [
        "skillopt-sleep: model calls 1/4, 5s, ETA 15s",
        "skillopt-sleep: model calls 3/4, 20s, ETA 7s",
        "skillopt-sleep: model calls 4/4, 21s",
    ]


def test_a_terminal_gets_one_line_rewritten_in_place() -> None:
    out, clock = Tty(), Clock()
    progress = CallProgress(out, clock=clock)
    progress.expect(2)
    clock.now = 1.0
    progress.done()
    clock.now = 2.0
    progress.done()
    progress.finish()
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    assert text.count("\r") == 2 and "model calls 2/2" in text


def test_a_client_reports_every_call_it_makes() -> None:
    out = io.StringIO()
    progress = CallProgress(out, plain_every=0.0)
    client = Client(make_backend("sim"))
    client.calls_progress = progress
    requests = [Request(purpose="attempt", system="s", user=f"task {i}") for i in range(5)]
    client.map(requests)
    client.complete(Request(purpose="attempt", system="s", user="one more"))
    assert (progress.expected, progress.completed) == (6, 6)
    assert out.getvalue().splitlines()[-1].startswith("skillopt-sleep: model calls 6/6")
