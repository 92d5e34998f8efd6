"""OpenAI chat completions through the official ``openai`` SDK; any OpenAI-compatible server.

The static prefix is the first (system) message, so providers that cache prompt prefixes
automatically (OpenAI, DeepSeek, vLLM, llama.cpp) reuse it across the calls of a phase. Cached
tokens come from ``usage.prompt_tokens_details.cached_tokens`` and are reported apart from the
uncached input (see ``pricing.py`` for the convention). The SDK's own retries are off.

Options (spec ``openai:model=…,base_url=…``): ``model``, ``base_url`` (else ``OPENAI_BASE_URL``),
``api_key`` (else ``OPENAI_API_KEY``; a local server that needs none can take ``api_key=none``),
``timeout``, ``token_param`` (``max_tokens`` or ``max_completion_tokens``; default: the latter on
api.openai.com, the former elsewhere), ``temperature`` (``false`` to omit it, for models that
only accept the default), ``max_output`` (a cap on every call's output tokens, for cost
control or slow local models), ``price_*``.
"""

from __future__ import annotations

import io
import json
from typing import Any

from skillopt_sleep.backends.base import STUB_TOOL_DESCRIPTION, Completion, Request
from skillopt_sleep.backends.pricing import Price, price_for
from skillopt_sleep.backends.sdk_base import SdkBackend
from skillopt_sleep.backends.sdk_errors import clean_message
from skillopt_sleep.types import Usage

KEY_ENV = "OPENAI_API_KEY"  # where the key is read unless api_key= is given
DEFAULT_MODEL = "gpt-4.1-mini"
DEFAULT_TIMEOUT = 120.0
ENDPOINT = "/v1/chat/completions"


class OpenAIBackend(SdkBackend):
    provider, client_class = "openai", "OpenAI"
    key_env, base_url_env = KEY_ENV, "OPENAI_BASE_URL"
    key_hint = "api_key= in the backend spec; api_key=none for a local server"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        token_param: str | None = None,
        send_temperature: bool = True,
        max_output: int | None = None,
        price: Price | None = None,
    ):
        super().__init__(model, api_key=api_key, base_url=base_url, timeout=timeout, max_output=max_output, price=price)
        official = self._base_url is None or "api.openai.com" in self._base_url
        self.token_param = token_param or ("max_completion_tokens" if official else "max_tokens")
        if self.token_param not in ("max_tokens", "max_completion_tokens"):
            raise ValueError("token_param must be max_tokens or max_completion_tokens")
        self.send_temperature = send_temperature

    # -- wire format ------------------------------------------------------------------------

    def chat_params(self, request: Request) -> dict[str, Any]:
        """The chat completions body for ``request`` (shared by direct calls and batches)."""
        messages = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.user})
        params: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            self.token_param: self.output_tokens(request.max_tokens),
        }
        if self.send_temperature:
            params["temperature"] = float(request.temperature)
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": STUB_TOOL_DESCRIPTION,
                        "parameters": {"type": "object", "properties": {}},
                    },
                }
                for name in request.tools
            ]
        if request.json_schema:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": request.json_schema},
            }
        return params

    def completion_from_chat(self, chat: Any, latency: float = 0.0) -> Completion:
        """A Completion from a chat completion object (an SDK model or a plain dict)."""
        get = (
            (lambda obj, key: obj.get(key) if obj is not None else None)
            if isinstance(chat, dict)
            else (lambda obj, key: getattr(obj, key, None))
        )
        try:
            choices = get(chat, "choices") or []
            message = get(choices[0], "message") if choices else None
            text = (get(message, "content") or "") if message is not None else ""
            if not isinstance(text, str):
                raise TypeError(f"content is {type(text).__name__}")
            tool_calls = (get(message, "tool_calls") or []) if message is not None else []
            tools = [str(get(get(call, "function"), "name")) for call in tool_calls]
            usage = get(chat, "usage")
            prompt = int(get(usage, "prompt_tokens") or 0) if usage is not None else 0
            details = get(usage, "prompt_tokens_details") if usage is not None else None
            cached = int(get(details, "cached_tokens") or 0) if details is not None else 0
            counted = Usage(
                input_tokens=max(0, prompt - cached),
                output_tokens=int(get(usage, "completion_tokens") or 0) if usage is not None else 0,
                cache_read_tokens=cached,
            )
            model = str(get(chat, "model") or self.model)
            truncated = bool(choices) and get(choices[0], "finish_reason") == "length"
        except (AttributeError, TypeError, ValueError, IndexError) as exc:
            return self.malformed(exc, latency)
        return Completion(
            text=text, usage=counted, model=model, latency=latency, tools_called=tools, truncated=truncated
        )

    # -- direct calls and the Batch API (files endpoint) -------------------------------------

    def complete(self, request: Request) -> Completion:
        return self._call(lambda sdk: sdk.chat.completions.create, self.chat_params(request), self.completion_from_chat)

    def submit_batch(self, items: list[tuple[str, Request]]) -> str:
        lines = [
            json.dumps({"custom_id": cid, "method": "POST", "url": ENDPOINT, "body": self.chat_params(r)})
            for cid, r in items
        ]
        data = ("\n".join(lines) + "\n").encode("utf-8")

        def submit(client: Any) -> str:
            uploaded = client.files.create(file=("skillopt-batch.jsonl", io.BytesIO(data)), purpose="batch")
            batch = client.batches.create(input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h")
            return str(batch.id)

        return self._batch_call("batch submit", submit)

    def batch_status(self, batch_id: str) -> str:
        batch = self._batch_call("batch poll", lambda sdk: sdk.batches.retrieve(batch_id))
        status = str(batch.status)
        if status in ("completed", "expired", "cancelled"):
            return "ended"  # expired/cancelled batches still hand back what finished
        if status == "failed":
            return "failed"
        return "running"

    def batch_results(self, batch_id: str) -> dict[str, Completion]:
        def download(client: Any) -> dict[str, Completion]:
            batch = client.batches.retrieve(batch_id)
            results: dict[str, Completion] = {}
            for file_id in (batch.output_file_id, batch.error_file_id):
                if not file_id:
                    continue
                for line in client.files.content(file_id).text.splitlines():
                    if line.strip():
                        entry = json.loads(line)
                        results[str(entry["custom_id"])] = self._batch_entry(entry)
            return results

        return self._batch_call("batch results", download)

    def _batch_entry(self, entry: dict[str, Any]) -> Completion:
        response = entry.get("response") or {}
        status = int(response.get("status_code") or 0)
        if entry.get("error") or status != 200:
            detail = entry.get("error") or (response.get("body") or {}).get("error") or status
            return Completion(text="", error="server", error_message=clean_message(f"batch item failed: {detail}"))
        return self.completion_from_chat(response.get("body") or {})

    def cancel_batch(self, batch_id: str) -> None:
        self._cancel(lambda sdk: sdk.batches.cancel(batch_id))


def from_options(options: dict[str, Any], model: str | None) -> OpenAIBackend:
    model = str(options.get("model") or model or DEFAULT_MODEL)
    api_key = options.get("api_key")
    if isinstance(api_key, str) and api_key.lower() == "none":
        api_key = "sk-no-key-required"
    return OpenAIBackend(
        model,
        api_key=api_key,
        base_url=options.get("base_url"),
        timeout=float(options.get("timeout", DEFAULT_TIMEOUT)),
        token_param=options.get("token_param"),
        send_temperature=options.get("temperature", True) is not False,
        max_output=options.get("max_output"),
        price=price_for(model, options),
    )
