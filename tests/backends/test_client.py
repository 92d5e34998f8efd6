"""The client around a fake backend: failure policy, budget, cache and limiter."""

from __future__ import annotations

import pytest

from skillopt_sleep.backends.base import BudgetExceeded, Completion, ProviderError, Request
from skillopt_sleep.backends.budget import Budget, estimate_input_tokens
from skillopt_sleep.backends.client import Client, preflight
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.backends.pricing import FREE, Price, lookup, price_for
from skillopt_sleep.types import Usage

from tests.support.fake_backend import FakeBackend, err, ok, script


def req(user: str = "task", sample: int = 0, max_tokens: int = 100, purpose: str = "attempt") -> Request:
    return Request(purpose=purpose, system="docs " * 50, user=user, sample=sample, max_tokens=max_tokens)


# -- retry ---------------------------------------------------------------------------------

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


def test_preflight_passes_and_is_not_cached(retry):
    backend = FakeBackend()
    client = Client(backend, retry=retry)
    preflight(client)
    preflight(client)
    assert [r.purpose for r in backend.requests] == ["preflight", "preflight"]


def test_preflight_fatal_is_one_line(retry, sleep):
    backend = FakeBackend(script(err("auth", "HTTP 401:\n invalid key")))
    with pytest.raises(ProviderError) as info:
        preflight(Client(backend, retry=retry))
    assert str(info.value) == "fake: auth: preflight failed: HTTP 401: invalid key"
    assert sleep.calls == []


# -- cache, limiter, map -------------------------------------------------------------------

def test_samples_are_independent_but_repeats_are_cached(retry):
    backend = FakeBackend()
    client = Client(backend, retry=retry)
    client.map([req(sample=k) for k in range(4)])
    client.map([req(sample=k) for k in range(4)])
    assert len(backend.requests) == 4 and client.stats.cache_hits == 4


def test_identical_requests_in_flight_together_share_one_call(retry):
    import threading
    import time

    release = threading.Event()

    def slow(request):
        release.wait(10)
        return ok("shared")

    backend = FakeBackend(slow)
    client = Client(backend, limiter=Limiter(4), retry=retry)
    box = {}
    runner = threading.Thread(target=lambda: box.update(out=client.map([req(), req(), req(), req()])))
    runner.start()
    ends = time.monotonic() + 10
    while not backend.requests and time.monotonic() < ends:
        time.sleep(0.01)
    time.sleep(0.3)  # time for the other three to start a call of their own, were they allowed to
    release.set()
    runner.join(10)
    assert [c.text for c in box["out"]] == ["shared"] * 4
    assert len(backend.requests) == 1


def test_map_keeps_order_and_never_exceeds_the_shared_limit(retry):
    backend = FakeBackend()
    limiter = Limiter(3)
    a, b = Client(backend, limiter=limiter, retry=retry), Client(backend, limiter=limiter, retry=retry, role="optimizer")
    out = a.map([req(f"t{i}") for i in range(30)]) + b.map([req(f"u{i}") for i in range(30)])
    assert [c.text for c in out[:3]] == ["answer to t0", "answer to t1", "answer to t2"]
    assert backend.max_in_flight <= 3


def test_map_raises_on_a_fatal_error(retry):
    backend = FakeBackend(lambda r: err("auth") if r.user == "t3" else ok())
    with pytest.raises(ProviderError):
        Client(backend, retry=retry).map([req(f"t{i}") for i in range(8)])


# -- budget --------------------------------------------------------------------------------

def test_token_budget_stops_before_the_call_that_would_cross(retry):
    backend = FakeBackend(lambda r: ok(tokens=50))  # 100 tokens a call
    per_call = estimate_input_tokens(req()) + 100
    budget = Budget(max_tokens=per_call + 250)
    client = Client(backend, retry=retry, budget=budget)
    done = 0
    with pytest.raises(BudgetExceeded) as info:
        for i in range(100):
            client.complete(req(f"t{i}"))
            done += 1
    assert info.value.limit == "tokens" and budget.exhausted == "tokens"
    assert len(backend.requests) == done == 3  # the 4th would have reserved past the cap
    assert budget.tokens_used == 300 <= budget.max_tokens
    assert "tokens budget reached" in str(info.value)


def test_cost_budget_is_shared_by_both_roles(retry):
    price = Price(input=1000.0, output=1000.0)  # $0.001 a token
    budget = Budget(max_cost=1.0)
    target = Client(FakeBackend(price=price), retry=retry, budget=budget)
    optimizer = Client(FakeBackend(price=price), retry=retry, budget=budget, role="optimizer")
    with pytest.raises(BudgetExceeded) as info:
        for i in range(50):
            target.complete(req(f"t{i}", max_tokens=20))
            optimizer.complete(req(f"o{i}", max_tokens=20))
    assert info.value.limit == "cost (USD)" and budget.cost_used <= 1.0
    assert budget.cost_used == pytest.approx(0.02 * (len(target.backend.requests) + len(optimizer.backend.requests)))


def test_concurrent_calls_cannot_overshoot_together(retry):
    def worst_case(r: Request) -> Completion:  # each call uses exactly what it reserved
        return Completion("x", usage=Usage(input_tokens=estimate_input_tokens(r), output_tokens=r.max_tokens))

    backend = FakeBackend(worst_case)
    budget = Budget(max_tokens=5 * (estimate_input_tokens(req()) + 200))
    client = Client(backend, retry=retry, budget=budget, limiter=Limiter(8))
    with pytest.raises(BudgetExceeded):
        client.map([req(f"t{i}", max_tokens=200) for i in range(40)])
    assert budget.tokens_used <= budget.max_tokens and len(backend.requests) == 5


def test_unpriced_models_are_listed_and_free_backends_are_not(retry):
    budget = Budget(max_cost=5.0)
    Client(FakeBackend(price=None, id="mystery"), retry=retry, budget=budget).complete(req())

    Client(FakeBackend(id="sim:x", price=FREE, offline=True), retry=retry, budget=budget).complete(req())
    assert budget.summary()["unpriced_models"] == ["mystery"]


def test_price_table_and_overrides():
    assert lookup("claude-sonnet-4-5-20250929").input == 3.0
    assert lookup("gpt-4o-mini-2024-07-18").input == pytest.approx(0.15)  # not gpt-4o's price
    assert lookup("llama-local") is None
    assert price_for("llama-local", {"price_in": 0, "price_out": 0}).cost(ok().usage) == 0
    assert price_for("claude-haiku-4-5", {"price_out": 7}).output == 7
    with pytest.raises(ValueError):
        price_for("llama-local", {"price_in": 1})
