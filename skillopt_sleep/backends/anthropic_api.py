"""Anthropic Messages API through the official ``anthropic`` SDK.

The static prefix (skill + memory documents and role instructions) goes in a system block marked
``cache_control: ephemeral``, so every call of a phase after the first reads it from the prompt
cache; the per-call task text is the user message. The SDK's own retries are off
(``max_retries=0``): retrying is ``layers.Client``'s job, once for every backend.

Options (spec ``anthropic:model=…,base_url=…``): ``model``, ``base_url`` (else
``ANTHROPIC_BASE_URL``), ``api_key`` (else ``ANTHROPIC_API_KEY``), ``timeout`` (seconds),
``structured`` (send ``output_config`` for schema-constrained JSON; default on),
``prompt_cache`` (``false`` leaves the ``cache_control`` marker off), ``temperature``
(``false`` never sends one; by default it is sent when it is not the API's default of 1.0),
``max_output`` (a cap on every call's output tokens, for cost control or slow local models),
``price_*``.

Body fields the installed SDK version does not know as keyword arguments travel in
``extra_body``, so the same wire format works across SDK versions.
"""

from __future__ import annotations

import os
import time
from typing import Any

from skillopt_sleep.backends.base import BatchError, Completion, Request
from skillopt_sleep.backends.pricing import Price, price_for
from skillopt_sleep.backends.sdk_errors import clean_message, completion_from_exception, sdk_kwargs
from skillopt_sleep.types import Usage

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_TIMEOUT = 120.0
_CACHE = {"type": "ephemeral"}


