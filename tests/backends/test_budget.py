"""Budgets: token and cost caps reserved before each call, shared by both roles and by concurrent calls."""

from __future__ import annotations

import pytest

from skillopt_sleep.backends.base import BudgetExceeded, Completion, Request
from skillopt_sleep.backends.budget import Budget, estimate_input_tokens
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.pricing import FREE, Price
from skillopt_sleep.types import Usage

from tests.support.fake_backend import FakeBackend, ok


def req(user: str = "task", sample: int = 0, max_tokens: int = 100, purpose: str = "attempt") -> Request:
    return Request(purpose=purpose, system="docs " * 50, user=user, sample=sample, max_tokens=max_tokens)


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
