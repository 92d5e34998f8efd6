"""The client: preflight, the per-sample call cache, shared in-flight calls, the concurrent map, and
a call that ends in a tool call (a stub tool was offered) is an answer, not an empty completion."""

from __future__ import annotations

import pytest

from skillopt_sleep.backends.base import Completion, ProviderError, Request
from skillopt_sleep.backends.client import Client, preflight
from skillopt_sleep.sanitize import clean_text
from skillopt_sleep.backends.limits import Limiter

from tests.backends.test_base import STUBBED
from tests.support.fake_backend import FakeBackend, err, ok, script


def req(user: str = "task", sample: int = 0, max_tokens: int = 100, purpose: str = "attempt") -> Request:
    return Request(purpose=purpose, system="docs " * 50, user=user, sample=sample, max_tokens=max_tokens)


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
    a, b = (
        Client(backend, limiter=limiter, retry=retry),
        Client(backend, limiter=limiter, retry=retry, role="optimizer"),
    )
    out = a.map([req(f"t{i}") for i in range(30)]) + b.map([req(f"u{i}") for i in range(30)])
    assert [c.text for c in out[:3]] == ["answer to t0", "answer to t1", "answer to t2"]
    assert backend.max_in_flight <= 3


def test_map_raises_on_a_fatal_error(retry):
    backend = FakeBackend(lambda r: err("auth") if r.user == "t3" else ok())
    with pytest.raises(ProviderError):
        Client(backend, retry=retry).map([req(f"t{i}") for i in range(8)])


def test_no_control_character_or_escape_sequence_reaches_a_provider(retry):
    backend = FakeBackend()
    hostile = "fix \x1b[2J\x1b]0;title\x07the bug\x00 now\u202e sk-ant-\x00api03-" + "a" * 40
    Client(backend, retry=retry).complete(
        Request(
            purpose="attempt",
            system="## Rules\r\n- be brief\x1b[31m\n",
            user=hostile,
            payload={"task": {"intent": hostile}, "documents": "- be brief\x07"},
        )
    )
    (sent,) = backend.requests
    for text in (sent.system, sent.user, sent.payload["task"]["intent"], sent.payload["documents"]):
        assert clean_text(text) == text and "\x1b" not in text and "\x00" not in text
    assert "sk-ant-api03" not in sent.user  # a control character cannot split a secret past redaction
    assert sent.system == "## Rules\n- be brief\n"


# -- tool checks ---------------------------------------------------------------------------------


def test_a_call_that_ends_in_a_tool_call_is_an_answer_not_an_empty_completion(retry):
    # a model may answer with a tool call and no text when a tool is offered
    tool_only = FakeBackend(lambda request: Completion(text="", tools_called=list(request.tools)), tools=True)
    completion = Client(tool_only, retry=retry).complete(STUBBED)
    assert completion.ok and completion.tools_called == ["run_tests"] and completion.text == ""