class AnthropicBackend:
    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        structured: bool = True,
        send_temperature: bool = True,
        prompt_cache: bool = True,
        max_output: int | None = None,
        price: Price | None = None,
    ):
        self.model = model
        self.id = f"anthropic:{model}"
        self.price = price
        self.max_output = int(max_output) if max_output else None
        self.structured = structured
        self.send_temperature = send_temperature
        self.prompt_cache = prompt_cache
        self._api_key = api_key or os.environ.get("ANTHROPIC_API_KEY") or None
        self._base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self._timeout = float(timeout)
        self._sdk_client: Any = None

    def __repr__(self) -> str:  # never show the key
        return f"AnthropicBackend(model={self.model!r}, base_url={self._base_url!r})"

    # -- wire format ------------------------------------------------------------------------

    def message_params(self, request: Request) -> dict[str, Any]:
        """The Messages API body for ``request`` (shared by direct calls and batches)."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": min(int(request.max_tokens), self.max_output or int(request.max_tokens)),
            "messages": [{"role": "user", "content": request.user}],
        }
        temperature = min(1.0, max(0.0, float(request.temperature)))
        if self.send_temperature and temperature != 1.0:
            params["temperature"] = temperature
        if request.system:
            block: dict[str, Any] = {"type": "text", "text": request.system}
            if self.prompt_cache:
                block["cache_control"] = _CACHE
            params["system"] = [block]
        if request.json_schema and self.structured:
            params["output_config"] = {"format": {"type": "json_schema", "schema": request.json_schema}}
        return params

    def completion_from_message(self, message: Any, latency: float = 0.0) -> Completion:
        """A Completion from a Messages API response object (an SDK model or a plain dict)."""
        get = (lambda obj, key: obj.get(key)) if isinstance(message, dict) else getattr
        try:
            blocks = get(message, "content") or []
            text = "".join(
                (get(block, "text") or "") for block in blocks if get(block, "type") == "text"
            )
            usage = get(message, "usage")
            counted = Usage(
                input_tokens=int(get(usage, "input_tokens") or 0),
                output_tokens=int(get(usage, "output_tokens") or 0),
                cache_read_tokens=int(get(usage, "cache_read_input_tokens") or 0),
                cache_write_tokens=int(get(usage, "cache_creation_input_tokens") or 0),
            ) if usage is not None else Usage()
            model = str(get(message, "model") or self.model)
            tools = [str(get(b, "name")) for b in blocks if get(b, "type") == "tool_use"]
        except (AttributeError, TypeError, ValueError) as exc:
            return Completion(
                text="", error="server", latency=latency,
                error_message=clean_message(f"malformed response from anthropic: {exc}"),
            )
        return Completion(text=text, usage=counted, model=model, latency=latency, tools_called=tools)

    # -- direct calls -----------------------------------------------------------------------

    def _client(self) -> Any:
        if self._sdk_client is None:
            import anthropic

            self._sdk_client = anthropic.Anthropic(
                api_key=self._api_key, base_url=self._base_url,
                timeout=self._timeout, max_retries=0,
            )
        return self._sdk_client

    def _missing_key(self) -> Completion | None:
        if self._api_key:
            return None
        return Completion(
            text="", error="auth",
            error_message="no API key: set ANTHROPIC_API_KEY (or api_key= in the backend spec)",
        )

    def complete(self, request: Request) -> Completion:
        missing = self._missing_key()
        if missing is not None:
            return missing
        import anthropic

        create = self._client().messages.create
        kwargs = sdk_kwargs(create, self.message_params(request))
        started = time.monotonic()
        try:
            message = create(**kwargs)
        except anthropic.APIError as exc:
            completion = completion_from_exception(exc, anthropic, "anthropic")
            completion.latency = time.monotonic() - started
            return completion
        except (ValueError, UnicodeDecodeError) as exc:  # a body that is not JSON
            return Completion(
                text="", error="server", latency=time.monotonic() - started,
                error_message=clean_message(f"malformed response from anthropic: {exc}"),
            )
        return self.completion_from_message(message, time.monotonic() - started)

    # -- Message Batches --------------------------------------------------------------------

    def _batch_call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        import anthropic

        missing = self._missing_key()
        if missing is not None:
            raise BatchError(missing.error_message)
        try:
            return fn(*args, **kwargs)
        except anthropic.APIError as exc:
            failed = completion_from_exception(exc, anthropic, "anthropic")
            raise BatchError(f"{what}: {failed.error}: {failed.error_message}") from None
        except (ValueError, TypeError, UnicodeDecodeError, AttributeError) as exc:
            raise BatchError(clean_message(f"{what}: malformed response: {exc}")) from None

    def submit_batch(self, items: list[tuple[str, Request]]) -> str:
        requests = [{"custom_id": cid, "params": self.message_params(r)} for cid, r in items]
        batch = self._batch_call("batch submit", self._client().messages.batches.create, requests=requests)
        return str(batch.id)

    def batch_status(self, batch_id: str) -> str:
        batch = self._batch_call("batch poll", self._client().messages.batches.retrieve, batch_id)
        status = str(batch.processing_status)
        return "ended" if status == "ended" else "running"

    def batch_results(self, batch_id: str) -> dict[str, Completion]:
        def download() -> dict[str, Completion]:
            results: dict[str, Completion] = {}
            for entry in self._client().messages.batches.results(batch_id):
                result = entry.result
                if result.type == "succeeded":
                    results[entry.custom_id] = self.completion_from_message(result.message)
                else:
                    results[entry.custom_id] = Completion(
                        text="", error="server", error_message=f"batch item {result.type}"
                    )
            return results

        return self._batch_call("batch results", download)

    def cancel_batch(self, batch_id: str) -> None:
        try:
            self._batch_call("batch cancel", self._client().messages.batches.cancel, batch_id)
        except BatchError:
            pass


def from_options(options: dict[str, Any], model: str | None) -> AnthropicBackend:
    model = str(options.get("model") or model or DEFAULT_MODEL)
    return AnthropicBackend(
        model,
        api_key=options.get("api_key"),
        base_url=options.get("base_url"),
        timeout=float(options.get("timeout", DEFAULT_TIMEOUT)),
        structured=bool(options.get("structured", True)),
        send_temperature=options.get("temperature", True) is not False,
        prompt_cache=bool(options.get("prompt_cache", True)),
        max_output=options.get("max_output"),
        price=price_for(model, options),
    )
