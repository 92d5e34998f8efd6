"""A fake OpenAI Chat Completions endpoint that streams and calls tools, for CLIs that speak only
Chat Completions to a custom OpenAI-compatible provider (OpenCode through
``@ai-sdk/openai-compatible``).

``FakeOpenAI`` answers ``POST /v1/chat/completions`` with one finished, text-only completion; this
fake answers it as the real API does for ``"stream": true``: ``chat.completion.chunk`` server-sent
events (the role, the text in pieces, each tool call's name and arguments, the finish reason, the
usage when ``stream_options.include_usage`` asks for it) and ``data: [DONE]``. A ``Reply`` with
``tool_calls`` becomes ``tool_calls`` (finish reason ``tool_calls``), streamed or not. Every other
route is ``FakeOpenAI``'s.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.http_base import Reply, Stream, as_reply, count_tokens, sse_event, within_cap
from tests.support.openai_server import FakeOpenAI, _error_body


def message_text(message: dict[str, Any]) -> str:
    """The text of one chat message (a string, or a list of ``{"type": "text"}`` parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def last_user_message(body: dict[str, Any]) -> str:
    """The text of the last ``user`` message of a chat request."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return message_text(message)
    return ""


def last_role(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    return str(last.get("role", ""))


class FakeChat(FakeOpenAI):
    """``FakeOpenAI`` whose chat completions stream and carry tool calls."""

    def completion(self, body: dict[str, Any]) -> tuple[dict[str, Any], Reply]:
        """The finished (non-streamed) completion for a chat request, and the reply it holds."""
        model = body.get("model", "")
        if self.responder is not None:
            reply = as_reply(self.responder(body))
        else:
            reply = Reply("Answer: " + last_user_message(body)[:60])
        reply = within_cap(reply, body.get("max_completion_tokens", body.get("max_tokens")))
        calls: list[dict[str, Any]] = [
            {
                "id": f"call_{next(self._ids)}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.input)},
            }
            for call in reply.tool_calls
        ]
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if calls:
            message["tool_calls"] = calls
        finish = "length" if reply.cut_off else "tool_calls" if calls else "stop"
        prompt = sum(count_tokens(message_text(m)) for m in body.get("messages") or [] if isinstance(m, dict))
        completion = count_tokens(reply.text) + sum(count_tokens(c["function"]["arguments"]) for c in calls)
        answer = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }
        return answer, reply

    def route(self, method: str, path: str, headers: dict[str, str], body: Any, content_type: str):
        if method == "POST" and path == "/v1/chat/completions":
            if headers.get("authorization") != f"Bearer {self.key}":
                return 401, _error_body(401, "Incorrect API key provided"), {}
            action = self.next_action()
            scripted = self.scripted(action, _error_body)
            if scripted is not None:
                return scripted
            if not isinstance(body, dict):
                return 400, _error_body(400, "unreadable body"), {}
            answer, _ = self.completion(body)
            if body.get("stream"):
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                return 200, self.apply_stream_fault(action, Stream(chunk_events(answer, usage=usage))), {}
            return 200, answer, {}
        return super().route(method, path, headers, body, content_type)


def chunk_events(answer: dict[str, Any], *, usage: bool) -> list[bytes]:
    """A finished chat completion as the API streams it."""
    choice = answer["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        data = {
            "id": answer["id"],
            "object": "chat.completion.chunk",
            "created": answer["created"],
            "model": answer["model"],
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }
        return sse_event(None, data)

    events = [chunk({"role": "assistant", "content": ""})]
    text = message.get("content") or ""
    for i in range(0, len(text), 24):
        events.append(chunk({"content": text[i : i + 24]}))
    for index, call in enumerate(message.get("tool_calls") or []):
        head = {"index": index, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"]}}
        events.append(chunk({"tool_calls": [{**head, "function": {**head["function"], "arguments": ""}}]}))
        arguments = call["function"]["arguments"]
        for i in range(0, len(arguments), 32):
            events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + 32]}}]}))
    events.append(chunk({}, choice["finish_reason"]))
    if usage:
        data = {
            "id": answer["id"],
            "object": "chat.completion.chunk",
            "created": answer["created"],
            "model": answer["model"],
            "choices": [],
            "usage": answer["usage"],
        }
        events.append(sse_event(None, data))
    events.append(sse_event(None, "[DONE]"))
    return events
