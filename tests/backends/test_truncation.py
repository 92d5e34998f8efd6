"""A reply cut off at the output-token limit, through the real SDKs against the fake providers:
flagged by the adapter, asked for once more with a larger cap by the client, and — still cut off —
left out of the score and counted, never scored as a wrong answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.backends.anthropic_api import AnthropicBackend
from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.batching import BatchPolicy
from skillopt_sleep.backends.client import Client, preflight
from skillopt_sleep.backends.openai_api import OpenAIBackend
from skillopt_sleep.backends.truncation import ROOM_FACTOR
from skillopt_sleep.documents.managed_block import load_documents
from skillopt_sleep.replay.dream import run_attempts
from skillopt_sleep.replay.scoring import CUT_OFF
from skillopt_sleep.types import TaskRecord

from tests.support.fake_backend import FakeBackend, script
from tests.support.http_base import Reply

LONG = "Signed-off-by: a very long and careful answer. " * 8  # 384 characters: 96 fake tokens


def anthropic(server, **kw) -> AnthropicBackend:
    return AnthropicBackend("claude-haiku-4-5", api_key=server.key, base_url=server.base_url, **kw)


def openai_backend(server, **kw) -> OpenAIBackend:
    return OpenAIBackend("gpt-4o-mini", api_key=server.key, base_url=server.base_url, **kw)


@pytest.fixture(params=["anthropic", "openai"])
def provider(request, anthropic_server, openai_server):
    """(server, backend factory, the endpoint, the body's cap field) for each provider."""
    if request.param == "anthropic":
        return anthropic_server, anthropic, "/v1/messages", "max_tokens"
    return openai_server, openai_backend, "/v1/chat/completions", "max_tokens"


def req(max_tokens: int = 40) -> Request:
    return Request(purpose="attempt", system="docs", user="Write the commit message.", max_tokens=max_tokens)


def test_the_adapters_flag_a_cut_off_reply(provider):
    server, make, _, _ = provider
    server.responder = lambda body: LONG
    cut = make(server).complete(req(max_tokens=40))
    assert cut.ok and cut.truncated and cut.text == LONG[:160]
    whole = make(server).complete(req(max_tokens=400))
    assert whole.ok and not whole.truncated and whole.text == LONG


def test_the_client_asks_once_more_with_a_larger_cap(provider, retry):
    server, make, path, field = provider
    server.responder = lambda body: LONG
    client = Client(make(server), retry=retry)
    completion = client.complete(req(max_tokens=40))
    assert completion.ok and not completion.truncated and completion.text == LONG
    assert [r.body[field] for r in server.seen(path)] == [40, 40 * ROOM_FACTOR]
    assert client.stats.truncation_retries == 1 and client.stats.calls["attempt"] == 2


def test_still_cut_off_is_handed_back_marked_after_one_retry(provider, retry):
    server, make, path, _ = provider
    server.responder = lambda body: Reply("Signed-off-by: half an ans", cut_off=True)
    client = Client(make(server), retry=retry)
    completion = client.complete(req())
    assert completion.ok and completion.truncated
    assert len(server.seen(path)) == 2  # one retry, never a loop


def test_no_retry_when_the_configured_cap_already_binds(provider, retry):
    server, make, path, field = provider
    server.responder = lambda body: LONG
    client = Client(make(server, max_output=40), retry=retry)
    completion = client.complete(req(max_tokens=40))
    assert completion.truncated and [r.body[field] for r in server.seen(path)] == [40]
    assert client.stats.truncation_retries == 0


def test_a_cut_off_sample_is_left_out_and_counted_not_scored(provider, retry, tmp_path: Path):
    server, make, _, _ = provider
    # one task's replies are cut off whatever the cap; the other's answer in full
    server.responder = lambda body: (
        Reply("Signed-off-by: half", cut_off=True) if "rambling" in str(body) else "Signed-off-by: me"
    )
    checks = [{"op": "contains", "arg": "Signed-off-by:"}]
    tasks = [
        TaskRecord(id="short", intent="commit message", judge={"kind": "rule", "checks": checks}),
        TaskRecord(id="long", intent="rambling essay", judge={"kind": "rule", "checks": checks}),
    ]
    client = Client(make(server), retry=retry)
    got = run_attempts(client, tasks, load_documents(tmp_path), range(2))
    assert [a.soft for a in got["short"]] == [1.0, 1.0]
    assert got["long"] == []  # left out, not two zeros
    assert client.stats.left_out == {CUT_OFF: 2}


def test_a_cut_off_preflight_is_an_answer_all_the_same(provider, retry):
    server, make, path, _ = provider
    server.responder = lambda body: LONG
    client = Client(make(server), retry=retry)
    preflight(client)  # the provider answered: that is all a preflight asks
    assert len(server.seen(path)) == 1 and client.stats.truncation_retries == 0


def test_a_truncated_empty_reply_is_not_an_empty_completion(retry):
    backend = FakeBackend(script(Completion(text="", truncated=True)))  # as the CLIs report it
    client = Client(backend, retry=retry)
    completion = client.complete(req())
    assert completion.ok and completion.truncated
    assert len(backend.requests) == 1  # not retried as "empty", and no larger cap to ask for


def test_a_cut_off_batch_item_is_asked_for_again_directly_with_a_larger_cap(provider, retry):
    server, make, path, field = provider
    server.responder = lambda body: LONG
    client = Client(
        make(server), retry=retry, batch=True, batch_policy=BatchPolicy(deadline=600, first_poll=5, max_poll=60)
    )
    out = client.map(
        [req(max_tokens=40), Request(purpose="attempt", system="docs", user="other", max_tokens=40)], bulk=True
    )
    assert all(c.ok and not c.truncated and c.text == LONG for c in out)
    assert sorted(r.body[field] for r in server.seen(path)) == [40 * ROOM_FACTOR] * 2
