"""The handler-backed fake backend the unit tests build on (tests/support/fake_backend.py)."""

from __future__ import annotations

import threading

import pytest

from skillopt_sleep.backends.base import Completion, Request, can_offer_tools
from skillopt_sleep.backends.sim import SimBackend

from tests.support.fake_backend import FakeBackend, err, forward, ok, script


def req(user: str = "u", purpose: str = "attempt") -> Request:
    return Request(purpose=purpose, system="s", user=user)


def test_a_script_answers_in_order_then_falls_back() -> None:
    backend = FakeBackend(script(ok("one"), "two", err("timeout"), then=lambda r: "after " + r.user))
    replies = [backend.complete(req(str(i))) for i in range(4)]
    assert [c.text for c in replies] == ["one", "two", "", "after 3"]
    assert replies[2].error == "timeout" and not replies[2].ok
    assert [r.user for r in backend.requests] == ["0", "1", "2", "3"]


def test_a_dict_or_list_is_answered_as_json_and_purposes_are_recorded() -> None:
    backend = FakeBackend(lambda r: {"edits": []} if r.purpose == "reflect" else [1, 2])
    assert backend.complete(req(purpose="reflect")).text == '{"edits": []}'
    assert backend.complete(req()).text == "[1, 2]"
    assert backend.purposes == ["reflect", "attempt"]


def test_a_handler_that_raises_raises_from_complete_and_the_request_is_still_recorded() -> None:
    def broken(request: Request) -> Completion:
        raise KeyError("oops")

    backend = FakeBackend(broken)
    with pytest.raises(KeyError):
        backend.complete(req())
    assert len(backend.requests) == 1 and backend.in_flight == 0


def test_forward_lets_another_backend_answer() -> None:
    sim = SimBackend()
    backend = FakeBackend(forward(sim), id=sim.id, price=sim.price, offline=sim.offline)
    assert backend.complete(req("hello")).ok and backend.offline and backend.id == sim.id


def test_tools_are_offered_only_when_asked_for() -> None:
    assert not can_offer_tools(FakeBackend(), ("run_tests",)) and can_offer_tools(FakeBackend(), ())
    assert can_offer_tools(FakeBackend(tools=True), ("run_tests",))


def test_calls_in_flight_at_once_are_counted() -> None:
    release, started = threading.Event(), threading.Barrier(3)

    def slow(request: Request) -> str:
        started.wait(10)
        release.wait(10)
        return "done"

    backend = FakeBackend(slow)
    threads = [threading.Thread(target=backend.complete, args=(req(str(i)),)) for i in range(2)]
    for thread in threads:
        thread.start()
    started.wait(10)
    release.set()
    for thread in threads:
        thread.join(10)
    assert backend.max_in_flight == 2 and backend.in_flight == 0
