"""The Copilot CLI's SDK server protocol (backends/copilot_rpc.py): Content-Length framing read with a
bound, and one session against a scripted server that asks the client something (refused), streams
events until idle, or fails. The whole backend with a fake CLI is in test_copilot_cli.py."""

from __future__ import annotations

import io
import json
import queue
import sys
from pathlib import Path
from typing import Any

from skillopt_sleep.backends import copilot_rpc
from skillopt_sleep.backends.copilot_rpc import frame, read_frames, run_session


def frames_of(data: bytes) -> list[dict[str, Any] | None]:
    sink: queue.Queue[dict[str, Any] | None] = queue.Queue()
    read_frames(io.BytesIO(data), sink)
    return [sink.get_nowait() for _ in range(sink.qsize())]


def test_frames_round_trip_and_the_stream_end_is_said() -> None:
    first, second = {"id": 1, "result": "✓"}, {"method": "session.event", "params": {}}
    data = frame(first) + b"X-Other: 1\r\n" + frame(second)
    assert frames_of(data) == [first, second, None]
    assert frame({"a": "é"}).startswith(b"Content-Length: 11\r\n\r\n")  # bytes, not characters


def test_a_frame_over_the_bound_or_negative_ends_the_reading(monkeypatch) -> None:
    monkeypatch.setattr(copilot_rpc, "MAX_FRAME_BYTES", 16)
    assert frames_of(frame({"id": 1}) + frame({"id": 2, "result": "x" * 40}) + frame({"id": 3})) == [{"id": 1}, None]
    assert frames_of(b"Content-Length: -1\r\n\r\n" + frame({"id": 3})) == [None]
    assert frames_of(b"Content-Length: 5\r\n\r\n{bad!") == [None]


SERVER = r"""
import json, sys
mode = sys.argv[1]
def read():
    length = 0
    while True:
        line = sys.stdin.buffer.readline().strip()
        if not line:
            break
        length = int(line.split(b":")[1])
    return json.loads(sys.stdin.buffer.read(length))
def write(message):
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()
def event(kind, **data):
    write({"jsonrpc": "2.0", "method": "session.event", "params": {"event": {"type": kind, **data}}})
seen = []
while True:
    request = read()
    if "method" not in request:  # the client's answer to our question
        seen.append(request)
        continue
    method = request["method"]
    if mode == "refuse" and method == "session.create":
        write({"jsonrpc": "2.0", "id": request["id"], "error": {"message": "model not available"}})
        continue
    write({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "s1"}})
    if method == "session.send":
        if mode == "hang":
            continue
        write({"jsonrpc": "2.0", "id": "q1", "method": "permission.request", "params": {}})
        answer = read()
        event("assistant.message", content="the answer", refused=answer.get("error", {}).get("code"))
        event("session.idle")
"""


def run(tmp_path: Path, mode: str, timeout: float = 30, watch=None):
    script = tmp_path / "server.py"
    script.write_text(SERVER, encoding="utf-8")
    return run_session([sys.executable, str(script), mode], tmp_path, {}, {"model": "m"}, "hi", timeout, watch=watch)


def test_a_session_streams_its_events_until_idle_refusing_the_servers_question(tmp_path: Path) -> None:
    result = run(tmp_path, "ok")
    assert result.error is None, result.error_message
    assert [e["type"] for e in result.events] == ["assistant.message", "session.idle"]
    assert result.events[0]["refused"] == -32601  # what the server asked was refused, not waited on


def test_a_watch_ends_the_call_with_its_verdict(tmp_path: Path) -> None:
    result = run(tmp_path, "ok", watch=lambda e: ("rate_limit", "429") if e["type"] == "assistant.message" else None)
    assert (result.error, result.error_message.endswith("429")) == ("rate_limit", True)


def test_a_refused_request_a_silent_server_and_a_missing_binary_are_errors(tmp_path: Path) -> None:
    refused = run(tmp_path, "refuse")
    assert refused.error is not None and "model not available" in refused.error_message
    assert run(tmp_path, "hang", timeout=2).error == "timeout"
    missing = run_session([str(tmp_path / "nope")], tmp_path, {}, {}, "hi", 5)
    assert missing.error == "unavailable" and json.dumps(missing.events) == "[]"
