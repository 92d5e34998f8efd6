"""What the two SDK backends share: key and base URL from options or the environment, the SDK
imported when the backend is built, an SDK client with the SDK's own retries off, one direct call
with the error mapping, and the wrapper that turns any failure of a batch request into
``BatchError``.

Importing an SDK takes the machine's time, not the provider's (over a minute on a heavily loaded
machine), so it happens before any call's clock starts; an import slower than ``SLOW_IMPORT``
seconds is named in the night's report as a local stall (``startup_notes``).

Subclasses name their SDK (``provider``: the module, ``client_class``, the env variables) and
supply the wire format: the request body and the parser of a response.
"""

from __future__ import annotations

import importlib
import os
import re
import time
from types import ModuleType
from typing import Any, TypeVar
from collections.abc import Callable

from skillopt_sleep.backends.base import BatchError, Completion
from skillopt_sleep.backends.pricing import Price
from skillopt_sleep.backends.sdk_errors import clean_message, completion_from_exception, sdk_kwargs

T = TypeVar("T")


_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what both Messages and Chat Completions accept
SLOW_IMPORT = 10.0  # seconds: an SDK import this slow is reported as a local stall


def import_sdk(name: str, clock: Callable[[], float] = time.monotonic) -> tuple[ModuleType, float]:
    """The SDK module ``name`` and the seconds its import took (0 when it was already loaded).
    An SDK that cannot be imported is a ``ValueError`` naming it."""
    started = clock()
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise ValueError(f"the {name} SDK cannot be imported ({exc}); reinstall skillopt-sleep") from None
    return module, max(0.0, clock() - started)


class SdkBackend:
    provider = ""  # the SDK module: "anthropic" or "openai"
    client_class = ""  # "Anthropic" or "OpenAI"
    key_env = ""  # e.g. "ANTHROPIC_API_KEY"
    base_url_env = ""
    key_hint = "api_key= in the backend spec"
    offline = False

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str | None,
        timeout: float,
        max_output: int | None,
        price: Price | None,
    ):
        self.model = model
        self.id = f"{self.provider}:{model}"
        self.price = price
        self.max_output = int(max_output) if max_output else None
        self._api_key = api_key or os.environ.get(self.key_env) or None
        self._base_url = base_url or os.environ.get(self.base_url_env) or None
        self._timeout = float(timeout)
        self._sdk_client: Any = None
        self._module, self.import_seconds = import_sdk(self.provider)
        if self._api_key:  # set up the SDK's client now too: no call's clock pays for it
            self._client()

    def __repr__(self) -> str:  # never show the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self._base_url!r})"

    def can_offer_tools(self, names: tuple[str, ...]) -> bool:
        """Stub tools can be declared when every name is one the provider's API accepts."""
        return all(_TOOL_NAME.fullmatch(name) for name in names)

    def output_tokens(self, max_tokens: int) -> int:
        return min(int(max_tokens), self.max_output or int(max_tokens))

    def _sdk(self) -> ModuleType:
        return self._module

    def startup_notes(self) -> list[str]:
        """What building this backend cost the machine worth telling (a slow SDK import)."""
        if self.import_seconds < SLOW_IMPORT:
            return []
        return [
            f"importing the {self.provider} SDK took {self.import_seconds:.0f} s (a local stall: the "
            "machine is busy; no call's time was spent on it)"
        ]

    def _client(self) -> Any:
        if self._sdk_client is None:
            self._sdk_client = getattr(self._sdk(), self.client_class)(
                api_key=self._api_key,
                base_url=self._base_url,
                timeout=self._timeout,
                max_retries=0,
            )
        return self._sdk_client

    def close(self) -> None:
        """Close the SDK client's connections: a call still blocked on a hanging or dripping
        server (abandoned by ``Client`` at its deadline) ends with them."""
        client, self._sdk_client = self._sdk_client, None
        if client is not None:
            client.close()

    def _missing_key(self) -> Completion | None:
        if self._api_key:
            return None
        return Completion(text="", error="auth", error_message=f"no API key: set {self.key_env} (or {self.key_hint})")

    def malformed(self, exc: BaseException, latency: float = 0.0) -> Completion:
        return Completion(
            text="",
            error="server",
            latency=latency,
            error_message=clean_message(f"malformed response from {self.provider}: {exc}"),
        )

    def _call(
        self,
        locate: Callable[[Any], Callable[..., Any]],
        params: dict[str, Any],
        parse: Callable[[Any, float], Completion],
    ) -> Completion:
        """One direct call of ``locate(sdk_client)``: never raises for provider errors, never
        returns error text as text."""
        missing = self._missing_key()
        if missing is not None:
            return missing
        sdk = self._sdk()
        method = locate(self._client())
        kwargs = sdk_kwargs(method, params)
        started = time.monotonic()
        try:
            result = method(**kwargs)
        except sdk.APIError as exc:
            completion = completion_from_exception(exc, sdk, self.provider)
            completion.latency = time.monotonic() - started
            return completion
        except (ValueError, UnicodeDecodeError) as exc:  # a body that is not JSON
            return self.malformed(exc, time.monotonic() - started)
        if isinstance(result, (str, bytes)):  # a non-JSON body the SDK handed back as text
            return self.malformed(TypeError("the body is not a model response"), time.monotonic() - started)
        return parse(result, time.monotonic() - started)

    def _batch_call(self, what: str, action: Callable[[Any], T]) -> T:
        """``action(sdk_client)``, any failure raised as BatchError."""
        missing = self._missing_key()
        if missing is not None:
            raise BatchError(missing.error_message)
        sdk = self._sdk()
        try:
            return action(self._client())
        except sdk.APIError as exc:
            failed = completion_from_exception(exc, sdk, self.provider)
            raise BatchError(f"{what}: {failed.error}: {failed.error_message}") from None
        except (ValueError, TypeError, UnicodeDecodeError, AttributeError, KeyError) as exc:
            raise BatchError(clean_message(f"{what}: malformed response: {exc}")) from None

    def _cancel(self, action: Callable[[Any], Any]) -> None:
        """Best effort: a batch we stopped waiting for should not keep running (and billing)."""
        try:
            self._batch_call("batch cancel", action)
        except BatchError:
            pass
