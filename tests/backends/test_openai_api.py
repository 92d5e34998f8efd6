"""The openai backend through the real SDK against a fake OpenAI API on 127.0.0.1, tool checks' stub
tools declared as functions included."""

from __future__ import annotations

import json

import pytest
from tests.support.http_base import Fail, Malformed, Slow
from tests.backends.test_base import STUBBED

from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.base import ProviderError, Request
from skillopt_sleep.backends.client import Client, preflight
from skillopt_sleep.backends.openai_api import OpenAIBackend

DOCS = "# Memory\nRelease notes group changes under Added / Fixed / Changed.\n" * 20


def backend(server, **kw) -> OpenAIBackend:
    kw.setdefault("api_key", server.key)
    return OpenAIBackend("local-model", base_url=server.base_url, **kw)


def req(user: str = "Write the release notes.", **kw) -> Request:
    return Request(purpose="attempt", system=DOCS, user=user, **kw)


def test_static_prefix_is_the_first_system_message(openai_server):
    completion = backend(openai_server).complete(req(max_tokens=55, temperature=0.2))
    assert completion.ok and completion.text.startswith("Answer: Write the release")
    body = openai_server.seen("/v1/chat/completions")[0].body
    assert body["messages"] == [
        {"role": "system", "content": DOCS},
        {"role": "user", "content": "Write the release notes."},
    ]
    assert body["max_tokens"] == 55 and body["temperature"] == pytest.approx(0.2)
    assert "response_format" not in body


def test_max_output_caps_every_call():
    capped = make_backend("openai:base_url=http://127.0.0.1:9/v1,api_key=none,max_output=64")
    assert capped.chat_params(req(max_tokens=1000))["max_tokens"] == 64
    assert capped.chat_params(req(max_tokens=10))["max_tokens"] == 10
    anthropic = make_backend("anthropic:max_output=64")
    assert anthropic.message_params(req(max_tokens=1000))["max_tokens"] == 64


def test_official_endpoint_uses_max_completion_tokens():
    assert OpenAIBackend("gpt-5", api_key="k").chat_params(req())["max_completion_tokens"] == 1024
    no_temp = OpenAIBackend("gpt-5", api_key="k", send_temperature=False).chat_params(req())
    assert "temperature" not in no_temp


def test_cached_tokens_are_split_from_uncached_input(openai_server):
    b = backend(openai_server)
    first, second = b.complete(req("one")), b.complete(req("two"))
    assert first.usage.cache_read_tokens == 0 and first.usage.input_tokens > 0
    assert second.usage.cache_read_tokens > 0
    assert second.usage.input_tokens == first.usage.input_tokens - second.usage.cache_read_tokens
    assert second.usage.output_tokens > 0


def test_json_schema_is_sent_as_response_format(openai_server):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    completion = backend(openai_server).complete(req(json_schema=schema))
    assert json.loads(completion.text) == {"ok": True}
    sent = openai_server.seen("/v1/chat/completions")[0].body["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == schema


def test_retry_after_is_honored_and_retries_bounded(openai_server, retry, sleep):
    openai_server.push(Fail(429, "Rate limit reached", {"retry-after": "3"}), Fail(503), Fail(502))
    client = Client(backend(openai_server), retry=retry)
    assert client.complete(req()).ok
    assert sleep.calls[0] == 3.0 and len(sleep.calls) == 3
    openai_server.push(*[Fail(500)] * 10)
    with pytest.raises(ProviderError) as info:
        client.complete(req("another"))
    assert info.value.kind == "server"
    assert len(openai_server.seen("/v1/chat/completions")) == 4 + retry.attempts


def test_retry_after_longer_than_the_total_wait_gives_up_at_once(openai_server, retry, sleep):
    openai_server.push(Fail(429, "quota window", {"retry-after": "3600"}))
    with pytest.raises(ProviderError) as info:
        Client(backend(openai_server), retry=retry).complete(req())
    assert info.value.kind == "rate_limit" and "asked to wait 3600s" in info.value.message
    assert sleep.calls == []


@pytest.mark.parametrize("status,kind", [(401, "auth"), (404, "model"), (400, "bad_request"), (422, "bad_request")])
def test_fatal_errors_fail_fast(openai_server, retry, sleep, status, kind):
    openai_server.push(Fail(status, f"scripted {status}"))
    with pytest.raises(ProviderError) as info:
        Client(backend(openai_server), retry=retry).complete(req())
    assert info.value.kind == kind and sleep.calls == []


def test_missing_key_is_a_clear_auth_error(openai_server):
    completion = OpenAIBackend("m", base_url=openai_server.base_url).complete(req())
    assert completion.error == "auth" and "OPENAI_API_KEY" in completion.error_message
    assert openai_server.requests == []


def test_timeout_and_malformed_bodies_are_transient(openai_server, retry):
    openai_server.push(Slow(5.0), Malformed())
    client = Client(backend(openai_server, timeout=0.3), retry=retry)
    assert client.complete(req()).text.startswith("Answer:")
    assert client.stats.retries == 2


def test_an_empty_answer_is_retried_then_fails(openai_server, retry):
    openai_server.responder = lambda body: ""
    with pytest.raises(ProviderError) as info:
        Client(backend(openai_server), retry=retry).complete(req())
    assert info.value.kind == "empty"


def test_env_and_spec(openai_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", openai_server.key)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    b = make_backend("openai:model=gpt-4o-mini")
    assert b.id == "openai:gpt-4o-mini" and b.price.input == pytest.approx(0.15)
    assert b.token_param == "max_tokens"  # a non-official base URL
    assert b.complete(req()).ok


def test_preflight_on_a_dead_server_is_one_line(retry):
    client = Client(OpenAIBackend("m", api_key="k", base_url="http://127.0.0.1:9/v1", timeout=2), retry=retry)
    with pytest.raises(ProviderError) as info:
        preflight(client)
    assert info.value.kind == "connection"
    assert str(info.value).startswith("openai:m: connection: preflight failed: cannot reach openai")
    assert "\n" not in str(info.value)


# -- tool checks: stub tools are declared, their calls recorded, never executed ------------------


def test_openai_declares_stub_tools(openai_server):
    backend = OpenAIBackend("gpt-5", api_key=openai_server.key, base_url=openai_server.base_url)
    assert backend.complete(STUBBED).ok
    (tool,) = openai_server.seen("/v1/chat/completions")[0].body["tools"]
    assert tool["type"] == "function" and tool["function"]["name"] == "run_tests"
