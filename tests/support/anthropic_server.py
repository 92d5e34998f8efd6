"""A fake Anthropic API: ``POST /v1/messages`` (plain or streamed as SSE), token counting, model
listing and Message Batches — enough for the Anthropic SDK and the real ``claude`` CLI.

A responder (``fake.responder = fn(body) -> str | Reply``) scripts the model; a ``Reply`` with
``tool_calls`` answers with ``tool_use`` blocks and ``stop_reason: "tool_use"``; one that is
``cut_off`` (or longer than the request's ``max_tokens``) with ``stop_reason: "max_tokens"``.

Prompt caching is modelled honestly: a system prefix ending at a block marked ``cache_control``
that this server has seen before (same model) is billed as ``cache_read_input_tokens``; a new one
is billed as ``cache_creation_input_tokens`` and remembered; everything after the last breakpoint
is plain ``input_tokens``. Prefixes under ``min_cache_tokens`` are never cached (as on the real
API). Without any ``cache_control`` marker nothing is cached.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from tests.support.http_base import (
    FakeServer,
    Reply,
    Stream,
    as_reply,
    count_tokens,
    sample_for_schema,
    sse_event,
    within_cap,
)


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        429: "rate_limit_error",
        529: "overloaded_error",
    }.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _system_blocks(system: Any) -> list[dict[str, Any]]:
    if not system:
        return []
    if isinstance(system, str):
        return [{"type": "text", "text": system}]
    return list(system)


def _user_text(messages: list[dict[str, Any]]) -> str:
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(str(block.get("text", "")) for block in content or [] if isinstance(block, dict))
    return "\n".join(parts)


def last_user_text(body: dict[str, Any]) -> str:
    """The last text block of the last user message of a Messages request (tool results and the
    ``<system-reminder>`` blocks claude adds excluded): what the user just said."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [
            b.get("text", "")
            for b in content or []
            if isinstance(b, dict)
            and b.get("type") == "text"
            and not str(b.get("text", "")).startswith("<system-reminder>")
        ]
        if texts:
            return texts[-1]
    return ""


