"""The streaming fakes the real CLIs talk to: event order, tool calls, faults, recorded requests."""

from __future__ import annotations

import http.client
import json
import socket
from urllib.parse import urlparse

import pytest

from tests.support.anthropic_server import FakeAnthropic
from tests.support.http_base import Drop, Fail, Hang, Reply, ToolCall
from tests.support.openai_server import FakeOpenAI


def post(fake, path: str, body: dict, headers: dict[str, str], timeout: float = 10.0):
    url = urlparse(fake.root)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json", **headers})
    return conn, conn.getresponse()


def events(raw: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]


def test_messages_stream_a_text_and_tool_use_answer_in_api_order():
    with FakeAnthropic(key="k") as fake:
        fake.responder = lambda body: Reply("Delegating.", [ToolCall("Agent", {"prompt": "count"})])
        conn, response = post(
            fake,
            "/v1/messages?beta=true",
            {"model": "m", "stream": True, "max_tokens": 9, "messages": [{"role": "user", "content": "go"}]},
            {"x-api-key": "k"},
        )
        kinds = events(response.read())
        conn.close()
    assert response.getheader("content-type") == "text/event-stream"
    types = [e["type"] for e in kinds]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    starts = [e["content_block"] for e in kinds if e["type"] == "content_block_start"]
    assert [b["type"] for b in starts] == ["text", "tool_use"] and starts[1]["name"] == "Agent"
    partial = "".join(e["delta"].get("partial_json", "") for e in kinds if e["type"] == "content_block_delta")
    assert json.loads(partial) == {"prompt": "count"}
    assert kinds[-2]["delta"]["stop_reason"] == "tool_use" and kinds[-2]["usage"]["output_tokens"] > 0
    assert fake.requests[0].query == "beta=true"


def test_responses_stream_ends_with_completed_usage_and_a_dropped_stream_is_cut():
    with FakeOpenAI(key="k") as fake:
        fake.push(Drop(after=2))
        body = {"model": "m", "stream": True, "input": [{"role": "user", "content": "hi"}]}
        conn, response = post(fake, "/v1/responses", body, {"authorization": "Bearer k"})
        with pytest.raises(http.client.IncompleteRead):
            response.read()
        conn.close()
        conn, response = post(fake, "/v1/responses", body, {"authorization": "Bearer k"})
        kinds = events(response.read())
        conn.close()
    assert [e["type"] for e in kinds][:2] == ["response.created", "response.in_progress"]
    assert kinds[-1]["type"] == "response.completed" and kinds[-1]["response"]["usage"]["input_tokens"] > 0
    assert "".join(e["delta"] for e in kinds if e["type"] == "response.output_text.delta") == "Answer: hi"


def test_scripted_status_hang_and_unknown_routes():
    with FakeOpenAI(key="k") as fake:
        fake.push(Fail(429), Hang())
        body = {"model": "m", "input": "hi"}
        conn, response = post(fake, "/v1/responses", body, {"authorization": "Bearer k"})
        assert response.status == 429
        conn.close()
        with pytest.raises((socket.timeout, TimeoutError)):
            post(fake, "/v1/responses", body, {"authorization": "Bearer k"}, timeout=0.5)
        conn, response = post(fake, "/v1/nowhere", {}, {"authorization": "Bearer k"})
        assert response.status == 404
        conn.close()
        assert [seen.path for seen in fake.unknown()] == ["/v1/nowhere"]
        assert [seen.path for seen in fake.requests].count("/v1/responses") == 2
