"""Batch mode through the real SDKs: Anthropic Message Batches and the OpenAI Batch API."""

from __future__ import annotations

import pytest

from skillopt_sleep.backends.anthropic_api import AnthropicBackend
from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.batching import BatchPolicy
from skillopt_sleep.backends.budget import Budget
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.openai_api import OpenAIBackend
from skillopt_sleep.backends.pricing import Price

DOCS = "# Skill\nName the files you touched in the summary.\n" * 30
PRICE = Price(input=3.0, output=15.0)


def reqs(n: int = 6) -> list[Request]:
    return [Request(purpose="attempt", system=DOCS, user=f"task {i // 2}", sample=i % 2) for i in range(n)]


def anthropic(server) -> AnthropicBackend:
    return AnthropicBackend("claude-haiku-4-5", api_key=server.key, base_url=server.base_url, price=PRICE)


def openai_backend(server) -> OpenAIBackend:
    return OpenAIBackend("gpt-4o-mini", api_key=server.key, base_url=server.base_url, price=PRICE)


def client(backend, retry, **kw) -> Client:
    kw.setdefault("batch_policy", BatchPolicy(deadline=600, first_poll=5, max_poll=60))
    return Client(backend, retry=retry, batch=True, **kw)


@pytest.fixture(params=["anthropic", "openai"])
def provider(request, anthropic_server, openai_server):
    """(server, backend factory, direct-call path, batch-create path) for each provider."""
    if request.param == "anthropic":
        return anthropic_server, anthropic, "/v1/messages", "/v1/messages/batches"
    return openai_server, openai_backend, "/v1/chat/completions", "/v1/batches"


def test_bulk_map_goes_as_one_batch_matched_by_custom_id(provider, retry, sleep):
    server, make, direct, create = provider
    c = client(make(server), retry)
    out = c.map(reqs(), bulk=True)
    assert [o.text for o in out] == [f"Answer: task {i // 2}" for i in range(6)]  # order restored
    assert len(server.seen(create)) == 1 and server.seen(direct) == []
    assert c.stats.batched == 6 and c.stats.calls["attempt"] == 6
    assert sleep.calls and sleep.calls[0] == 5  # polled with backoff
    assert c.stats.usage.output_tokens > 0


def test_batch_is_billed_at_half_price(provider, retry):
    server, make, _, _ = provider
    budget = Budget(max_cost=100.0)
    c = client(make(server), retry, budget=budget)
    c.map(reqs(), bulk=True)
    assert budget.cost_used == pytest.approx(PRICE.cost(c.stats.usage) * 0.5)


def test_without_batch_mode_or_bulk_flag_calls_are_direct(provider, retry):
    server, make, direct, create = provider
    Client(make(server), retry=retry).map(reqs(4), bulk=True)
    client(make(server), retry).map(reqs(4)[:2] + [Request("attempt", DOCS, "other")], bulk=False)
    assert server.seen(create) == [] and len(server.seen(direct)) == 7


def test_cache_applies_before_and_after_a_batch(provider, retry):
    server, make, direct, create = provider
    c = client(make(server), retry)
    c.complete(reqs()[0])
    c.map(reqs(), bulk=True)
    c.map(reqs(), bulk=True)
    assert len(server.seen(direct)) == 1 and len(server.seen(create)) == 1
    assert c.stats.cache_hits == 1 + 6


def test_failed_items_fall_back_to_direct_calls(provider, retry):
    server, make, direct, _ = provider
    server.batch_item_errors = {"r1", "r4"}
    c = client(make(server), retry)
    out = c.map(reqs(), bulk=True)
    assert all(o.ok and o.text for o in out)
    assert len(server.seen(direct)) == 2 and c.stats.batched == 4
    assert c.stats.batch_fallbacks == ["2 of 6 batch items unfinished"]


def test_batch_past_its_deadline_is_cancelled_and_falls_back(provider, retry, sleep):
    server, make, direct, _ = provider
    server.polls_until_done = 10**6
    server.batch_never_ends = True
    c = client(make(server), retry, batch_policy=BatchPolicy(deadline=100, first_poll=10, max_poll=40))
    out = c.map(reqs(), bulk=True)
    assert all(o.ok for o in out) and len(server.seen(direct)) == 6
    assert sum(sleep.calls) >= 100 and "not done after 100s" in c.stats.batch_fallbacks[0]
    assert any(r.path.endswith("/cancel") for r in server.requests)


def test_refused_batch_falls_back(anthropic_server, retry):
    anthropic_server.batch_submit_fail = 500
    c = client(anthropic(anthropic_server), retry)
    assert all(o.ok for o in c.map(reqs(), bulk=True))
    assert len(anthropic_server.seen("/v1/messages")) == 6
    assert "batch submit: server: HTTP 500" in c.stats.batch_fallbacks[0]


def test_openai_failed_batch_falls_back(openai_server, retry):
    openai_server.batch_status_after_done = "failed"
    c = client(openai_backend(openai_server), retry)
    assert all(o.ok for o in c.map(reqs(), bulk=True))
    assert len(openai_server.seen("/v1/chat/completions")) == 6
    assert "failed at the provider" in c.stats.batch_fallbacks[0]


def test_openai_batch_input_file_is_chat_completions_jsonl(openai_server, retry):
    client(openai_backend(openai_server), retry).map(reqs(2), bulk=True)
    (batch,) = openai_server.batches.values()
    assert batch["body"]["endpoint"] == "/v1/chat/completions"
    assert batch["body"]["completion_window"] == "24h"
    (upload,) = openai_server.seen("/v1/files")
    assert b'"custom_id": "r0"' in upload.body and b'"url": "/v1/chat/completions"' in upload.body
    assert b'name="purpose"\r\n\r\nbatch' in upload.body


def test_polling_holds_no_limiter_slot(anthropic_server, retry):
    limiter = Limiter(1)
    free_while_polling: list[bool] = []

    def sleep(seconds: float) -> None:
        got = limiter._sem.acquire(blocking=False)
        free_while_polling.append(got)
        if got:
            limiter._sem.release()

    retry.sleep = sleep
    client(anthropic(anthropic_server), retry, limiter=limiter).map(reqs(), bulk=True)
    assert free_while_polling and all(free_while_polling)


def test_budget_refuses_a_batch_that_cannot_fit(anthropic_server, retry):
    from skillopt_sleep.backends.base import BudgetExceeded

    budget = Budget(max_tokens=1000)
    with pytest.raises(BudgetExceeded):
        client(anthropic(anthropic_server), retry, budget=budget).map(reqs(), bulk=True)
    assert anthropic_server.requests == [] and budget.tokens_used == 0
    assert budget._reserved_tokens == 0  # reservations released
