"""A fake Gemini API (``generativelanguage`` v1beta): ``models/<m>:generateContent``,
``:streamGenerateContent`` (SSE with ``alt=sse``), ``:countTokens`` and model listing — enough
for the real ``gemini`` CLI pointed here by ``GOOGLE_GEMINI_BASE_URL``.

A responder (``fake.responder = fn(body) -> str | Reply``) scripts the model; a ``Reply`` with
``tool_calls`` answers with ``functionCall`` parts. A request that asks for JSON
(``generationConfig.responseSchema`` / ``responseJsonSchema``: the CLI's routing and
next-speaker checks) is answered with a minimal value of that schema unless the responder
answers it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.support.http_base import FakeServer, Reply, Stream, as_reply, count_tokens, sample_for_schema, sse_event

_MODEL_CALL = re.compile(r"/(v1beta|v1alpha|v1)/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)")


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        429: "RESOURCE_EXHAUSTED",
        503: "UNAVAILABLE",
    }.get(status, "INTERNAL")
    return {"error": {"code": status, "message": message, "status": kind}}


def _parts(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(role, part) for every part of every content, in order."""
    found = []
    for content in body.get("contents") or []:
        if isinstance(content, dict):
            for part in content.get("parts") or []:
                if isinstance(part, dict):
                    found.append((str(content.get("role", "user")), part))
    return found


def last_user_text(body: dict[str, Any]) -> str:
    """The last text part of the user's contents (function responses skipped): what the person
    just said. The CLI sends its ``<session_context>`` block as an earlier part of the first one."""
    for role, part in reversed(_parts(body)):
        if role == "user" and isinstance(part.get("text"), str) and not part.get("thought"):
            return part["text"]
    return ""


def has_function_response(body: dict[str, Any]) -> bool:
    """Whether the last content answers a function call (the CLI ran the model's tool)."""
    contents = body.get("contents") or []
    last = contents[-1] if contents and isinstance(contents[-1], dict) else {}
    return any(isinstance(p, dict) and "functionResponse" in p for p in last.get("parts") or [])


def tool_names(body: dict[str, Any]) -> set[str]:
    names = set()
    for tool in body.get("tools") or []:
        for declaration in (tool or {}).get("functionDeclarations") or []:
            if isinstance(declaration, dict) and isinstance(declaration.get("name"), str):
                names.add(declaration["name"])
    return names


def json_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    return _lower_types(schema) if isinstance(schema, dict) else None


def _lower_types(schema: Any) -> Any:
    """Gemini schemas spell types in capitals (``OBJECT``); ``sample_for_schema`` reads JSON Schema."""
    if isinstance(schema, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


class FakeGemini(FakeServer):
    def __init__(self, *, key: str = "test-key") -> None:
        super().__init__(key=key)
        self.models = ["gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"]
        self._calls = 0

    @property
    def base_url(self) -> str:
        return self.root  # the SDK appends /v1beta/models/...

    def model_requests(self) -> list[Any]:
        """The generate requests (streamed or not) the CLI sent, oldest first."""
        with self._lock:
            return [r for r in self.requests if "enerateContent" in r.path]

    def answer(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        schema = json_schema(body)
        reply: Reply | None = None
        if self.responder is not None:
            answered = self.responder(body)
            reply = None if answered is None else as_reply(answered)
        if reply is None:
            reply = (
                Reply(json.dumps(sample_for_schema(schema)))
                if schema
                else Reply("Answer: " + last_user_text(body)[:60])
            )
        parts: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
        for call in reply.tool_calls:
            self._calls += 1
            parts.append({"functionCall": {"name": call.name, "args": call.input, "id": f"call_{self._calls:04d}"}})
        prompt = count_tokens(json.dumps(body.get("contents") or []))
        output = count_tokens(reply.text) + sum(count_tokens(json.dumps(c.input)) for c in reply.tool_calls)
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": parts},
                    "finishReason": "MAX_TOKENS" if reply.cut_off else "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": prompt,
                "candidatesTokenCount": output,
                "totalTokenCount": prompt + output,
            },
            "modelVersion": model,
            "responseId": f"resp-{len(self.requests)}",
        }

    def route(self, method: str, path: str, headers: dict[str, str], body: Any, content_type: str):
        given = headers.get("x-goog-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        if given != self.key:
            return 401, _error_body(401, "API key not valid. Please pass a valid API key."), {}
        match = _MODEL_CALL.fullmatch(path)
        if method == "POST" and match:
            model, call = match.group(2), match.group(3)
            if not isinstance(body, dict):
                return 400, _error_body(400, "unreadable body"), {}
            if call == "countTokens":
                request = body.get("generateContentRequest") or body
                return 200, {"totalTokens": count_tokens(json.dumps(request.get("contents") or []))}, {}
            action = self.next_action()
            scripted = self.scripted(action, _error_body)
            if scripted is not None:
                return scripted
            response = self.answer(body, model)
            if call == "streamGenerateContent":
                return 200, self.apply_stream_fault(action, Stream(stream_events(response))), {}
            return 200, self.apply_body_fault(action, response), {}
        if method == "GET" and path.rstrip("/").endswith("/models"):
            return 200, {"models": [{"name": f"models/{m}", "displayName": m} for m in self.models]}, {}
        return 404, _error_body(404, f"no route {method} {path}"), {}


def stream_events(response: dict[str, Any]) -> list[bytes]:
    """A finished response as ``alt=sse`` streams it: text in chunks, then the calls and the usage."""
    candidate = response["candidates"][0]
    parts = candidate["content"]["parts"]
    events = []
    texts = [p["text"] for p in parts if "text" in p]
    text = "".join(texts)
    for i in range(0, len(text), 24):
        chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": text[i : i + 24]}]}, "index": 0}]}
        events.append(sse_event(None, dict(chunk, modelVersion=response["modelVersion"])))
    calls = [p for p in parts if "functionCall" in p]
    last = dict(candidate, content={"role": "model", "parts": calls or [{"text": ""}]})
    events.append(
        sse_event(
            None,
            {
                "candidates": [last],
                "usageMetadata": response["usageMetadata"],
                "modelVersion": response["modelVersion"],
                "responseId": response["responseId"],
            },
        )
    )
    return events