def message_events(message: dict[str, Any]) -> list[bytes]:
    """A finished message as the Messages API streams it."""
    usage = message["usage"]
    start = dict(message, content=[], stop_reason=None, stop_sequence=None, usage=dict(usage, output_tokens=1))
    events = [
        sse_event("message_start", {"type": "message_start", "message": start}),
        sse_event("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(
                sse_event(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                )
            )
            text = block["text"]
            for i in range(0, len(text), 24):
                events.append(
                    sse_event(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "text_delta", "text": text[i : i + 24]},
                        },
                    )
                )
        else:
            events.append(
                sse_event(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": dict(block, input={})},
                )
            )
            events.append(
                sse_event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
                    },
                )
            )
        events.append(sse_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        sse_event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    events.append(sse_event("message_stop", {"type": "message_stop"}))
    return events


class FakeAnthropic(FakeServer):
    def __init__(self, *, key: str = "test-key", min_cache_tokens: int = 0, polls_until_done: int = 2):
        super().__init__(key=key)
        self.min_cache_tokens = min_cache_tokens
        self.polls_until_done = polls_until_done
        self.cached_prefixes: set[tuple[str, str]] = set()
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_item_errors: set[str] = set()  # custom ids that come back "errored"
        self.batch_submit_fail: int | None = None  # HTTP status for the batch create call
        self.batch_never_ends = False
        self.models = ["claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1"]
        self._ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        return self.root  # the SDK appends /v1/...

    # -- the model ---------------------------------------------------------------------------

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        model = body.get("model", "")
        blocks = _system_blocks(body.get("system"))
        prefix, breakpoints = "", []
        for block in blocks:
            prefix += block.get("text", "")
            if block.get("cache_control"):
                breakpoints.append(prefix)
        read = write = 0
        cached_upto = ""
        for point in breakpoints:
            if count_tokens(point) < self.min_cache_tokens:
                continue
            if (model, point) in self.cached_prefixes:
                cached_upto = point
        read = count_tokens(cached_upto) if cached_upto else 0
        last = breakpoints[-1] if breakpoints else ""
        if last and count_tokens(last) >= self.min_cache_tokens and last != cached_upto:
            write = count_tokens(last) - read
        for point in breakpoints:
            if count_tokens(point) >= self.min_cache_tokens:
                self.cached_prefixes.add((model, point))
        user = _user_text(body.get("messages", []))
        total = count_tokens(prefix) + count_tokens(user)
        schema = ((body.get("output_config") or {}).get("format") or {}).get("schema")
        if self.responder is not None:
            reply = as_reply(self.responder(body))
        elif schema:
            reply = Reply(json.dumps(sample_for_schema(schema)))
        else:
            reply = Reply("Answer: " + last_user_text(body)[:60])
        reply = within_cap(reply, body.get("max_tokens"))
        text = reply.text
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        for call in reply.tool_calls:
            content.append(
                {"type": "tool_use", "id": f"toolu_{next(self._ids):06d}", "name": call.name, "input": call.input}
            )
        return {
            "id": f"msg_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "max_tokens" if reply.cut_off else "tool_use" if reply.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": total - read - write,
                "output_tokens": count_tokens(text) + sum(count_tokens(json.dumps(c.input)) for c in reply.tool_calls),
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": write,
            },
        }

    # -- routing ------------------------------------------------------------------------------

    def route(self, method: str, path: str, headers: dict[str, str], body: Any, content_type: str):
        if path == "/api/hello" and method in ("GET", "HEAD"):
            return 200, {}, {}  # claude's connectivity check (without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC)
        # older SDKs send x-api-key, newer ones a bearer token
        if self.key not in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer ")):
            return 401, _error_body(401, "invalid x-api-key"), {}
        if method == "POST" and path == "/v1/messages":
            action = self.next_action()
            scripted = self.scripted(action, _error_body)
            if scripted is not None:
                return scripted
            if body.get("model") == "no-such-model":
                return 404, _error_body(404, "model: no-such-model"), {}
            message = self.answer(body)
            if body.get("stream"):
                return 200, self.apply_stream_fault(action, Stream(message_events(message))), {}
            return 200, self.apply_body_fault(action, message), {}
        if method == "POST" and path == "/v1/messages/count_tokens":
            text = json.dumps(body.get("system") or "") + json.dumps(body.get("messages") or [])
            return 200, {"input_tokens": count_tokens(text) + count_tokens(json.dumps(body.get("tools") or []))}, {}
        if method == "GET" and path == "/v1/models":
            return (
                200,
                {
                    "data": [
                        {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                        for m in self.models
                    ],
                    "has_more": False,
                    "first_id": self.models[0],
                    "last_id": self.models[-1],
                },
                {},
            )
        if method == "POST" and path == "/v1/messages/batches":
            if self.batch_submit_fail:
                return self.batch_submit_fail, _error_body(self.batch_submit_fail, "batch refused"), {}
            batch_id = f"msgbatch_{next(self._ids)}"
            self.batches[batch_id] = {"requests": body["requests"], "polls": 0, "status": "in_progress"}
            return 200, self._batch_object(batch_id), {}
        parts = path.strip("/").split("/")  # v1 messages batches <id> [results|cancel]
        if len(parts) >= 4 and parts[:3] == ["v1", "messages", "batches"] and parts[3] in self.batches:
            batch_id = parts[3]
            if len(parts) == 4 and method == "GET":
                batch = self.batches[batch_id]
                batch["polls"] += 1
                if batch["polls"] >= self.polls_until_done and not self.batch_never_ends:
                    batch["status"] = "ended"
                return 200, self._batch_object(batch_id), {}
            if parts[4:] == ["results"]:
                return 200, self._results(batch_id), {"content-type": "application/binary"}
            if parts[4:] == ["cancel"]:
                self.batches[batch_id]["status"] = "canceling"
                return 200, self._batch_object(batch_id), {}
        return 404, _error_body(404, f"no route {method} {path}"), {}

    def _batch_object(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        ended = batch["status"] == "ended"
        n = len(batch["requests"])
        return {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": batch["status"],
            "request_counts": {
                "processing": 0 if ended else n,
                "succeeded": n if ended else 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": "2025-01-01T00:00:00Z",
            "expires_at": "2025-01-02T00:00:00Z",
            "ended_at": "2025-01-01T00:10:00Z" if ended else None,
            "cancel_initiated_at": None,
            "archived_at": None,
            "results_url": f"{self.root}/v1/messages/batches/{batch_id}/results" if ended else None,
        }

    def _results(self, batch_id: str) -> str:
        lines = []
        for item in self.batches[batch_id]["requests"]:
            cid = item["custom_id"]
            if cid in self.batch_item_errors:
                result = {
                    "type": "errored",
                    "error": {"type": "error", "error": {"type": "api_error", "message": "item failed"}},
                }
            else:
                result = {"type": "succeeded", "message": self.answer(item["params"])}
            lines.append(json.dumps({"custom_id": cid, "result": result}))
        return "\n".join(reversed(lines)) + "\n"  # out of order on purpose: match by custom_id
