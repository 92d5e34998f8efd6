"""Glue for the official SDKs: their exceptions as error Completions (one mapping for both SDKs),
and body fields passed portably across SDK versions.

The ``anthropic`` and ``openai`` SDKs share one exception hierarchy shape (``APIStatusError``
with ``status_code`` and ``response``, ``APITimeoutError`` under ``APIConnectionError``,
``APIResponseValidationError``), so one function serves both.
"""

from __future__ import annotations

import email.utils
import inspect
import json
import re
import time
from types import ModuleType
from typing import Any
from collections.abc import Mapping

from skillopt_sleep.backends.base import Completion

_SECRETISH = re.compile(r"\b(sk-[A-Za-z0-9_\-]{6})[A-Za-z0-9_\-]+")
_MAX_MESSAGE = 300


def clean_message(text: str) -> str:
    """One line, bounded, with anything that looks like a key masked."""
    text = " ".join(str(text).split())
    text = _SECRETISH.sub(r"\1…", text)
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def kind_for_status(status: int) -> str:
    if status in (401, 403):
        return "auth"
    if status == 402:
        return "budget"  # the provider's own spending limit
    if status == 404:
        return "model"
    if status == 408:
        return "timeout"
    if status == 429:
        return "rate_limit"
    if status == 529:
        return "overloaded"
    if status >= 500 or status == 409:
        return "server"
    return "bad_request"


def _provider_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return str(getattr(exc, "message", "") or exc)


def completion_from_exception(exc: BaseException, sdk: ModuleType, provider: str) -> Completion:
    """An error Completion for ``exc`` raised by ``sdk`` (the ``anthropic`` or ``openai`` module)."""
    if isinstance(exc, sdk.APITimeoutError):
        return Completion(text="", error="timeout", error_message=f"{provider} request timed out")
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc
        return Completion(
            text="",
            error="connection",
            error_message=clean_message(f"cannot reach {provider}: {cause}"),
        )
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        headers = getattr(getattr(exc, "response", None), "headers", None)
        return Completion(
            text="",
            error=kind_for_status(status),
            error_message=clean_message(f"HTTP {status}: {_provider_message(exc)}"),
            retry_after=parse_retry_after(headers),
        )
    if isinstance(exc, (sdk.APIResponseValidationError, json.JSONDecodeError, UnicodeDecodeError)):
        return Completion(
            text="",
            error="server",
            error_message=clean_message(f"malformed response from {provider}: {exc}"),
        )
    if isinstance(exc, sdk.APIError):
        return Completion(text="", error="unknown", error_message=clean_message(str(exc)))
    raise exc


def sdk_kwargs(method: Any, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` as keyword arguments for ``method``; the ones it does not take go in extra_body."""
    accepted = inspect.signature(method).parameters
    kwargs = {k: v for k, v in params.items() if k in accepted}
    extra = {k: v for k, v in params.items() if k not in accepted}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs
