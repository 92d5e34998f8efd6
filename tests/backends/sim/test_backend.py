"""The simulator as a backend (backends/sim/backend.py): seeded, so the same request draws the same
answer and another seed, sample or document set draws again; down, it fails as a provider would;
a purpose it has no behaviour for is a bad request; it reports usage."""

from __future__ import annotations

import pytest

from skillopt_sleep.checks import judges
from skillopt_sleep.backends.base import ProviderError, Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.retry import RetryPolicy

from tests.backends.sim.test_target import N, SIGNOFF, attempt, sim


# -- determinism ---------------------------------------------------------------------------------


def test_same_seed_and_sample_give_the_same_response():
    request = attempt([SIGNOFF, {"op": "section_present", "arg": "Testing"}], sample=3)
    a, b = sim(seed=5).complete(request), sim(seed=5).complete(request)
    assert (a.text, a.tools_called) == (b.text, b.tools_called)
    assert a.text


def test_seed_changes_the_draws():
    texts = {sim(seed=seed).complete(attempt([SIGNOFF], sample=0)).text for seed in range(10)}
    assert len(texts) > 1


def test_samples_are_independent_draws():
    backend = sim(follow=0.9, base=0.5, seed=1)
    outcomes = []
    for s in range(N):
        c = backend.complete(attempt([SIGNOFF], sample=s))
        outcomes.append(judges.score_rule([SIGNOFF], c.text).hard)
    rate = sum(outcomes) / N
    assert 0.42 < rate < 0.58
    same_as_next = sum(a == b for a, b in zip(outcomes, outcomes[1:], strict=False)) / (N - 1)
    assert 0.40 < same_as_next < 0.60  # neither copies nor alternation
    assert len({backend.complete(attempt([SIGNOFF], sample=s)).text for s in range(20)}) > 5


def test_documents_change_the_draw_stream():
    a = sim(seed=2).complete(attempt([SIGNOFF], documents="", sample=0)).text
    b = sim(seed=2).complete(attempt([SIGNOFF], documents="Be careful.", sample=0)).text
    c = [sim(seed=2).complete(attempt([SIGNOFF], documents=f"Note {i}.", sample=0)).text for i in range(10)]
    assert len({a, b, *c}) > 1


# -- failures ------------------------------------------------------------------------------------


@pytest.mark.parametrize("purpose", ["attempt", "reflect", "judge", "preflight"])
def test_down_returns_an_error_completion(purpose: str):
    c = sim(down=True).complete(Request(purpose, "s", "u", payload={"task": {}, "tasks": []}))
    assert not c.ok and c.error == "server" and c.text == ""


def test_down_through_the_client_raises():
    sleeps = []
    client = Client(sim(down=True), retry=RetryPolicy(attempts=3, sleep=sleeps.append))
    with pytest.raises(ProviderError) as info:
        client.complete(attempt([SIGNOFF]))
    assert info.value.kind == "server" and len(sleeps) == 2


def test_unknown_purpose_is_a_bad_request():
    c = sim().complete(Request("no-such-purpose", "s", "u"))
    assert c.error == "bad_request" and c.text == ""


def test_usage_is_reported():
    c = sim().complete(attempt([SIGNOFF]))
    assert c.usage.input_tokens > 0 and c.usage.output_tokens > 0 and c.model == "sim"
