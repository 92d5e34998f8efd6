"""The opencode-cli backend driving the REAL ``opencode`` 1.18.33 against a fake Chat Completions
provider (tests/support/chat_server.py) on 127.0.0.1, in a throwaway HOME that holds a person's own
context with marker strings: AGENTS.md in the config dir and in the project, ~/.claude/CLAUDE.md,
instruction files, an agent prompt, a skill, a plugin and an MCP server that would leave evidence
of having run, a project opencode.json. The person's key is only in their auth.json.

A replay must carry none of it, offer no tool, run no plugin or MCP server, return the reply as the
completion, fail fast on a 401 / 429, report a cut-off reply as truncated, and leave HOME, the
project and TMPDIR byte-identical. A control run of the plain CLI carries the markers.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.support.agent_clis import real_agent_cli
from tests.support.chat_server import FakeChat
from tests.support.http_base import Fail, Hang, Reply
from tests.support.openai_server import FakeOpenAI
from tests.support.token_proxy import TokenProxy
from tests.support.agent_night import attempts, reviewed_night
from tests.support.tree_hash import differences, fingerprint

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.opencode_cli import OpenCodeCliBackend

pytestmark = pytest.mark.real_clis  # drives the real opencode CLI (scripts/agent_clis.versions)

MARKER = "SKILLOPT-MARKER"
DOCUMENT = "## Rules\n- Keep every answer under 300 characters.\n- Ünïcødé is fine — ✓\n"
TASK = 'Summarize the PR.\nIt changes "retry.py" and {env:HOME}.'
REQUEST = Request(purpose="attempt", system=DOCUMENT, user=TASK)
TIMEOUT = 240  # the machine is shared: a cold start of the CLI can take a while


def _script(path: Path, body: str) -> Path:
    path.write_text(body, encoding="utf-8")
    path.chmod(0o755)
    return path


def person(root: Path, fake: FakeChat) -> dict[str, Any]:
    """A person's HOME and project, every piece of their context marked."""
    home = root / "home"
    config = home / ".config" / "opencode"
    data = home / ".local" / "share" / "opencode"
    evidence = root / "ran"
    project = root / "work" / "acme"
    for path in (config / "plugin", config / "skill" / "marker-skill", data, evidence, project, home / ".claude"):
        path.mkdir(parents=True)
    mcp = _script(home / "marker-mcp.sh", f"#!/bin/sh\ntouch {evidence}/mcp\ncat >/dev/null\n")
    settings = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": "fake/fake-model",
        "small_model": "fake/fake-model",
        "enabled_providers": ["fake"],
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": fake.base_url},
                "models": {"fake-model": {"name": "Fake Model", "tool_call": True}},
            }
        },
        "instructions": [str(home / "marker-rules.md")],
        "mcp": {"marker": {"type": "local", "command": [str(mcp)], "enabled": True}},
        "agent": {"build": {"prompt": f"{MARKER}-build-agent-prompt"}},
    }
    (config / "opencode.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    (data / "auth.json").write_text(json.dumps({"fake": {"type": "api", "key": fake.key}}), encoding="utf-8")
    (data / "auth.json").chmod(0o600)
    (home / "marker-rules.md").write_text(f"{MARKER}-instructions-file\n", encoding="utf-8")
    (config / "AGENTS.md").write_text(f"{MARKER}-global-agents-md: answer like a pirate\n", encoding="utf-8")
    (home / ".claude" / "CLAUDE.md").write_text(f"{MARKER}-claude-md\n", encoding="utf-8")
    (config / "skill" / "marker-skill" / "SKILL.md").write_text(
        f"---\nname: marker-skill\ndescription: {MARKER}-skill use it always\n---\n{MARKER}-skill-body\n",
        encoding="utf-8",
    )
    (config / "plugin" / "marker.js").write_text(
        f'import fs from "fs";\nexport const Marker = async () => {{ fs.writeFileSync("{evidence}/plugin", ""); '
        "return {}; };\n",
        encoding="utf-8",
    )
    (project / "AGENTS.md").write_text(f"{MARKER}-project-agents-md\n", encoding="utf-8")
    (project / "opencode.json").write_text(json.dumps({"instructions": ["MARKER-NOTES.md"]}), encoding="utf-8")
    (project / "MARKER-NOTES.md").write_text(f"{MARKER}-project-notes\n", encoding="utf-8")
    return {"home": home, "project": project, "evidence": evidence, "data": data}


class ProxyRecorder:
    """An HTTP(S) proxy on 127.0.0.1 that answers nothing and records the first line of every
    request (``CONNECT registry.npmjs.org:443 …``): what the CLI tries to reach besides the model."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.seen.append(conn.recv(512).split(b"\r\n")[0].decode("latin-1"))
                except OSError:
                    pass

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    opencode = real_agent_cli("opencode")
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    with FakeChat(key="sk-fake-" + "k" * 24) as fake:
        where = person(tmp_path, fake)
        home = where["home"]
        for name in list(os.environ):
            if name.startswith("OPENCODE") or name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
                monkeypatch.delenv(name)
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
        monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
        monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
        monkeypatch.setenv("TMPDIR", str(private_tmp))
        monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
        # anything that still tries the internet is recorded and gets no answer
        proxy = ProxyRecorder()
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        monkeypatch.chdir(where["project"])  # the person runs the night from their project
        monkeypatch.setenv("PWD", str(where["project"]))
        where["proxy"] = proxy
        try:
            yield OpenCodeCliBackend(command=opencode, timeout=TIMEOUT), fake, where, private_tmp
        finally:
            proxy.close()


def _bodies(fake: FakeChat) -> str:
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in fake.requests)


def test_replay_carries_none_of_the_persons_context_and_leaves_nothing(setup):
    backend, fake, where, private_tmp = setup
    fake.responder = lambda body: "short summary"
    roots = (where["home"], where["project"], private_tmp)
    before = fingerprint(*roots)
    completion = backend.complete(REQUEST)
    assert completion.ok, completion.error_message
    assert completion.text == "short summary" and completion.usage.input_tokens > 0
    assert differences(before, fingerprint(*roots)) == []  # no session database, log, lock or probe

    (turn,) = fake.seen("/v1/chat/completions")  # no title-generation call either
    assert MARKER not in _bodies(fake)
    assert not turn.body.get("tools")  # no tool offered at all
    system, user = turn.body["messages"][0], turn.body["messages"][-1]
    assert system["role"] == "system" and system["content"].startswith(DOCUMENT)
    assert "AGENTS.md" not in system["content"] and "Instructions from" not in system["content"]
    assert str(where["project"]) not in _bodies(fake)  # the working directory is the empty sandbox
    assert user == {"role": "user", "content": TASK}
    assert list(where["evidence"].iterdir()) == []  # no plugin ran, no MCP server started
    assert where["proxy"].seen == []  # nothing but the model call: no npm install, no models.dev


@pytest.mark.parametrize(
    "failure,kind", [(Fail(401, "Incorrect API key provided"), "auth"), (Fail(429, "Rate limit reached"), "rate_limit")]
)
def test_fails_fast_on_401_and_429(setup, failure, kind):
    backend, fake, *_ = setup
    fake.push(*[failure] * 20)
    completion = backend.complete(REQUEST)
    assert completion.error == kind, completion.error_message
    assert len(fake.seen("/v1/chat/completions")) == 1  # stopped before its own retries


def test_a_cut_off_reply_is_truncated(setup):
    backend, fake, *_ = setup
    fake.responder = lambda body: Reply("half an ans", cut_off=True)
    completion = backend.complete(REQUEST)
    assert completion.ok and completion.truncated and completion.text == "", completion.error_message


def test_control_plain_opencode_run_carries_the_markers_and_offers_tools(setup):
    backend, fake, where, _ = setup
    fake.responder = lambda body: "plain answer"
    out = subprocess.run(
        [backend.command, "run", "--format", "json", "Summarize the PR."],
        cwd=where["project"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"},
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    turns = [r for r in fake.seen("/v1/chat/completions") if "title generator" not in json.dumps(r.body)]
    bodies = json.dumps([t.body for t in turns], ensure_ascii=False)
    assert f"{MARKER}-global-agents-md" in bodies and f"{MARKER}-project-agents-md" in bodies
    assert any(t.body.get("tools") for t in turns)
    assert (where["data"] / "opencode.db").exists()  # the plain run records a session in the person's data dir


def test_a_long_document_arrives_whole_and_verbatim(setup):
    backend, fake, *_ = setup
    document = "Überprüfe jede Änderung — ✓ {env:HOME} {file:~/x} " * 1000
    completion = backend.complete(Request(purpose="attempt", system=document, user="task"))
    assert completion.ok, completion.error_message
    system = fake.seen("/v1/chat/completions")[-1].body["messages"][0]["content"]
    assert system.startswith(document.strip())


def test_a_person_who_used_opencode_keeps_their_session_database_untouched(setup):
    backend, fake, where, private_tmp = setup
    fake.responder = lambda body: "answer"
    subprocess.run(  # the person's own earlier run: their session database exists
        [backend.command, "run", "--format", "json", "Hello there."],
        cwd=where["project"],
        capture_output=True,
        timeout=TIMEOUT,
        env={**os.environ, "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"},
        stdin=subprocess.DEVNULL,
        check=True,
    )
    assert (where["data"] / "opencode.db").exists()
    roots = (where["home"], where["project"], private_tmp)
    before = fingerprint(*roots)
    for _ in range(2):
        completion = backend.complete(REQUEST)
        assert completion.ok, completion.error_message
    assert differences(before, fingerprint(*roots)) == []


def test_an_unknown_model_is_named_as_such(setup):
    backend, fake, *_ = setup
    backend.model = "fake/no-such-model"
    completion = backend.complete(REQUEST)
    assert completion.error == "model" and "fake/no-such-model" in completion.error_message
    assert fake.seen("/v1/chat/completions") == []


def test_stopped_at_the_timeout_it_leaves_nothing_behind(setup):
    backend, fake, where, private_tmp = setup
    roots = (where["home"], where["project"], private_tmp)
    before = fingerprint(*roots)
    fake.push(Hang())
    backend.timeout = 20.0
    completion = backend.complete(REQUEST)
    assert completion.error == "timeout", completion.error_message
    assert len(fake.seen("/v1/chat/completions")) == 1  # stopped while the model call hung
    assert differences(before, fingerprint(*roots)) == []


class ChatGPTLogin(TokenProxy):
    """OpenCode's ChatGPT login: its token endpoint, and its model endpoint relayed to ``fake``."""

    def __init__(self, directory: Path, token_reply: dict[str, Any], fake: FakeOpenAI):
        super().__init__(directory, token_reply, hosts=("auth.openai.com", "chatgpt.com"))
        self.fake = fake

    def answer(self, method: str, host: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[str, str, bytes]:
        if method == "POST" and host == "auth.openai.com" and path == "/oauth/token":
            return "200 OK", "application/json", json.dumps(self.token_reply).encode()
        if method == "POST" and host == "chatgpt.com" and path == "/backend-api/codex/responses":
            relay = http.client.HTTPConnection("127.0.0.1", int(self.fake.root.rsplit(":", 1)[1]), timeout=60)
            auth = {"authorization": headers.get("authorization", ""), "content-type": "application/json"}
            relay.request("POST", "/v1/responses", body=raw, headers=auth)
            reply = relay.getresponse()
            return f"{reply.status} {reply.reason}", reply.getheader("content-type") or "", reply.read()
        return "404 Not Found", "application/json", b'{"error":"not_found"}'


def test_an_expired_chatgpt_login_is_refreshed_and_kept(tmp_path, monkeypatch):
    """OpenCode's own ChatGPT login (an OAuth token in auth.json) through an HTTPS proxy: the
    expired token is refreshed once in the private data dir, the model call carries the new one,
    and the person's auth.json holds the new tokens afterwards, its only change."""
    opencode = real_agent_cli("opencode")
    home = tmp_path / "home"
    data = home / ".local" / "share" / "opencode"
    data.mkdir(parents=True)
    (home / ".config" / "opencode").mkdir(parents=True)
    (home / ".config" / "opencode" / "opencode.json").write_text('{"model": "openai/gpt-5.5"}', encoding="utf-8")
    auth = data / "auth.json"
    auth.write_text(json.dumps({"openai": {"type": "oauth", "refresh": "r1", "access": "a1", "expires": 0}}))
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    for name in list(os.environ):
        if name.startswith("OPENCODE") or name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
            monkeypatch.delenv(name)
    for name, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"), ("XDG_CACHE_HOME", ".cache")):
        monkeypatch.setenv(name, str(home / sub))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    token_reply = {"access_token": "a2-new-access", "refresh_token": "r2", "expires_in": 3600}
    with FakeOpenAI(key="a2-new-access") as fake, ChatGPTLogin(tmp_path, token_reply, fake) as proxy:
        for name, value in {**proxy.env(), "HTTP_PROXY": proxy.env()["HTTPS_PROXY"]}.items():
            monkeypatch.setenv(name, value)
        fake.responder = lambda body: "answer on the refreshed login"
        before = fingerprint(home, private_tmp)
        completion = OpenCodeCliBackend(command=opencode, timeout=TIMEOUT).complete(REQUEST)
        assert completion.ok, completion.error_message
        assert completion.text == "answer on the refreshed login"
        assert [(r.host, r.path) for r in proxy.requests] == [
            ("auth.openai.com", "/oauth/token"),
            ("chatgpt.com", "/backend-api/codex/responses"),
        ]
        assert "refresh_token=r1" in proxy.requests[0].body and proxy.refused == []
        (turn,) = fake.seen("/v1/responses")  # it answers only the new access token
        assert str(turn.body["instructions"]).startswith(DOCUMENT)
    saved = json.loads(auth.read_text(encoding="utf-8"))["openai"]
    assert (saved["refresh"], saved["access"]) == ("r2", "a2-new-access")
    assert differences(before, fingerprint(home, private_tmp)) == [f"changed {auth}"]


def test_a_whole_night_on_a_reviewed_tasks_file_runs_through_the_cli_and_leaves_nothing(setup, tmp_path):
    backend, fake, where, private_tmp = setup
    fake.responder = lambda body: "Refs: ACME-1 short summary"
    roots = (where["home"], where["project"], private_tmp)
    before = fingerprint(*roots)
    report = reviewed_night(
        tmp_path / "night", f"opencode-cli:command={backend.command},timeout={backend.timeout}", "opencode"
    )
    assert report.status in ("staged", "no-change", "budget"), (report.status, report.notes)
    assert attempts(report) >= report.splits["train"] > 0 and len(fake.requests) >= attempts(report), report.calls
    assert differences(before, fingerprint(*roots)) == []
    assert MARKER not in _bodies(fake) and list(where["evidence"].iterdir()) == []
    assert where["proxy"].seen == []
