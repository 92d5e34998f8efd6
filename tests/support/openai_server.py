"""A fake OpenAI API: chat completions, the Responses API (plain or streamed as SSE, for the real
``codex`` CLI through a custom ``model_providers`` entry), model listing, files (multipart upload,
content) and batches.

A responder (``fake.responder = fn(body) -> str | Reply``) scripts the model; a ``Reply`` with
``tool_calls`` answers a Responses request with ``function_call`` items.

Automatic prefix caching is modelled like OpenAI's: when the system message (the static prefix)
was seen before for the same model, its tokens come back as ``prompt_tokens_details.cached_tokens``
(``prompt_tokens`` still includes them).
"""

from __future__ import annotations

import itertools
import json
import re
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
    kind = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}.get(status)
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": kind}}


def parse_multipart(body: bytes, content_type: str) -> dict[str, tuple[str | None, bytes]]:
    """``name -> (filename, bytes)`` for a multipart/form-data body."""
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    assert match, content_type
    boundary = b"--" + match.group(1).encode()
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in body.split(boundary)[1:]:
        if part.startswith(b"--"):
            break
        head, _, data = part.lstrip(b"\r\n").partition(b"\r\n\r\n")
        disposition = head.decode("utf-8", "replace")
        name = re.search(r'name="([^"]*)"', disposition)
        filename = re.search(r'filename="([^"]*)"', disposition)
        if name:
            fields[name.group(1)] = (filename.group(1) if filename else None, data.rstrip(b"\r\n"))
    return fields


def responses_input_text(body: dict[str, Any]) -> str:
    """All text of a Responses request's ``instructions`` and ``input`` items."""
    parts = [str(body.get("instructions") or "")]
    items = body.get("input")
    if isinstance(items, str):
        return parts[0] + "\n" + items
    for item in items or []:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(c.get("text", "")) for c in content if isinstance(c, dict))
        elif isinstance(item, dict) and item.get("type") == "function_call_output":
            parts.append(str(item.get("output", "")))
    return "\n".join(parts)


def last_input_text(body: dict[str, Any]) -> str:
    """The text of the last user message of a Responses request."""
    items = body.get("input")
    if isinstance(items, str):
        return items
    for item in reversed(items or []):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(str(c.get("text", "")) for c in content or [] if isinstance(c, dict))
    return ""


