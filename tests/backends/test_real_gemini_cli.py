"""The gemini-cli backend driving the REAL ``gemini`` CLI (scripts/agent_clis.versions) against
the fake Gemini API (tests/support/gemini_server.py), in a throwaway HOME that holds a person's own
Gemini CLI setup with marker strings: GEMINI.md in the home and in their project, an extension
with its own context file and MCP server, a skill, a custom command, an MCP server and hooks that
would leave evidence of having run, and the API key in ``~/.gemini/.env``.

A replay must carry none of it, declare no tool, run no hook or MCP server, fail fast on a 401 /
429, report a cut-off answer as truncated, and leave HOME, the project and TMPDIR byte-identical.
A control run of the plain CLI in the same HOME does carry the markers.

A "Login with Google" whose access token expired is refreshed during the call through a fake
Google token endpoint behind an HTTPS proxy (tests/support/token_proxy.py) and a fake Code Assist
API (``CODE_ASSIST_ENDPOINT``): the person's ``oauth_creds.json`` holds the new token afterwards and
is the only file of theirs that changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import time

import pytest
from tests.support import token_proxy
from tests.support.agent_clis import real_agent_cli
from tests.support.agent_night import attempts, reviewed_night
from tests.support.gemini_server import FakeGemini, _error_body, last_user_text, stream_events, tool_names
from tests.support.http_base import Fail, Reply, Stream, sse_event
from tests.support.real_clients import client_env
from tests.support.tree_hash import differences, fingerprint

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.gemini_cli import GeminiCliBackend

pytestmark = pytest.mark.real_clis  # drives the real gemini CLI (scripts/agent_clis.versions)

MARKER = "SKILLOPT-MARKER"
DOCUMENT = "## Rules\n- Keep every answer under 300 characters.\n- Ünïcødé is fine — ✓\n"
REQUEST = Request(purpose="attempt", system=DOCUMENT, user="Summarize the PR.")
KEY = "AIza" + "f" * 35


def _script(path: Path, body: str) -> Path:
    path.write_text(body, encoding="utf-8")
    path.chmod(0o755)
    return path


def person(home: Path, project: Path) -> Path:
    """A person's own Gemini CLI setup, every piece marked; returns where hooks and MCP servers
    would leave evidence of having run."""
    evidence = home / "ran"
    evidence.mkdir()
    mcp = _script(home / "marker-mcp.sh", f"#!/bin/sh\ntouch {evidence}/mcp\n")
    hook = _script(home / "marker-hook.sh", f"#!/bin/sh\ntouch {evidence}/hook-$1\ncat >/dev/null\necho '{{}}'\n")
    gemini = home / ".gemini"
    gemini.mkdir(parents=True, exist_ok=True)
    (gemini / "GEMINI.md").write_text(f"# {MARKER}-global-gemini-md\nAnswer like a pirate.\n", encoding="utf-8")
    (project / "GEMINI.md").write_text(f"# {MARKER}-project-gemini-md\n", encoding="utf-8")
    (gemini / ".env").write_text(f"GEMINI_API_KEY={KEY}\n", encoding="utf-8")
    skill = gemini / "skills" / "marker-skill"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: marker-skill\ndescription: {MARKER}-skill use it always\n---\n{MARKER}-skill-body\n",
        encoding="utf-8",
    )
    (gemini / "commands").mkdir()
    (gemini / "commands" / "marker.toml").write_text(f'prompt = "{MARKER}-command"\n', encoding="utf-8")
    extension = gemini / "extensions" / "marker-ext"
    extension.mkdir(parents=True)
    (extension / "gemini-extension.json").write_text(
        json.dumps(
            {
                "name": "marker-ext",
                "version": "1.0.0",
                "contextFileName": "MARKER.md",
                "mcpServers": {"marker-ext-mcp": {"command": str(mcp), "args": ["ext"]}},
            }
        ),
        encoding="utf-8",
    )
    (extension / "MARKER.md").write_text(f"{MARKER}-extension-context\n", encoding="utf-8")
    hooks = {
        event: [{"matcher": "*", "hooks": [{"type": "command", "command": f"{hook} {event}"}]}]
        for event in ("SessionStart", "BeforeAgent", "BeforeModel", "BeforeTool")
    }
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "ide": {"enabled": False, "hasSeenNudge": True},
        "mcpServers": {"marker": {"command": str(mcp), "args": [], "description": f"{MARKER}-mcp"}},
        "hooksConfig": {"enabled": True},
        "hooks": hooks,
    }
    (gemini / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    return evidence


@pytest.fixture
def gemini_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    gemini = real_agent_cli("gemini")
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text("print('hi')\n", encoding="utf-8")
    with FakeGemini(key=KEY) as fake:
        env = client_env(tmp_path, GOOGLE_GEMINI_BASE_URL=fake.root, TMPDIR=str(private_tmp))
        home = Path(env["HOME"])
        evidence = person(home, project)
        for name in [n for n in os.environ if n.startswith(("GEMINI", "GOOGLE", "OTEL_"))]:
            monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
        monkeypatch.chdir(project)
        backend = GeminiCliBackend("gemini-2.5-flash", command=gemini, timeout=180)
        yield backend, fake, home, project, evidence, private_tmp


def _bodies(requests: list) -> str:
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in requests)


def test_replay_carries_none_of_the_persons_context_and_leaves_nothing(gemini_setup):
    backend, fake, home, project, evidence, private_tmp = gemini_setup
    fake.responder = lambda body: "short summary"
    before = fingerprint(home, project, private_tmp)
    first = backend.complete(REQUEST)
    assert first.ok, first.error_message
    assert first.text == "short summary" and first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    second = backend.complete(REQUEST)
    assert second.ok, second.error_message
    assert differences(before, fingerprint(home, project, private_tmp)) == []

    turns = fake.model_requests()
    assert len(turns) == 2  # one call each: no router, next-speaker or loop check
    assert MARKER not in _bodies(fake.requests)  # no GEMINI.md, extension, skill, command, MCP tool
    assert "pirate" not in _bodies(fake.requests)
    for turn in turns:
        assert tool_names(turn.body) == set()  # no tool declared at all
        system = json.dumps(turn.body.get("systemInstruction"), ensure_ascii=False)
        assert "Keep every answer under 300 characters." in system and "Ünïcødé is fine — ✓" in system
        assert "Gemini CLI" not in system  # none of its own coding-agent prompt
        assert last_user_text(turn.body) == "Summarize the PR."
        context = json.dumps(turn.body.get("contents"), ensure_ascii=False)
        assert "Directory Structure" not in context and "app.py" not in context
    assert list(evidence.iterdir()) == []  # no hook ran, no MCP server started


def test_without_a_model_a_replay_is_one_request(gemini_setup):
    backend, fake, *_ = gemini_setup
    fake.responder = lambda body: "short summary"
    unset = GeminiCliBackend(None, command=backend.command, timeout=180)
    completion = unset.complete(REQUEST)
    assert completion.ok and completion.text == "short summary", completion.error_message
    (request,) = fake.model_requests()  # no router call before the task's
    assert "-pro" in request.path.split("/")[-1], request.path  # the model the router falls back to


def test_a_fifty_thousand_character_document_arrives_whole(gemini_setup):
    backend, fake, *_ = gemini_setup
    document = "Überprüfe jede Änderung — ✓ ${Unknown} " * 1400
    completion = backend.complete(Request(purpose="attempt", system=document, user="task"))
    assert completion.ok, completion.error_message
    system = fake.model_requests()[-1].body["systemInstruction"]["parts"][0]["text"]
    assert system == document.strip()


@pytest.mark.parametrize("status,kind", [(401, "auth"), (429, "rate_limit")])
def test_fails_fast_on_401_and_429(gemini_setup, status, kind):
    backend, fake, *_ = gemini_setup
    fake.push(*[Fail(status, "scripted")] * 12)
    completion = backend.complete(REQUEST)
    assert completion.error == kind, completion.error_message
    assert len(fake.model_requests()) == 1  # the CLI's own retries (ten, minutes apart) are off
    assert completion.latency < 60


def test_a_cut_off_reply_is_truncated(gemini_setup):
    backend, fake, *_ = gemini_setup
    fake.responder = lambda body: Reply("half an ans", cut_off=True)
    completion = backend.complete(REQUEST)
    assert completion.ok and completion.truncated and completion.text == "", completion.error_message
    assert len(fake.model_requests()) == 1


def test_a_task_that_looks_like_a_slash_command_is_sent_as_text(gemini_setup):
    backend, fake, *_ = gemini_setup
    completion = backend.complete(Request(purpose="attempt", system=DOCUMENT, user="/memory show"))
    assert completion.ok, completion.error_message
    assert last_user_text(fake.model_requests()[-1].body).strip() == "/memory show"


def test_control_the_plain_cli_carries_the_markers_and_offers_tools(gemini_setup):
    """Without the isolation the same HOME does reach the model: the test above can fail."""
    backend, fake, home, project, evidence, _ = gemini_setup
    out = subprocess.run(
        [backend.command, "-p", "Summarize the PR.", "--output-format", "json", "-m", "gemini-2.5-flash"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
        env=os.environ.copy(),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    bodies = _bodies(fake.model_requests())
    assert f"{MARKER}-global-gemini-md" in bodies and f"{MARKER}-project-gemini-md" in bodies
    assert any(tool_names(turn.body) for turn in fake.model_requests())
    assert "app.py" in bodies  # the folder tree
    ran = sorted(p.name for p in evidence.iterdir())
    assert "mcp" in ran and any(name.startswith("hook-") for name in ran), ran


# -- a Google sign-in refreshed during the call -------------------------------------------------------

NEW_TOKEN = "ya29.refreshed-" + "t" * 20
SCOPE = "https://www.googleapis.com/auth/cloud-platform"


class GoogleTokenProxy(token_proxy.TokenProxy):
    """The token proxy serving Google's token endpoint (a refresh) and token info (the CLI checks
    a cached token with it before use)."""

    HOSTS = ("oauth2.googleapis.com", "www.googleapis.com")

    def answer(self, method: str, host: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[str, str, bytes]:
        path = path.split("?")[0]
        if path == "/token":
            status, payload = "200 OK", {"access_token": NEW_TOKEN, "expires_in": 3599, "scope": SCOPE}
        elif path == "/tokeninfo":
            status, payload = "200 OK", {"expires_in": 3000, "scope": SCOPE}
        else:
            status, payload = "404 Not Found", {"error": "not_found"}
        return status, "application/json", json.dumps(payload).encode()


class FakeCodeAssist(FakeGemini):
    """The Code Assist API a Google sign-in talks to: the Gemini request wrapped in
    ``{"model", "project", "request"}``, the response in ``{"response"}``."""

    def route(self, method, path, headers, body, content_type):  # type: ignore[no-untyped-def]
        if headers.get("authorization") != f"Bearer {self.key}":
            return 401, {"error": {"code": 401, "message": "token expired", "status": "UNAUTHENTICATED"}}, {}
        call = path.split(":")[-1].split("?")[0]
        if call == "loadCodeAssist":
            tier = {"id": "standard-tier", "name": "Standard", "isDefault": True}
            return 200, {"currentTier": tier, "allowedTiers": [tier], "cloudaicompanionProject": "proj-1"}, {}
        if call == "streamGenerateContent" and isinstance(body, dict):
            scripted = self.scripted(self.next_action(), _error_body)
            if scripted is not None:
                return scripted
            response = self.answer(body.get("request") or {}, str(body.get("model")))
            events = [json.loads(e.decode().split("data: ", 1)[1]) for e in stream_events(response)]
            return 200, Stream([sse_event(None, {"response": e}) for e in events]), {}
        return 404, {"error": {"code": 404, "message": f"no {call}"}}, {}

    def turns(self) -> list:
        return [r for r in self.requests if r.path.endswith(":streamGenerateContent")]


@pytest.fixture
def google_sign_in(gemini_setup, tmp_path, monkeypatch):
    """The person signed in with Google: an expired access token and a refresh token in
    ``oauth_creds.json``, no API key."""
    backend, _, home, project, evidence, private_tmp = gemini_setup
    gemini = home / ".gemini"
    settings = json.loads((gemini / "settings.json").read_text(encoding="utf-8"))
    settings["security"]["auth"] = {"selectedType": "oauth-personal"}
    (gemini / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    (gemini / ".env").unlink()
    expired = {
        "access_token": "ya29.expired",
        "refresh_token": "1//refresh-token",
        "scope": SCOPE,
        "token_type": "Bearer",
        "expiry_date": int(time.time() * 1000) - 60_000,
    }
    (gemini / "oauth_creds.json").write_text(json.dumps(expired), encoding="utf-8")
    (gemini / "google_accounts.json").write_text('{"active": "me@example.com", "old": []}', encoding="utf-8")
    certificates = tmp_path / "certificates"
    certificates.mkdir()
    with (
        GoogleTokenProxy(certificates, {}, hosts=GoogleTokenProxy.HOSTS) as proxy,
        FakeCodeAssist(key=NEW_TOKEN) as code_assist,
    ):
        for name, value in proxy.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("CODE_ASSIST_ENDPOINT", code_assist.root)
        yield backend, proxy, code_assist, home, project, evidence, private_tmp


def test_a_google_sign_in_refreshed_during_the_call_is_copied_back(google_sign_in):
    backend, proxy, code_assist, home, project, evidence, private_tmp = google_sign_in
    gemini = home / ".gemini"
    code_assist.responder = lambda body: "signed-in answer"
    before = fingerprint(home, project, private_tmp)
    first = backend.complete(REQUEST)
    assert first.ok and first.text == "signed-in answer", first.error_message
    second = backend.complete(REQUEST)  # the refreshed token is used, not refreshed again
    assert second.ok, second.error_message

    (refresh,) = [r for r in proxy.requests if r.path.split("?")[0] == "/token"]  # one for both calls
    assert "refresh_token=1%2F%2Frefresh-token" in refresh.body
    changed = differences(before, fingerprint(home, project, private_tmp))
    assert changed == [f"changed {gemini / 'oauth_creds.json'}"], changed
    saved = json.loads((gemini / "oauth_creds.json").read_text(encoding="utf-8"))
    assert saved["access_token"] == NEW_TOKEN and saved["refresh_token"] == "1//refresh-token"
    assert ((gemini / "oauth_creds.json").stat().st_mode & 0o777) == 0o600

    turns = code_assist.turns()
    assert len(turns) == 2 and MARKER not in _bodies(code_assist.requests)
    for turn in turns:
        request = turn.body["request"]
        assert "Keep every answer under 300 characters." in json.dumps(request["systemInstruction"])
        assert tool_names(request) == set()
    assert list(evidence.iterdir()) == []


def test_a_signed_in_rate_limit_is_one_request(google_sign_in):
    backend, _, code_assist, *_ = google_sign_in
    code_assist.push(*[Fail(429, "Resource has been exhausted (e.g. check quota).")] * 12)
    completion = backend.complete(REQUEST)
    assert completion.error == "rate_limit", completion.error_message
    assert len(code_assist.turns()) == 1  # no retry, no switch to another model


def test_a_whole_night_on_a_reviewed_tasks_file_runs_through_the_cli_and_leaves_nothing(gemini_setup, tmp_path):
    backend, fake, home, project, evidence, private_tmp = gemini_setup
    fake.responder = lambda body: "Refs: ACME-1 short summary"
    before = fingerprint(home, project, private_tmp)
    # a model named, as the fixture's backend has it: the CLI's own "auto" choice adds a router call
    # (a small model's JSON verdict) that this fake does not play
    spec = f"gemini-cli:command={backend.command},timeout=180,model={backend.model}"
    report = reviewed_night(tmp_path, spec, "gemini")
    assert report.status in ("staged", "no-change", "budget"), (report.status, report.notes)
    assert attempts(report) >= report.splits["train"] > 0 and len(fake.model_requests()) >= attempts(report), (
        report.calls
    )
    assert differences(before, fingerprint(home, project, private_tmp)) == []
    assert MARKER not in _bodies(fake.requests) and list(evidence.iterdir()) == []
