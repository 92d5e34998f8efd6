"""One prompt through the Copilot CLI's SDK server (``copilot --headless --stdio``).

The server speaks JSON-RPC 2.0 on stdin/stdout, each message framed by a ``Content-Length`` header
(the language-server framing). One call is: ``connect`` (the protocol handshake), ``session.create``
(model, system message, tools, provider), ``session.send`` (the prompt), then the session's
``session.event`` notifications until ``session.idle``. The server may ask the client things
(permissions, user input, tokens); with every tool off none should come, and any that does is
refused, so the server never waits on us.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from skillopt_sleep.backends.cli_common import classify_failure

MAX_FRAME_BYTES = 64 * 1024 * 1024  # one message from the server; a larger one ends the call

# A watch function sees each session event; a returned (kind, message) ends the call.
EventWatch = Callable[[dict[str, Any]], tuple[str, str] | None]


@dataclass
class RpcRun:
    events: list[dict[str, Any]] = field(default_factory=list)
    latency: float = 0.0
    error: str | None = None  # set when the server could not run, failed, timed out or was stopped
    error_message: str = ""
    stderr: str = ""


class _Closed(Exception):
    pass


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frames(stream: IO[bytes], sink: queue.Queue[dict[str, Any] | None]) -> None:
    """Put each message read from ``stream`` on ``sink``; None once the stream ends, or at a frame
    whose length is negative or over ``MAX_FRAME_BYTES``."""
    try:
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii", "replace").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if length is None:
                continue
            if not 0 <= length <= MAX_FRAME_BYTES:
                return  # not a message this client reads: the call ends as if the server closed
            message = json.loads(stream.read(length).decode("utf-8", "replace"))
            if isinstance(message, dict):
                sink.put(message)
    except (OSError, ValueError):
        return
    finally:
        sink.put(None)


class _Session:
    def __init__(self, proc: subprocess.Popen[bytes], deadline: float, watch: EventWatch | None):
        self.proc = proc
        self.deadline = deadline
        self.watch = watch
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self.stopped: tuple[str, str] | None = None
        self.idle = False
        self.next_id = 0
        assert proc.stdout is not None
        threading.Thread(target=read_frames, args=(proc.stdout, self.inbox), daemon=True).start()

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(frame(message))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise _Closed(str(exc)) from None

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        wanted = self.next_id
        self.send({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == wanted and "method" not in message:
                if "error" in message:
                    error = message["error"]
                    raise RuntimeError(str(error.get("message") if isinstance(error, dict) else error))
                return message.get("result")

    def receive(self, *, until_idle: bool = False) -> dict[str, Any]:
        """The next message that is not a notification or request from the server (those are
        handled here); with ``until_idle``, an empty one once the session is idle."""
        while True:
            if self.stopped is not None:
                raise _Closed("stopped")
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            try:
                message = self.inbox.get(timeout=remaining)
            except queue.Empty:
                raise TimeoutError from None
            if message is None:
                raise _Closed("the server closed its output")
            method = message.get("method")
            if method is None:
                return message
            if "id" in message:  # a request from the server: refuse it
                self.send(
                    {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not supported"}}
                )
            elif method == "session.event":
                params = message.get("params")
                event = params.get("event", params) if isinstance(params, dict) else None
                if isinstance(event, dict):
                    self.on_event(event)
                if until_idle and self.idle:
                    return {}

    def on_event(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if event.get("type") == "session.idle":
            self.idle = True
        verdict = self.watch(event) if self.watch is not None else None
        if verdict is not None and self.stopped is None:
            self.stopped = verdict

    def wait_idle(self) -> None:
        while not self.idle:
            self.receive(until_idle=True)


def run_session(
    argv: list[str],
    cwd: Path,
    env: Mapping[str, str],
    create: dict[str, Any],
    prompt: str,
    timeout: float,
    *,
    watch: EventWatch | None = None,
) -> RpcRun:
    """Start the server, run ``prompt`` in a session made with ``create``, stop the server."""
    started = time.monotonic()
    name = os.path.basename(argv[0])
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except FileNotFoundError:
        return RpcRun(error="unavailable", error_message=f"{argv[0]!r} not found on PATH")
    except OSError as exc:
        return RpcRun(error="unavailable", error_message=f"cannot run {argv[0]!r}: {exc}")
    stderr: list[bytes] = []
    assert proc.stderr is not None
    err_stream = proc.stderr
    err_thread = threading.Thread(target=lambda: stderr.append(err_stream.read()), daemon=True)
    err_thread.start()
    session = _Session(proc, started + timeout, watch)
    run = RpcRun()
    try:
        session.request("connect", {"supportedTaskKinds": ["agent"]})
        created = session.request("session.create", create)
        session_id = created.get("sessionId") if isinstance(created, dict) else None
        session.request("session.send", {"sessionId": session_id, "prompt": prompt})
        session.wait_idle()
    except TimeoutError:
        run.error, run.error_message = "timeout", f"{name} did not answer within {timeout:g}s"
    except _Closed as exc:
        if session.stopped is None:
            run.error, run.error_message = "server", f"{name}: {exc}"
    except RuntimeError as exc:  # the server refused a request: its message says why
        run.error, run.error_message = classify_failure(str(exc), "bad_request"), f"{name}: {exc}"
    except BaseException:  # Ctrl-C: the server runs in its own session, so it would outlive us
        _kill(proc)
        raise
    finally:
        _kill(proc)
        proc.wait()
        err_thread.join(timeout=5)
    if session.stopped is not None:
        run.error, run.error_message = session.stopped[0], f"{name}: {session.stopped[1]}"
    run.events = session.events
    run.latency = time.monotonic() - started
    run.stderr = b"".join(stderr).decode("utf-8", "replace")
    return run


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server and its children (it runs in its own process group)."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass
