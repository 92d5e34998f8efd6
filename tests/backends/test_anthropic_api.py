"""The anthropic backend through the real SDK against a fake Messages API on 127.0.0.1: requests,
usage, errors, preflight, and tool checks' stub tools declared with their calls recorded. Also what
prompt caching saves on a night-like call sequence, measured against the fake Anthropic server
(which bills a prefix marked ``cache_control`` that it has seen before as a cache read, and caches
nothing under 1024 tokens, like the real API).

Run with ``-s`` to see the caching numbers:
``python -m pytest tests/backends/test_anthropic_api.py -s -k caching``.
"""

from __future__ import annotations

import json

import pytest
from tests.support.anthropic_server import FakeAnthropic
from tests.support.http_base import Fail, Malformed, Slow
from tests.backends.test_base import STUBBED

from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.anthropic_api import AnthropicBackend
from skillopt_sleep.backends.base import ProviderError, Request
from skillopt_sleep.backends.client import Client, preflight
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.pricing import Price
from skillopt_sleep.types import Usage

DOCS = "# Skill\nAlways write commit subjects under 50 characters.\n" * 20


def backend(server, **kw) -> AnthropicBackend:
    kw.setdefault("api_key", server.key)
    return AnthropicBackend("claude-haiku-4-5", base_url=server.base_url, **kw)


def req(user: str = "Write the commit message.", **kw) -> Request:
    return Request(purpose="attempt", system=DOCS, user=user, **kw)


def test_system_prefix_is_a_cached_block_and_task_is_the_user_message(anthropic_server):
    completion = backend(anthropic_server).complete(req(max_tokens=77, temperature=0.3))
    assert completion.ok and completion.text.startswith("Answer: Write the commit")
    body = anthropic_server.seen("/v1/messages")[0].body
    assert body["system"] == [{"type": "text", "text": DOCS, "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": "Write the commit message."}]
    assert body["model"] == "claude-haiku-4-5" and body["max_tokens"] == 77
    assert body["temperature"] == pytest.approx(0.3)


def test_usage_counts_cache_write_then_cache_read(anthropic_server):
    b = backend(anthropic_server)
    first, second = b.complete(req("task one")), b.complete(req("task two"))
    assert first.usage.cache_write_tokens > 0 and first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens == first.usage.cache_write_tokens
    assert second.usage.cache_write_tokens == 0
    assert second.usage.input_tokens > 0 and second.usage.output_tokens > 0


def test_sdk_does_not_retry_by_itself(anthropic_server):
    anthropic_server.push(Fail(500))
    completion = backend(anthropic_server).complete(req())
    assert completion.error == "server" and completion.text == ""
    assert len(anthropic_server.seen("/v1/messages")) == 1


def test_rate_limit_is_retried_honoring_retry_after(anthropic_server, retry, sleep):
    anthropic_server.push(Fail(429, "slow down", {"retry-after": "7"}), Fail(529, "overloaded"))
    client = Client(backend(anthropic_server), retry=retry)
    completion = client.complete(req())
    assert completion.ok and completion.text.startswith("Answer:")
    assert sleep.calls[0] == 7.0  # exactly what the provider asked for
    assert len(sleep.calls) == 2 and client.stats.retries == 2
    assert len(anthropic_server.seen("/v1/messages")) == 3


def test_server_errors_are_bounded_and_never_become_text(anthropic_server, retry, sleep):
    anthropic_server.push(*[Fail(500, "internal boom")] * 10)
    client = Client(backend(anthropic_server), retry=retry)
    with pytest.raises(ProviderError) as info:
        client.complete(req())
    assert info.value.kind == "server" and "internal boom" in info.value.message
    assert "gave up after 4 tries" in info.value.message
    assert len(anthropic_server.seen("/v1/messages")) == retry.attempts
    assert len(sleep.calls) == retry.attempts - 1
    assert sleep.calls == sorted(sleep.calls)  # backoff grows


@pytest.mark.parametrize("status,kind", [(401, "auth"), (403, "auth"), (404, "model"), (400, "bad_request")])
def test_fatal_errors_fail_fast(anthropic_server, retry, sleep, status, kind):
    anthropic_server.push(Fail(status, f"scripted {status}"))
    with pytest.raises(ProviderError) as info:
        Client(backend(anthropic_server), retry=retry).complete(req())
    assert info.value.kind == kind and f"HTTP {status}" in info.value.message
    assert len(anthropic_server.seen("/v1/messages")) == 1 and sleep.calls == []


def test_wrong_key_is_an_auth_error(anthropic_server):
    completion = backend(anthropic_server, api_key="wrong-key").complete(req())
    assert completion.error == "auth" and "invalid x-api-key" in completion.error_message
    assert "wrong-key" not in completion.error_message


def test_missing_key_is_a_clear_auth_error_without_a_request(anthropic_server):
    completion = AnthropicBackend("claude-haiku-4-5", base_url=anthropic_server.base_url).complete(req())
    assert completion.error == "auth" and "ANTHROPIC_API_KEY" in completion.error_message
    assert anthropic_server.requests == []


def test_timeout_is_transient(anthropic_server, retry):
    anthropic_server.push(Slow(5.0))
    client = Client(backend(anthropic_server, timeout=0.3), retry=retry)
    assert client.complete(req()).ok
    assert client.stats.retries == 1


def test_malformed_body_is_a_transient_error_not_an_answer(anthropic_server, retry):
    anthropic_server.push(Malformed())
    direct = backend(anthropic_server).complete(req())
    assert direct.error == "server" and direct.text == ""
    anthropic_server.push(Malformed(), Malformed())
    client = Client(backend(anthropic_server), retry=retry)
    assert client.complete(req()).text.startswith("Answer:")


