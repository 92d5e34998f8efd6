"""The retry policy: backoff, Retry-After, a bounded total wait, and failures that never become answers."""

from __future__ import annotations

import pytest

from skillopt_sleep.backends.base import Completion, ProviderError, Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.retry import RetryPolicy

from tests.support.fake_backend import FakeBackend, err, ok, script


def req(user: str = "task", sample: int = 0, max_tokens: int = 100, purpose: str = "attempt") -> Request:
    return Request(purpose=purpose, system="docs " * 50, user=user, sample=sample, max_tokens=max_tokens)


def test_backoff_grows_exponentially_within_jitter():
    policy = RetryPolicy(base_delay=1.0, max_delay=30.0, jitter=0.25)
    for attempt, nominal in enumerate([1, 2, 4, 8, 16, 30, 30]):
        for _ in range(20):
            assert nominal * 0.75 <= policy.delay(attempt, None) <= nominal * 1.25


def test_retry_after_wins_over_backoff():
    assert RetryPolicy().delay(0, 12.5) == 12.5


def test_total_wait_is_bounded(sleep):
    backend = FakeBackend(lambda r: err("server", "down"))
    policy = RetryPolicy(attempts=50, base_delay=10, max_delay=10, jitter=0, max_total_wait=35, sleep=sleep)
    with pytest.raises(ProviderError) as info:
        Client(backend, retry=policy).complete(req())
    assert sum(sleep.calls) <= 35 and len(backend.requests) == 4  # 3 waits of 10s fit, a 4th would not
    assert "gave up after 4 tries" in info.value.message


def test_error_text_never_becomes_an_answer(retry):
    backend = FakeBackend(script(err("auth", "bad key", text="Please log in")))
    client = Client(backend, retry=retry)
    with pytest.raises(ProviderError):
        client.complete(req())
    assert client._cache == {}  # nothing cached for the failed request


def test_transport_bug_is_an_error_not_an_answer(retry):
    def broken(request: Request) -> Completion:
        raise KeyError("oops")

    with pytest.raises(ProviderError) as info:
        Client(FakeBackend(broken), retry=retry).complete(req())
    assert info.value.kind == "unknown"


def test_retries_and_calls_are_counted(retry, sleep):
    backend = FakeBackend(script(err("rate_limit", retry_after=2), err("timeout"), ok()))
    client = Client(backend, retry=retry)
    assert client.complete(req()).ok
    assert client.stats.retries == 2 and client.stats.calls["attempt"] == 3
    assert sleep.calls[0] == 2
