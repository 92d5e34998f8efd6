"""The official SDKs' exceptions as error Completions, and body fields passed across SDK versions
(``sdk_errors.py``)."""

from __future__ import annotations

import email.utils
import json
import time
from types import SimpleNamespace

import pytest

from skillopt_sleep.backends.sdk_errors import (
    clean_message,
    completion_from_exception,
    kind_for_status,
    parse_retry_after,
    sdk_kwargs,
)


class APIError(Exception):
    def __init__(self, message: str = "", body: object = None) -> None:
        super().__init__(message)
        self.message, self.body = message, body


class APIConnectionError(APIError):
    pass


class APITimeoutError(APIConnectionError):
    pass


class APIResponseValidationError(APIError):
    pass


class APIStatusError(APIError):
    def __init__(self, status_code: int, body: object = None, headers: dict[str, str] | None = None) -> None:
        super().__init__("status error", body)
        self.status_code = status_code
        self.response = SimpleNamespace(headers=headers or {})


# the shape the ``anthropic`` and ``openai`` modules share
FAKE_SDK = SimpleNamespace(
    APIError=APIError,
    APIConnectionError=APIConnectionError,
    APITimeoutError=APITimeoutError,
    APIResponseValidationError=APIResponseValidationError,
    APIStatusError=APIStatusError,
)


def test_a_message_is_one_bounded_line_with_keys_masked() -> None:
    assert clean_message("bad\n  key   sk-ant-abcdefghijklmnop here") == "bad key sk-ant-ab… here"
    long = clean_message("x" * 1000)
    assert len(long) == 300 and long.endswith("…")


def test_retry_after_is_read_from_milliseconds_seconds_or_a_date() -> None:
    assert parse_retry_after(None) is None and parse_retry_after({}) is None
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "soon", "retry-after": "9"}) == 9.0
    assert parse_retry_after({"retry-after": "-3"}) == 0.0
    assert parse_retry_after({"retry-after": "whenever"}) is None
    later = email.utils.formatdate(time.time() + 120, usegmt=True)
    assert 100 < (parse_retry_after({"retry-after": later}) or 0) <= 120


@pytest.mark.parametrize(
    "status, kind",
    [
        (401, "auth"),
        (403, "auth"),
        (402, "budget"),
        (404, "model"),
        (408, "timeout"),
        (409, "server"),
        (429, "rate_limit"),
        (529, "overloaded"),
        (500, "server"),
        (503, "server"),
        (400, "bad_request"),
        (422, "bad_request"),
    ],
)
def test_an_http_status_names_its_error_kind(status: int, kind: str) -> None:
    assert kind_for_status(status) == kind


def test_each_sdk_exception_becomes_its_error_completion() -> None:
    timeout = completion_from_exception(APITimeoutError("slow"), FAKE_SDK, "Anthropic")  # type: ignore[arg-type]
    assert (timeout.error, timeout.error_message) == ("timeout", "Anthropic request timed out")

    try:
        raise APIConnectionError("wrapped") from OSError("connection refused")
    except APIConnectionError as exc:
        down = completion_from_exception(exc, FAKE_SDK, "OpenAI")  # type: ignore[arg-type]
    assert down.error == "connection" and down.error_message == "cannot reach OpenAI: connection refused"

    limited = completion_from_exception(
        APIStatusError(429, body={"error": {"message": "slow down"}}, headers={"retry-after": "7"}),
        FAKE_SDK,  # type: ignore[arg-type]
        "OpenAI",
    )
    assert (limited.error, limited.error_message, limited.retry_after) == ("rate_limit", "HTTP 429: slow down", 7.0)
    plain = completion_from_exception(APIStatusError(500, body={"error": "boom"}), FAKE_SDK, "x")  # type: ignore[arg-type]
    assert (plain.error, plain.error_message, plain.retry_after) == ("server", "HTTP 500: boom", None)

    for exc in (APIResponseValidationError("odd"), json.JSONDecodeError("bad", "{", 0)):
        malformed = completion_from_exception(exc, FAKE_SDK, "Anthropic")  # type: ignore[arg-type]
        assert malformed.error == "server" and malformed.error_message.startswith("malformed response from Anthropic")
    other = completion_from_exception(APIError("strange"), FAKE_SDK, "x")  # type: ignore[arg-type]
    assert (other.error, other.error_message) == ("unknown", "strange")


def test_an_exception_not_from_the_sdk_is_raised_again() -> None:
    with pytest.raises(KeyError):
        completion_from_exception(KeyError("mine"), FAKE_SDK, "x")  # type: ignore[arg-type]


def test_fields_a_method_does_not_take_go_in_extra_body() -> None:
    def create(*, model: str, max_tokens: int, extra_body: dict | None = None) -> None:
        return None

    assert sdk_kwargs(create, {"model": "m", "max_tokens": 5}) == {"model": "m", "max_tokens": 5}
    assert sdk_kwargs(create, {"model": "m", "top_k": 3}) == {"model": "m", "extra_body": {"top_k": 3}}
