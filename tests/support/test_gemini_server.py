"""The fake Gemini API the real ``gemini`` CLI talks to: routes, auth, streamed text and function
calls, JSON-schema answers, scripted faults."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlparse

from tests.support.gemini_server import FakeGemini, has_function_response, last_user_text
from tests.support.http_base import Fail, Reply, ToolCall


def post(fake: FakeGemini, path: str, body: dict, key: str = "k") -> tuple[int, bytes, str]:
    url = urlparse(fake.root)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json", "x-goog-api-key": key})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data, response.getheader("content-type") or ""


def events(raw: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]


PROMPT = {"contents": [{"role": "user", "parts": [{"text": "<session_context>ctx</session_context>"}, {"text": "hi"}]}]}


def test_a_streamed_answer_carries_the_text_then_the_calls_and_usage():
    with FakeGemini(key="k") as fake:
        fake.responder = lambda body: Reply("Reading it.", [ToolCall("read_file", {"file_path": "a.py"})])
        status, raw, kind = post(fake, "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", PROMPT)
    assert status == 200 and kind == "text/event-stream"
    chunks = events(raw)
    text = "".join(p.get("text", "") for c in chunks for p in c["candidates"][0]["content"]["parts"])
    assert text == "Reading it."
    last = chunks[-1]
    assert last["candidates"][0]["finishReason"] == "STOP" and last["usageMetadata"]["totalTokenCount"] > 0
    [call] = [p["functionCall"] for p in last["candidates"][0]["content"]["parts"] if "functionCall" in p]
    assert call["name"] == "read_file" and call["args"] == {"file_path": "a.py"}


def test_the_last_user_text_is_what_the_person_said_and_schemas_get_a_value():
    assert last_user_text(PROMPT) == "hi"
    answered = {"contents": [*PROMPT["contents"], {"role": "user", "parts": [{"functionResponse": {"name": "x"}}]}]}
    assert has_function_response(answered) and not has_function_response(PROMPT)
    schema = {"type": "OBJECT", "properties": {"score": {"type": "INTEGER"}}}
    with FakeGemini(key="k") as fake:
        status, raw, _ = post(
            fake, "/v1beta/models/m:generateContent", {**PROMPT, "generationConfig": {"responseJsonSchema": schema}}
        )
    assert status == 200
    assert json.loads(json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"]) == {"score": 1}


def test_a_wrong_key_an_unknown_route_and_a_scripted_failure():
    with FakeGemini(key="k") as fake:
        assert post(fake, "/v1beta/models/m:generateContent", PROMPT, key="bad")[0] == 401
        assert post(fake, "/v1beta/nothing", PROMPT)[0] == 404
        fake.push(Fail(429, "quota"))
        status, raw, _ = post(fake, "/v1beta/models/m:generateContent", PROMPT)
        assert status == 429 and json.loads(raw)["error"]["status"] == "RESOURCE_EXHAUSTED"
        assert post(fake, "/v1beta/models/m:countTokens", PROMPT)[0] == 200
        assert [r.path for r in fake.unknown()] == ["/v1beta/nothing"]
        assert len(fake.model_requests()) == 2
