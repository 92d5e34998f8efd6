"""A fake OpenAI API: chat completions, files (multipart upload, content) and batches.

Automatic prefix caching is modelled like OpenAI's: when the system message (the static prefix)
was seen before for the same model, its tokens come back as ``prompt_tokens_details.cached_tokens``
(``prompt_tokens`` still includes them).
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from fakes.http_base import FakeServer, count_tokens, sample_for_schema


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


class FakeOpenAI(FakeServer):
    def __init__(self, *, key: str = "test-key", polls_until_done: int = 2):
        super().__init__(key=key)
        self.polls_until_done = polls_until_done
        self.seen_prefixes: set[tuple[str, str]] = set()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_item_errors: set[str] = set()
        self.batch_status_after_done = "completed"  # or "failed" / "expired"
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
            text = self.responder(body)
        elif schema:
            text = json.dumps(sample_for_schema(schema))
        else:
            text = "Answer: " + user[:60]
        prompt = count_tokens(system) + count_tokens(user)
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": count_tokens(text),
                      "total_tokens": prompt + count_tokens(text),
                      "prompt_tokens_details": {"cached_tokens": cached}},
        }

    def route(self, method: str, path: str, headers: dict[str, str], body: Any, content_type: str):
        if headers.get("authorization") != f"Bearer {self.key}":
            return 401, _error_body(401, "Incorrect API key provided"), {}
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
                errors.append({"id": f"req_{cid}", "custom_id": cid, "response": {"status_code": 500,
                               "body": _error_body(500, "item failed")}, "error": None})
            else:
                out.append({"id": f"req_{cid}", "custom_id": cid,
                            "response": {"status_code": 200, "body": self.answer(item["body"])}, "error": None})
        for key, rows in (("output_file_id", out), ("error_file_id", errors)):
            if rows:
                file_id = f"file-{next(self._ids)}"
                self.files[file_id] = ("\n".join(json.dumps(r) for r in reversed(rows)) + "\n").encode()
                batch[key] = file_id

    def _file_object(self, file_id: str, filename: str, purpose: str) -> dict[str, Any]:
        return {"id": file_id, "object": "file", "bytes": len(self.files[file_id]), "created_at": 0,
                "filename": filename, "purpose": purpose, "status": "processed"}

    def _batch_object(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        return {
            "id": batch_id, "object": "batch", "endpoint": batch["body"]["endpoint"],
            "input_file_id": batch["body"]["input_file_id"],
            "completion_window": batch["body"]["completion_window"],
            "status": batch["status"], "created_at": 0,
            "output_file_id": batch.get("output_file_id"), "error_file_id": batch.get("error_file_id"),
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
        }
