"""Model replies that must be JSON (``reply_repair.py``): parsed, repaired once, else unusable
with a reason."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.reply_repair import REPLY_EXCERPT, Unusable, content_of, parse_replies, repair_request


class RepairingClient:
    """Answers each repair request with the next of ``answers``; records what it was asked."""

    def __init__(self, answers: list[Completion]) -> None:
        self.answers = list(answers)
        self.asked: list[Request] = []

    def map(self, requests: Sequence[Request]) -> list[Completion]:
        self.asked.extend(requests)
        return [self.answers.pop(0) for _ in requests]


def _request(user: str = "Rewrite the rule.") -> Request:
    return Request(purpose="reword", system="s", user=user, payload={"task": "t"})


def test_content_of_reads_the_content_string_and_refuses_anything_else() -> None:
    assert content_of('Sure: {"content": "Keep commits short"}') == "Keep commits short"
    for text in ("no json here", '{"content": ""}', '{"content": 3}', '["content"]'):
        with pytest.raises(ValueError):
            content_of(text)


def test_a_repair_request_shows_the_reply_and_the_error_and_asks_for_json_only() -> None:
    request = _request()
    repair = repair_request(request, "Here is \x1b[31mprose" + "x" * (2 * REPLY_EXCERPT), "not JSON.")
    assert repair.purpose == request.purpose and repair.system == request.system
    assert repair.temperature == 0.0 and repair.payload == {"task": "t", "repair": True}
    assert repair.user.startswith("Rewrite the rule.")
    assert "could not be used: not JSON." in repair.user and "not JSON.." not in repair.user
    assert "\x1b" not in repair.user, "model output goes back to a provider cleaned"
    assert "x" * REPLY_EXCERPT not in repair.user and " …" in repair.user
    assert "(empty)" in repair_request(request, "  ", "not JSON").user


def test_only_the_unusable_replies_are_repaired_once_and_in_order() -> None:
    requests = [_request("first"), _request("second"), _request("third"), _request("fourth")]
    replies = [
        Completion(text='{"content": "one"}'),
        Completion(text="prose"),
        Completion(text='{"content": "cut', truncated=True),
        Completion(text="prose again"),
    ]
    client = RepairingClient(
        [Completion(text='{"content": "two"}'), Completion(text="x", truncated=True), Completion(text="still prose")]
    )
    results, repairs = parse_replies(client, requests, replies, content_of, who="optimizer")  # type: ignore[arg-type]
    assert repairs == 3 and [r.user.splitlines()[0] for r in client.asked] == ["second", "third", "fourth"]
    assert "cut off at the output-token limit" in client.asked[1].user
    assert results[:2] == ["one", "two"]
    assert results[2] == Unusable("optimizer reply was cut off at the output-token limit, also after one repair")
    assert isinstance(results[3], Unusable) and results[3].reason == "optimizer reply was not JSON after one repair"
    assert "content" in results[3].detail


def test_replies_that_all_parse_ask_for_no_repair() -> None:
    client = RepairingClient([])
    results, repairs = parse_replies(
        client,  # type: ignore[arg-type]
        [_request()],
        [Completion(text='{"content": "fine"}')],
        content_of,
        who="judge",
    )
    assert (results, repairs, client.asked) == (["fine"], 0, [])
