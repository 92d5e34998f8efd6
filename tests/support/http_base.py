"""A scripted JSON HTTP server on 127.0.0.1 for driving the real SDKs and CLIs in tests.

Subclasses route requests; the base records every request and applies scripted failures to the
model endpoint in FIFO order: ``Fail(status, …)``, ``Slow(seconds)`` (answers after the client's
timeout), ``Malformed()`` (a 200 whose body is not JSON), ``Hang()`` (never answers until the
server stops), ``Drop(after)`` (a stream cut off after ``after`` events), ``Drip(interval)`` (a
stream sent one byte every ``interval`` seconds).

A route may answer with a ``Stream`` (server-sent events, written chunked as they are produced)
instead of a JSON body; the faults above that concern streams are applied to it here.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import socket
import threading
import zlib
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Callable
from typing import Any, TypeVar


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


@dataclass
class Hang:
    """Accept the request and never answer (until the server stops)."""


@dataclass
class Drop:
    """Send the first ``after`` events of the stream, then cut the connection (no final chunk)."""

    after: int = 2


@dataclass
class Drip:
    """Send the stream one byte every ``interval`` seconds."""

    interval: float = 1.0


Action = Fail | Slow | Malformed | Hang | Drop | Drip


@dataclass
class Stream:
    """A streamed 200 answer: ``events`` are complete SSE events (``event: …\ndata: …\n\n``)."""

    events: list[bytes]
    content_type: str = "text/event-stream"
    drop_after: int | None = None
    drip_interval: float | None = None


def sse_event(name: str | None, data: Any) -> bytes:
    """One server-sent event; ``data`` is JSON-encoded unless it is already a string."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {text}\n\n".encode()


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    query: str = ""


@dataclass
class ToolCall:
    """A tool call the fake model makes (Anthropic ``tool_use`` / OpenAI ``function_call``)."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    namespace: str | None = None  # Responses API tools grouped in a namespace (codex's multi_agent_v1)


@dataclass
class Reply:
    """What a responder may return instead of plain text: text and/or tool calls.

    ``cut_off``: the model stopped at its output-token limit (Anthropic ``stop_reason:
    "max_tokens"``, Chat ``finish_reason: "length"``, Responses ``status: "incomplete"``). A reply
    longer than the request's own cap is cut off there anyway (``within_cap``), as a real model's is.
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    cut_off: bool = False


def as_reply(value: Any) -> Reply:
    return value if isinstance(value, Reply) else Reply(text=str(value))


def within_cap(reply: Reply, cap: Any) -> Reply:
    """``reply`` as a model with an output cap of ``cap`` tokens gives it: cut at the cap (the
    fakes' tokenizer: 4 characters a token) and marked ``cut_off`` when it was longer."""
    if isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0 or count_tokens(reply.text) <= cap:
        return reply
    return Reply(text=reply.text[: cap * 4], tool_calls=[], cut_off=True)


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


Fake = TypeVar("Fake", bound="FakeServer")


