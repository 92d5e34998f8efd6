"""How many calls run at once and how long one may take (``limits.py``)."""

from __future__ import annotations

import threading
import time

import pytest

from skillopt_sleep.backends.base import Completion
from skillopt_sleep.backends.deadline import Deadline
from skillopt_sleep.backends.limits import Limiter, call_within


def test_the_limiter_lets_only_its_limit_in_at_once() -> None:
    limiter, inside, most, lock = Limiter(2), [0], [0], threading.Lock()

    def work() -> None:
        with limiter:
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.05)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 2
    assert Limiter(0).limit == 1, "never below one"


def test_without_any_limit_the_call_runs_inline() -> None:
    seen = []
    done = call_within(lambda: seen.append(threading.current_thread()) or Completion(text="ok"), None, Deadline())
    assert done.text == "ok" and seen == [threading.current_thread()]


def test_a_call_past_its_limit_is_a_timeout() -> None:
    started = time.monotonic()
    done = call_within(lambda: time.sleep(2) or Completion(text="late"), 0.1, Deadline())
    assert (done.error, done.error_message) == ("timeout", "no complete answer within 0.1s")
    assert time.monotonic() - started < 1.5


def test_the_nights_time_left_bounds_a_call_without_its_own_limit() -> None:
    done = call_within(lambda: time.sleep(2) or Completion(text="late"), None, Deadline(0.1))
    assert done.error == "timeout"


def test_a_cancelled_night_ends_the_wait_with_its_reason() -> None:
    deadline = Deadline()
    threading.Timer(0.1, deadline.cancel, args=("the provider is down",)).start()
    done = call_within(lambda: time.sleep(2) or Completion(text="late"), 5.0, deadline)
    assert (done.error, done.error_message) == ("cancelled", "the provider is down")


def test_an_exception_the_call_raises_is_raised_to_the_caller() -> None:
    def broken() -> Completion:
        raise ValueError("bug")

    with pytest.raises(ValueError, match="bug"):
        call_within(broken, 1.0, Deadline())
    assert call_within(lambda: Completion(text="quick"), 1.0, Deadline()).text == "quick"
