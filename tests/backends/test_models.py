"""The night's two roles: aggregated calls and usage, and the spending notes of the report."""

from __future__ import annotations

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.budget import Budget
from skillopt_sleep.backends.client import Client, Stats
from skillopt_sleep.backends.models import Models
from skillopt_sleep.backends.pricing import FREE, Price

from tests.support.fake_backend import FakeBackend, ok


def req(user: str = "task", purpose: str = "attempt") -> Request:
    return Request(purpose=purpose, system="docs", user=user, max_tokens=100)


def roles(target: FakeBackend, optimizer: FakeBackend, retry, budget: Budget | None = None) -> Models:
    shared = Stats()
    return Models(
        Client(target, retry=retry, stats=shared, budget=budget),
        Client(optimizer, retry=retry, stats=shared, budget=budget, role="optimizer"),
    )


def test_models_aggregates_both_roles(retry):
    models = roles(FakeBackend(), FakeBackend(), retry)
    models.target.complete(req())
    models.optimizer.complete(req(purpose="reflect"))
    assert models.calls() == {"attempt": 1, "reflect": 1} and models.usage().input_tokens == 20


def test_spending_notes_say_what_was_spent_against_which_limit(retry):
    budget = Budget(max_tokens=10_000, max_cost=2.0)
    priced = FakeBackend(lambda r: ok(tokens=500), id="priced", price=Price(input=1000.0, output=1000.0))
    models = roles(priced, FakeBackend(id="free", price=FREE), retry, budget)
    models.target.complete(req())
    models.optimizer.complete(req())
    assert models.spending_notes() == ["spent 1,020 tokens of 10,000, $1.0000 of $2.00"]


def test_spending_notes_name_the_unpriced_models_and_batch_use(retry):
    models = roles(FakeBackend(id="mystery", price=None), FakeBackend(id="free", price=FREE), retry, Budget())
    models.target.complete(req())
    models.optimizer.complete(req())
    models.target.stats.batched = 3
    models.target.stats.batch_fallbacks.append("batch b1 not done after 60s")
    notes = models.spending_notes()
    assert notes[0] == "spent 40 tokens"
    assert notes[1].startswith("no price known for mystery (")
    assert notes[2:] == [
        "3 call(s) answered through provider batches (half price)",
        "batch fell back to direct calls: batch b1 not done after 60s",
    ]


def test_no_budget_no_spending_line(retry):
    models = roles(FakeBackend(), FakeBackend(), retry)
    models.target.complete(req())
    assert models.spending_notes() == []