def test_connection_refused_is_a_connection_error():
    completion = AnthropicBackend("m", api_key="k", base_url="http://127.0.0.1:9", timeout=2).complete(req())
    assert completion.error == "connection"


def test_json_schema_goes_as_output_config(anthropic_server):
    schema = {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}
    completion = backend(anthropic_server).complete(req(json_schema=schema))
    assert json.loads(completion.text) == {"score": 1}
    body = anthropic_server.seen("/v1/messages")[0].body
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}


def test_spec_options_and_env(anthropic_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", anthropic_server.key)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.base_url)
    b = make_backend("anthropic:model=claude-sonnet-4-6,timeout=5,price_in=2,price_out=9")
    assert b.id == "anthropic:claude-sonnet-4-6" and b.price.input == 2 and b.price.output == 9
    assert b.complete(req()).ok
    assert anthropic_server.key not in repr(b)


def test_preflight_names_provider_and_cause(anthropic_server, retry):
    good = Client(backend(anthropic_server), retry=retry, limiter=Limiter(1))
    preflight(good)
    assert anthropic_server.seen("/v1/messages")[-1].body["max_tokens"] <= 16
    bad = Client(
        AnthropicBackend("no-such-model", api_key=anthropic_server.key, base_url=anthropic_server.base_url), retry=retry
    )
    with pytest.raises(ProviderError) as info:
        preflight(bad)
    line = str(info.value)
    assert "\n" not in line and line.startswith("anthropic:no-such-model: model: preflight failed")


# -- prompt caching on a night-like call sequence ------------------------------------------------

SKILL = "".join(f"- Rule {i}: when writing commit messages, keep the subject under 50 chars.\n" for i in range(40))
MEMORY = "".join(f"- Project fact {i}: tests live in tests/, run them with pytest -q.\n" for i in range(40))
TARGET_ROLE = "You are the coding agent. Follow the skill and memory documents below.\n\n"
OPTIMIZER_ROLE = "You improve the skill and memory documents from failed attempts.\n\n"
TRAIN, K, VAL = 6, 4, 6


def night_like(client: Client) -> None:
    """dream (train × K) → reflect (2) → gate (val baseline, val candidate)."""
    docs = SKILL + MEMORY
    target = TARGET_ROLE + docs
    client.map(
        [
            Request("attempt", target, f"train task {t}: write the commit message for diff #{t}", sample=k)
            for t in range(TRAIN)
            for k in range(K)
        ]
    )
    client.map([Request("reflect", OPTIMIZER_ROLE + docs, f"failures batch {i}: ...") for i in range(2)])
    client.map([Request("attempt", target, f"val task {v}: summarize PR #{v}") for v in range(VAL)])
    candidate = TARGET_ROLE + docs + "- New rule: mention the touched files.\n"
    client.map([Request("attempt", candidate, f"val task {v}: summarize PR #{v}") for v in range(VAL)])


def measure(prompt_cache: bool) -> Usage:
    with FakeAnthropic(min_cache_tokens=1024) as server:
        backend = AnthropicBackend(
            "claude-sonnet-4-6", api_key=server.key, base_url=server.base_url, prompt_cache=prompt_cache
        )
        client = Client(backend, limiter=Limiter(1))  # sequential: deterministic cache order
        night_like(client)
        return client.stats.usage


def billed_input(usage: Usage) -> float:
    """Input billed in uncached-token equivalents (cache read 0.1x, cache write 1.25x)."""
    return usage.input_tokens + 0.1 * usage.cache_read_tokens + 1.25 * usage.cache_write_tokens


@pytest.mark.slow  # two whole nights against the fake API
def test_caching_cuts_the_input_a_night_bills():
    on, off = measure(True), measure(False)
    total_on = on.input_tokens + on.cache_read_tokens + on.cache_write_tokens
    total_off = off.input_tokens + off.cache_read_tokens + off.cache_write_tokens
    assert total_on == total_off  # the same prompts were sent
    assert off.cache_read_tokens == off.cache_write_tokens == 0
    assert on.cache_read_tokens > 0 and on.cache_write_tokens > 0
    price = Price(3.0, 15.0)
    report = {
        "calls": TRAIN * K + 2 + 2 * VAL,
        "caching_on": {**on.to_dict(), "billed_input_equivalent": round(billed_input(on))},
        "caching_off": {**off.to_dict(), "billed_input_equivalent": round(billed_input(off))},
        "billed_input_ratio": round(billed_input(on) / billed_input(off), 3),
        "cost_usd_at_3_15": {"on": round(price.cost(on), 4), "off": round(price.cost(off), 4)},
    }
    print("\nprompt caching on a night-like sequence:", json.dumps(report, indent=1))
    assert billed_input(on) < 0.35 * billed_input(off)


# -- tool checks: stub tools are declared, their calls recorded, never executed ------------------


def test_anthropic_declares_stub_tools_and_records_their_calls(anthropic_server):
    backend = AnthropicBackend("claude-haiku-4-5", api_key=anthropic_server.key, base_url=anthropic_server.base_url)
    assert backend.complete(STUBBED).ok
    (tool,) = anthropic_server.seen("/v1/messages")[0].body["tools"]
    assert tool["name"] == "run_tests" and tool["input_schema"]["type"] == "object"
    assert "not executed" in tool["description"]
    assert "tools" not in backend.message_params(Request(purpose="attempt", system="S", user="U"))
    message = {
        "content": [{"type": "tool_use", "id": "t1", "name": "run_tests", "input": {}}],
        "usage": {"input_tokens": 3, "output_tokens": 2},
        "model": "m",
    }
    assert backend.completion_from_message(message).tools_called == ["run_tests"]