def response_events(response: dict[str, Any]) -> list[bytes]:
    """A finished response as the Responses API streams it."""
    sequence = iter(range(10**9))

    def event(kind: str, **fields: Any) -> bytes:
        return sse_event(kind, {"type": kind, "sequence_number": next(sequence), **fields})

    pending = dict(response, status="in_progress", output=[], usage=None)
    events = [event("response.created", response=pending), event("response.in_progress", response=pending)]
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(
                event(
                    "response.output_item.added", output_index=index, item=dict(item, status="in_progress", content=[])
                )
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append(
                event("response.content_part.added", item_id=item["id"], output_index=index, content_index=0, part=part)
            )
            for i in range(0, len(text), 24):
                events.append(
                    event(
                        "response.output_text.delta",
                        item_id=item["id"],
                        output_index=index,
                        content_index=0,
                        delta=text[i : i + 24],
                        logprobs=[],
                    )
                )
            events.append(
                event(
                    "response.output_text.done",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    text=text,
                    logprobs=[],
                )
            )
            events.append(
                event(
                    "response.content_part.done",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    part=dict(part, text=text),
                )
            )
        else:
            events.append(
                event(
                    "response.output_item.added",
                    output_index=index,
                    item=dict(item, status="in_progress", arguments=""),
                )
            )
            events.append(
                event(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=item["arguments"],
                )
            )
            events.append(
                event(
                    "response.function_call_arguments.done",
                    item_id=item["id"],
                    output_index=index,
                    arguments=item["arguments"],
                )
            )
        events.append(event("response.output_item.done", output_index=index, item=item))
    final = "response.incomplete" if response.get("status") == "incomplete" else "response.completed"
    events.append(event(final, response=response))
    return events


class FakeOpenAI(FakeServer):
    def __init__(self, *, key: str = "test-key", polls_until_done: int = 2):
        super().__init__(key=key)
        self.polls_until_done = polls_until_done
        self.seen_prefixes: set[tuple[str, str]] = set()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_item_errors: set[str] = set()
        self.batch_status_after_done = "completed"  # or "failed" / "expired"
        self.models = ["gpt-5", "gpt-5-mini", "gpt-5-codex"]
        self._ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        return self.root + "/v1"

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        model = body.get("model", "")
        messages = body.get("messages", [])
        system = messages[0]["content"] if messages and messages[0].get("role") == "system" else ""
        user = "\n".join(m["content"] for m in messages if m.get("role") == "user")
        cached = count_tokens(system) if system and (model, system) in self.seen_prefixes else 0
        if system:
            self.seen_prefixes.add((model, system))
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
        if self.responder is not None:
            reply = as_reply(self.responder(body))
        elif schema:
            reply = Reply(json.dumps(sample_for_schema(schema)))
        else:
            reply = Reply("Answer: " + user[:60])
        reply = within_cap(reply, body.get("max_completion_tokens", body.get("max_tokens")))
        text = reply.text
        prompt = count_tokens(system) + count_tokens(user)
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "length" if reply.cut_off else "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": count_tokens(text),
                "total_tokens": prompt + count_tokens(text),
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }

    def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        """A finished Responses API object for a ``POST /v1/responses`` body."""
        model = body.get("model", "")
        instructions = str(body.get("instructions") or "")
        cached = count_tokens(instructions) if instructions and (model, instructions) in self.seen_prefixes else 0
        if instructions:
            self.seen_prefixes.add((model, instructions))
        if self.responder is not None:
            reply = as_reply(self.responder(body))
        else:
            reply = Reply("Answer: " + last_input_text(body)[:60])
        reply = within_cap(reply, body.get("max_output_tokens"))
        output: list[dict[str, Any]] = []
        if reply.text:
            output.append(
                {
                    "id": f"msg_{next(self._ids)}",
                    "type": "message",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
                }
            )
        for call in reply.tool_calls:
            output.append(
                {
                    "id": f"fc_{next(self._ids)}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": f"call_{next(self._ids)}",
                    "name": call.name,
                    "arguments": json.dumps(call.input),
                    **({"namespace": call.namespace} if call.namespace else {}),
                }
            )
        prompt = count_tokens(responses_input_text(body)) + count_tokens(json.dumps(body.get("tools") or []))
        completion = count_tokens(reply.text) + sum(count_tokens(o.get("arguments", "")) for o in output)
        return {
            "id": f"resp_{next(self._ids)}",
            "object": "response",
            "created_at": 0,
            "status": "incomplete" if reply.cut_off else "completed",
            "model": model,
            "output": output,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if reply.cut_off else None,
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion,
            },
        }

    def route(self, method: str, path: str, headers: dict[str, str], body: Any, content_type: str):
        if headers.get("authorization") != f"Bearer {self.key}":
            return 401, _error_body(401, "Incorrect API key provided"), {}
        if method == "POST" and path == "/v1/responses":
            action = self.next_action()
            scripted = self.scripted(action, _error_body)
            if scripted is not None:
                return scripted
            if not isinstance(body, dict):
                return 400, _error_body(400, f"unreadable body ({headers.get('content-encoding')})"), {}
            response = self.respond(body)
            if body.get("stream"):
                return 200, self.apply_stream_fault(action, Stream(response_events(response))), {}
            return 200, response, {}
        if method == "GET" and path == "/v1/models":
            return (
                200,
                {
                    "object": "list",
                    "data": [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models],
                },
                {},
            )
        if method == "POST" and path == "/v1/chat/completions":
            scripted = self.scripted(self.next_action(), _error_body)
            if scripted is not None:
                return scripted
            if body.get("model") == "no-such-model":
                return 404, _error_body(404, "The model `no-such-model` does not exist"), {}
            return 200, self.answer(body), {}
        if method == "POST" and path == "/v1/files":
            fields = parse_multipart(body, content_type)
            file_id = f"file-{next(self._ids)}"
            self.files[file_id] = fields["file"][1]
            return 200, self._file_object(file_id, fields["file"][0] or "upload", "batch"), {}
        if method == "POST" and path == "/v1/batches":
            batch_id = f"batch_{next(self._ids)}"
            self.batches[batch_id] = {"body": body, "polls": 0, "status": "validating"}
            return 200, self._batch_object(batch_id), {}
        match = re.fullmatch(r"/v1/batches/([\w\-]+)(/cancel)?", path)
        if match and match.group(1) in self.batches:
            batch_id = match.group(1)
            batch = self.batches[batch_id]
            if match.group(2):
                batch["status"] = "cancelling"
            elif batch["status"] in ("validating", "in_progress"):
                batch["polls"] += 1
                batch["status"] = "in_progress"
                if batch["polls"] >= self.polls_until_done:
                    self._finish(batch_id)
            return 200, self._batch_object(batch_id), {}
        match = re.fullmatch(r"/v1/files/([\w\-]+)/content", path)
        if match and match.group(1) in self.files:
            return 200, self.files[match.group(1)], {"content-type": "application/octet-stream"}
        return 404, _error_body(404, f"no route {method} {path}"), {}

    def _finish(self, batch_id: str) -> None:
        batch = self.batches[batch_id]
        batch["status"] = self.batch_status_after_done
        if batch["status"] == "failed":
            return
        lines = self.files[batch["body"]["input_file_id"]].decode("utf-8").splitlines()
        out, errors = [], []
        for line in filter(None, lines):
            item = json.loads(line)
            cid = item["custom_id"]
            if cid in self.batch_item_errors:
                errors.append(
                    {
                        "id": f"req_{cid}",
                        "custom_id": cid,
                        "response": {"status_code": 500, "body": _error_body(500, "item failed")},
                        "error": None,
                    }
                )
            else:
                out.append(
                    {
                        "id": f"req_{cid}",
                        "custom_id": cid,
                        "response": {"status_code": 200, "body": self.answer(item["body"])},
                        "error": None,
                    }
                )
        for key, rows in (("output_file_id", out), ("error_file_id", errors)):
            if rows:
                file_id = f"file-{next(self._ids)}"
                self.files[file_id] = ("\n".join(json.dumps(r) for r in reversed(rows)) + "\n").encode()
                batch[key] = file_id

    def _file_object(self, file_id: str, filename: str, purpose: str) -> dict[str, Any]:
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(self.files[file_id]),
            "created_at": 0,
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }

    def _batch_object(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        return {
            "id": batch_id,
            "object": "batch",
            "endpoint": batch["body"]["endpoint"],
            "input_file_id": batch["body"]["input_file_id"],
            "completion_window": batch["body"]["completion_window"],
            "status": batch["status"],
            "created_at": 0,
            "output_file_id": batch.get("output_file_id"),
            "error_file_id": batch.get("error_file_id"),
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
        }