class FakeServer:
    """Start with ``start()`` (or use as a context manager); ``base_url`` points the SDK at it."""

    api_prefix = ""

    def __init__(self, *, key: str = "test-key"):
        self.key = key
        self.requests: list[Seen] = []
        self.script: deque[Action] = deque()
        self.responder: Callable[[dict[str, Any]], Any] | None = None
        self._unknown: list[Seen] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self: Fake) -> Fake:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake._handle(self, "GET")

            def do_POST(self) -> None:
                fake._handle(self, "POST")

            def do_PUT(self) -> None:
                fake._handle(self, "PUT")

            def do_PATCH(self) -> None:
                fake._handle(self, "PATCH")

            def do_DELETE(self) -> None:
                fake._handle(self, "DELETE")

            def do_HEAD(self) -> None:
                fake._handle(self, "HEAD")

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

    def __enter__(self: Fake) -> Fake:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def root(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        assert isinstance(host, str)  # an IPv4 server's address
        return f"http://{host}:{port}"

    # -- scripting and inspection -------------------------------------------------------------

    def push(self, *actions: Action) -> None:
        self.script.extend(actions)

    def seen(self, path: str) -> list[Seen]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def unknown(self) -> list[Seen]:
        """Requests the fake had no route for (answered 404): what a client asked that we do not model."""
        with self._lock:
            return list(self._unknown)

    # -- plumbing ---------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        raw = _read_body(handler)
        content_type = handler.headers.get("content-type", "")
        body: Any = raw
        if "json" in content_type and raw:
            body = json.loads(raw)
        headers = {k.lower(): v for k, v in handler.headers.items()}
        path, _, query = handler.path.partition("?")
        seen = Seen(method, path, headers, body, query)
        with self._lock:
            self.requests.append(seen)
        try:
            status, payload, extra = self.route(method, path, headers, body, content_type)
        except Exception as exc:  # a bug in the fake must be visible, not a hang
            status, payload, extra = 599, {"error": {"message": f"fake crashed: {exc!r}"}}, {}
        if status == 404 and isinstance(payload, dict) and "no route" in json.dumps(payload):
            with self._lock:
                self._unknown.append(seen)
        self._send(handler, status, payload, extra)

    def _send(self, handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str]) -> None:
        if isinstance(payload, Hang):
            self._stop.wait()
            handler.close_connection = True
            return
        if isinstance(payload, Slow):
            self._stop.wait(payload.seconds)
            status, payload = 500, {"error": {"message": "too late"}}
        if isinstance(payload, Stream):
            self._send_stream(handler, status, payload, headers)
            return
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
            if handler.command != "HEAD":  # a HEAD answer has headers only
                handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send_stream(
        self, handler: BaseHTTPRequestHandler, status: int, stream: Stream, headers: dict[str, str]
    ) -> None:
        """Write the events chunked, one flush per event (or per byte when dripping)."""
        try:
            handler.send_response(status)
            handler.send_header("content-type", stream.content_type)
            handler.send_header("cache-control", "no-cache")
            handler.send_header("transfer-encoding", "chunked")
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            for index, event in enumerate(stream.events):
                if stream.drop_after is not None and index >= stream.drop_after:
                    handler.close_connection = True
                    handler.wfile.flush()
                    handler.connection.shutdown(socket.SHUT_RDWR)
                    return
                pieces = [event[i : i + 1] for i in range(len(event))] if stream.drip_interval else [event]
                for piece in pieces:
                    if self._stop.is_set():
                        handler.close_connection = True
                        return
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    handler.wfile.flush()
                    if stream.drip_interval:
                        self._stop.wait(stream.drip_interval)
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            handler.close_connection = True

    def next_action(self) -> Action | None:
        with self._lock:
            return self.script.popleft() if self.script else None

    def scripted(
        self, action: Action | None, error_body: Callable[[int, str], Any]
    ) -> tuple[int, Any, dict[str, str]] | None:
        """The response for a scripted failure, or None to answer normally."""
        if action is None:
            return None
        if isinstance(action, Fail):
            return action.status, error_body(action.status, action.message), dict(action.headers)
        if isinstance(action, (Slow, Hang)):
            return 200, action, {}
        if isinstance(action, (Drop, Drip)):
            return None  # applied to the stream by the route (see ``apply_stream_fault``)
        return 200, action.body, {}

    @staticmethod
    def apply_body_fault(action: Action | None, payload: Any) -> Any:
        """A ``Drip`` on a plain (non-streamed) JSON answer: the same body, one byte at a time,
        so no single read ever times out."""
        if isinstance(action, Drip):
            body = json.dumps(payload).encode("utf-8")
            return Stream([body], content_type="application/json", drip_interval=action.interval)
        return payload

    @staticmethod
    def apply_stream_fault(action: Action | None, stream: Stream) -> Stream:
        if isinstance(action, Drop):
            stream.drop_after = action.after
        elif isinstance(action, Drip):
            stream.drip_interval = action.interval
        return stream

    def route(
        self, method: str, path: str, headers: dict[str, str], body: Any, content_type: str
    ) -> tuple[int, Any, dict[str, str]]:
        raise NotImplementedError


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request body, de-chunked and decompressed (gzip / deflate; zstd when available)."""
    if "chunked" in (handler.headers.get("transfer-encoding") or "").lower():
        parts = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                handler.rfile.readline()
                break
            parts.append(handler.rfile.read(size))
            handler.rfile.readline()
        raw = b"".join(parts)
    else:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
    encoding = (handler.headers.get("content-encoding") or "").lower()
    if encoding == "gzip":
        raw = gzip.decompress(raw)
    elif encoding == "deflate":
        raw = zlib.decompress(raw)
    elif encoding == "zstd":
        raw = _zstd_decompress(raw)
    return raw


def _zstd_decompress(raw: bytes) -> bytes:
    try:
        import zstandard  # type: ignore[import-not-found]
    except ImportError:
        return raw  # recorded as-is; the route answers 400 if it cannot read it
    return zstandard.ZstdDecompressor().decompressobj().decompress(raw)


ID_TAIL = re.compile(r"/([A-Za-z0-9_\-]+)(/[a-z]+)?$")
