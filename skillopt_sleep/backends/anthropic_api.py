"""Anthropic Messages API through the official ``anthropic`` SDK.

The static prefix (skill + memory documents and role instructions) goes in a system block marked
``cache_control: ephemeral``, so every call of a phase after the first reads it from the prompt
cache; the per-call task text is the user message. The SDK's own retries are off
(``max_retries=0``): retrying is ``client.Client``'s job, once for every backend.

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

from typing import Any

from skillopt_sleep.backends.base import STUB_TOOL_DESCRIPTION, Completion, Request
from skillopt_sleep.backends.pricing import Price, price_for
from skillopt_sleep.backends.sdk_base import SdkBackend
from skillopt_sleep.types import Usage

KEY_ENV = "ANTHROPIC_API_KEY"  # where the key is read unless api_key= is given
DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_TIMEOUT = 120.0
_CACHE = {"type": "ephemeral"}


class AnthropicBackend(SdkBackend):
    provider, client_class = "anthropic", "Anthropic"
    key_env, base_url_env = KEY_ENV, "ANTHROPIC_BASE_URL"

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
        super().__init__(model, api_key=api_key, base_url=base_url, timeout=timeout, max_output=max_output, price=price)
        self.structured = structured
        self.send_temperature = send_temperature
        self.prompt_cache = prompt_cache

    # -- wire format ------------------------------------------------------------------------

    def message_params(self, request: Request) -> dict[str, Any]:
        """The Messages API body for ``request`` (shared by direct calls and batches)."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.output_tokens(request.max_tokens),
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
        if request.tools:
            params["tools"] = [
                {
                    "name": name,
                    "description": STUB_TOOL_DESCRIPTION,
                    "input_schema": {"type": "object", "properties": {}},
                }
                for name in request.tools
            ]
        if request.json_schema and self.structured:
            params["output_config"] = {"format": {"type": "json_schema", "schema": request.json_schema}}
        return params

    def completion_from_message(self, message: Any, latency: float = 0.0) -> Completion:
        """A Completion from a Messages API response object (an SDK model or a plain dict)."""
        get = (lambda obj, key: obj.get(key)) if isinstance(message, dict) else getattr
        try:
            blocks = get(message, "content") or []
            text = "".join((get(block, "text") or "") for block in blocks if get(block, "type") == "text")
            usage = get(message, "usage")
            counted = (
                Usage(
                    input_tokens=int(get(usage, "input_tokens") or 0),
                    output_tokens=int(get(usage, "output_tokens") or 0),
                    cache_read_tokens=int(get(usage, "cache_read_input_tokens") or 0),
                    cache_write_tokens=int(get(usage, "cache_creation_input_tokens") or 0),
                )
                if usage is not None
                else Usage()
            )
            model = str(get(message, "model") or self.model)
            tools = [str(get(b, "name")) for b in blocks if get(b, "type") == "tool_use"]
            truncated = get(message, "stop_reason") == "max_tokens"
        except (AttributeError, TypeError, ValueError) as exc:
            return self.malformed(exc, latency)
        return Completion(
            text=text, usage=counted, model=model, latency=latency, tools_called=tools, truncated=truncated
        )

    # -- direct calls and Message Batches ----------------------------------------------------

    def complete(self, request: Request) -> Completion:
        return self._call(lambda sdk: sdk.messages.create, self.message_params(request), self.completion_from_message)

    def submit_batch(self, items: list[tuple[str, Request]]) -> str:
        requests = [{"custom_id": cid, "params": self.message_params(r)} for cid, r in items]
        batch = self._batch_call("batch submit", lambda sdk: sdk.messages.batches.create(requests=requests))
        return str(batch.id)

    def batch_status(self, batch_id: str) -> str:
        batch = self._batch_call("batch poll", lambda sdk: sdk.messages.batches.retrieve(batch_id))
        status = str(batch.processing_status)
        return "ended" if status == "ended" else "running"

    def batch_results(self, batch_id: str) -> dict[str, Completion]:
        def download(sdk: Any) -> dict[str, Completion]:
            results: dict[str, Completion] = {}
            for entry in sdk.messages.batches.results(batch_id):
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
        self._cancel(lambda sdk: sdk.messages.batches.cancel(batch_id))


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
