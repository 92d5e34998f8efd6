"""A scripted JSON HTTP server on 127.0.0.1 for driving the real SDKs in tests.

Subclasses route requests; the base records every request and applies scripted failures to the
model endpoint in FIFO order: ``Fail(status, …)``, ``Slow(seconds)`` (answers after the client's
timeout), ``Malformed()`` (a 200 whose body is not JSON).
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from collections.abc import Callable


@dataclass
class Fail:
    status: int
    message: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Slow:
    seconds: float = 5.0


@dataclass
class Malformed:
    body: bytes = b"<html>upstream proxy error</html>{"


Action = Fail | Slow | Malformed


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


def count_tokens(text: str) -> int:
    """The fakes' tokenizer: one token per 4 characters, rounded up."""
    return math.ceil(len(text) / 4)


def sample_for_schema(schema: dict[str, Any]) -> Any:
    """A minimal value that satisfies a simple JSON schema."""
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties", {})
        return {name: sample_for_schema(sub) for name, sub in props.items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 1
    if kind == "boolean":
        return True
    return "x"


class FakeServer:
    """Start with ``start()`` (or use as a context manager); ``base_url`` points the SDK at it."""

    api_prefix = ""

    def __init__(self, *, key: str = "test-key"):
        self.key = key
        self.requests: list[Seen] = []
        self.script: deque[Action] = deque()
        self.responder: Callable[[dict[str, Any]], str] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake._handle(self, "GET")

            def do_POST(self) -> None:
                fake._handle(self, "POST")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def root(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    # -- scripting and inspection -------------------------------------------------------------

    def push(self, *actions: Action) -> None:
        self.script.extend(actions)

    def seen(self, path: str) -> list[Seen]:
        return [r for r in self.requests if r.path == path]

    # -- plumbing ---------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        content_type = handler.headers.get("content-type", "")
        body: Any = raw
        if "json" in content_type and raw:
            body = json.loads(raw)
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            self.requests.append(Seen(method, handler.path.split("?")[0], headers, body))
        try:
            status, payload, extra = self.route(method, handler.path.split("?")[0], headers, body, content_type)
        except Exception as exc:  # a bug in the fake must be visible, not a hang
            status, payload, extra = 599, {"error": {"message": f"fake crashed: {exc!r}"}}, {}
        self._send(handler, status, payload, extra)

    def _send(self, handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str]) -> None:
        if isinstance(payload, Slow):
            self._stop.wait(payload.seconds)
            status, payload = 500, {"error": {"message": "too late"}}
        if isinstance(payload, (bytes, str)):
            data = payload if isinstance(payload, bytes) else payload.encode("utf-8")
            content_type = headers.pop("content-type", "application/json")
        else:
            data = json.dumps(payload).encode("utf-8")
            content_type = "application/json"
        try:
            handler.send_response(status)
            handler.send_header("content-type", content_type)
            handler.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def next_action(self) -> Action | None:
        with self._lock:
            return self.script.popleft() if self.script else None

    def scripted(self, action: Action | None, error_body: Callable[[int, str], Any]) -> tuple[int, Any, dict[str, str]] | None:
        """The response for a scripted failure, or None to answer normally."""
        if action is None:
            return None
        if isinstance(action, Fail):
            return action.status, error_body(action.status, action.message), dict(action.headers)
        if isinstance(action, Slow):
            return 200, action, {}
        return 200, action.body, {}

    def route(self, method: str, path: str, headers: dict[str, str], body: Any, content_type: str) -> tuple[int, Any, dict[str, str]]:
        raise NotImplementedError


ID_TAIL = re.compile(r"/([A-Za-z0-9_\-]+)(/[a-z]+)?$")
