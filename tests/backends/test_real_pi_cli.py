"""The pi-cli backend driving the REAL ``pi`` (the release pinned in scripts/agent_clis.versions)
against a ``FakeAnthropic``, in a throwaway HOME that holds a person's own Pi context, every piece
marked: AGENTS.md / SYSTEM.md / APPEND_SYSTEM.md in the agent dir, skills there and in
``~/.agents``, a prompt template, extensions (auto-discovered and named in settings.json) that
leave evidence when loaded and offer a tool, and AGENTS.md in the project the engine runs from and
in an ancestor of the replay's own directory.

A replay must carry none of it, offer no tool, load no extension, fail fast on a 401 / 429, and
leave HOME, the project and TMPDIR byte-identical. The control shows the same context does reach
a plain ``pi -p``.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
from tests.support.anthropic_server import FakeAnthropic
from tests.support.http_base import Fail, Reply
from tests.support.pi_env import pi_cli, pi_env
from tests.support.token_proxy import TokenProxy
from tests.support.agent_night import attempts, reviewed_night
from tests.support.tree_hash import differences, fingerprint

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.pi_cli import PiCliBackend
from skillopt_sleep.backends.retry import RetryPolicy

pytestmark = pytest.mark.real_clis  # drives the real pi CLI (tests/support/agent_clis.py)

MARKER = "SKILLOPT-MARKER"
DOCUMENT = "## Rules\n- Keep every answer under 300 characters.\n- Ünïcødé is fine — ✓\n"
TASK = "Summarize the PR."
REQUEST = Request(purpose="attempt", system=DOCUMENT, user=TASK)
CALLS = 3


def _extension(path: Path, evidence: Path, name: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        'import * as fs from "node:fs";\n'
        "export default function (pi) {\n"
        f"  fs.writeFileSync({json.dumps(str(evidence / name))}, 'loaded');\n"
        "  pi.registerTool({\n"
        f'    name: "marker_{name}", label: "Marker", description: "{MARKER}-tool-{name}",\n'
        '    parameters: { type: "object", properties: {} },\n'
        '    async execute() { return { content: [{ type: "text", text: "x" }], details: {} }; },\n'
        "  });\n"
        "}\n",
        encoding="utf-8",
    )


def _skill(directory: Path, where: str) -> None:
    (directory / "marker-skill").mkdir(parents=True)
    (directory / "marker-skill" / "SKILL.md").write_text(
        f"---\nname: marker-skill\ndescription: {MARKER}-skill-{where} use it always\n---\n{MARKER}-skill-body\n",
        encoding="utf-8",
    )


def person_context(home: Path, project: Path, ancestor: Path) -> Path:
    """A person's own Pi context, every piece marked; returns where extensions leave evidence."""
    evidence = home / "ran"
    evidence.mkdir()
    agent = home / ".pi" / "agent"
    for name in ("AGENTS.md", "SYSTEM.md", "APPEND_SYSTEM.md"):
        (agent / name).write_text(f"{MARKER}-agent-dir-{name}\n", encoding="utf-8")
    _skill(agent / "skills", "agent-dir")
    _skill(home / ".agents" / "skills", "home")
    (agent / "prompts").mkdir()
    (agent / "prompts" / "summarize.md").write_text(f"{MARKER}-prompt-template $@\n", encoding="utf-8")
    _extension(agent / "extensions" / "marker.ts", evidence, "discovered")
    _extension(home / "named-extension.ts", evidence, "named")
    settings_file = agent / "settings.json"
    settings = json.loads(settings_file.read_text(encoding="utf-8"))
    settings["extensions"] = [str(home / "named-extension.ts")]
    settings_file.write_text(json.dumps(settings, indent=2), encoding="utf-8")
    (home / "AGENTS.md").write_text(f"{MARKER}-home-agents-md\n", encoding="utf-8")
    (project / "AGENTS.md").write_text(f"{MARKER}-project-agents-md\n", encoding="utf-8")
    _extension(project / ".pi" / "extensions" / "project.ts", evidence, "project")
    (ancestor / "AGENTS.md").write_text(f"{MARKER}-ancestor-agents-md\n", encoding="utf-8")
    return evidence


def _bodies(requests: list) -> str:
    return "\n".join(
        json.dumps(r.body, ensure_ascii=False) if not isinstance(r.body, bytes) else r.body.decode("utf-8", "replace")
        for r in requests
    )


@pytest.fixture
def pi_setup(tmp_path, monkeypatch):
    pi = pi_cli()
    # The replay's directory lives in TMPDIR; tmp_path above it holds a marked AGENTS.md.
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    with FakeAnthropic(key="sk-ant-fake-" + "k" * 24) as fake:
        env = pi_env(tmp_path, fake, TMPDIR=str(private_tmp))
        home = Path(env["HOME"])
        evidence = person_context(home, project, tmp_path)
        for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "PI_CODING_AGENT_DIR"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
        monkeypatch.chdir(project)
        yield PiCliBackend(command=pi, timeout=180), fake, home, project, evidence, private_tmp


def test_replay_carries_none_of_the_persons_context_and_leaves_nothing(pi_setup):
    backend, fake, home, project, evidence, private_tmp = pi_setup
    fake.responder = lambda body: "short summary"
    before = fingerprint(home, project, private_tmp)
    completion = backend.complete(REQUEST)
    assert completion.ok, completion.error_message
    assert completion.text == "short summary" and completion.model == "claude-sonnet-4-5"
    assert completion.usage.output_tokens > 0
    assert differences(before, fingerprint(home, project, private_tmp)) == []

    (turn,) = fake.seen("/v1/messages")
    assert MARKER not in _bodies(fake.requests)  # no context file, skill, template or extension
    assert not turn.body.get("tools")  # no tool offered at all
    system = json.dumps(turn.body.get("system"), ensure_ascii=False)
    assert "Keep every answer under 300 characters." in system and "Ünïcødé" in system
    assert "coding assistant" not in system  # Pi's own prompt replaced
    assert TASK in json.dumps(turn.body.get("messages"))
    assert list(evidence.iterdir()) == []  # no extension loaded
    assert not (home / ".pi" / "agent" / "sessions").exists()


def test_what_pi_still_adds_to_the_system_prompt(pi_setup):
    """Pi appends the date and its working directory to any system prompt: the replay's empty
    directory, never the project."""
    backend, fake, _, project, _, private_tmp = pi_setup
    assert backend.complete(REQUEST).ok
    (turn,) = fake.seen("/v1/messages")
    (block,) = turn.body["system"]
    head, date_line, cwd_line = block["text"].rsplit("\n", 2)
    assert head == DOCUMENT.rstrip("\n") or head == DOCUMENT
    assert date_line.startswith("Current date: ")
    assert cwd_line.startswith(f"Current working directory: {private_tmp}/")
    assert str(project) not in block["text"]


def test_fifty_thousand_character_document(pi_setup):
    backend, fake, *_ = pi_setup
    document = "Überprüfe jede Änderung — ✓ " * 1900
    completion = backend.complete(Request(purpose="attempt", system=document, user="task"))
    assert completion.ok, completion.error_message
    assert document.strip() in json.dumps(fake.seen("/v1/messages")[-1].body.get("system"), ensure_ascii=False)


@pytest.mark.parametrize("status,kind", [(401, "auth"), (429, "rate_limit")])
def test_fails_fast_on_401_and_429(pi_setup, status, kind):
    backend, fake, home, project, _, private_tmp = pi_setup
    fake.push(*[Fail(status, "scripted")] * 20)
    before = fingerprint(home, project, private_tmp)
    completion = backend.complete(REQUEST)
    assert completion.error == kind, completion.error_message
    assert len(fake.seen("/v1/messages")) == 1  # Pi's own retries and the SDK's are off
    assert differences(before, fingerprint(home, project, private_tmp)) == []


def test_an_unknown_model_and_an_empty_answer_are_errors(pi_setup):
    backend, fake, *_ = pi_setup
    backend.model = "nowhere/some-model"  # a provider pi does not know: pi refuses it
    completion = backend.complete(REQUEST)
    assert completion.error == "model" and "nowhere/some-model" in completion.error_message
    assert fake.seen("/v1/messages") == []
    backend.model = "fake/no-such-model"  # a known provider: pi asks it, and it answers 404
    completion = backend.complete(REQUEST)
    assert completion.error == "model" and "404" in completion.error_message
    backend.model = None
    fake.responder = lambda body: ""
    assert backend.complete(REQUEST).error == "empty"


def test_a_cut_off_reply_is_truncated(pi_setup):
    backend, fake, *_ = pi_setup
    fake.responder = lambda body: Reply("half an ans", cut_off=True)
    completion = backend.complete(REQUEST)
    assert completion.ok and completion.truncated and completion.text == "", completion.error_message
    client = Client(backend, retry=RetryPolicy(attempts=3, sleep=lambda s: None))
    assert client.complete(REQUEST).truncated
    assert len(fake.seen("/v1/messages")) == 2  # one request a run: Pi does not continue it


def test_stopped_at_the_timeout_leaves_nothing(pi_setup):
    backend, fake, home, project, _, private_tmp = pi_setup
    release = threading.Event()
    fake.responder = lambda body: release.wait(60) and "too late"
    backend.timeout = 8.0
    before = fingerprint(home, project, private_tmp)
    try:
        completion = backend.complete(REQUEST)
    finally:
        release.set()
    assert completion.error == "timeout", completion.error_message
    assert differences(before, fingerprint(home, project, private_tmp)) == []


@pytest.mark.parametrize("at_once", [False, True], ids=["in-a-row", "at-once"])
def test_an_expired_subscription_login_is_refreshed_once_and_kept(tmp_path, monkeypatch, at_once):
    """Pi refreshes an expired Anthropic OAuth login at a fixed address, reached here through an
    HTTPS proxy (tests/support/token_proxy.py); the refresh made in the private agent dir goes back
    to the person's auth.json, so the next call needs none (calls made at once wait for it), and
    nothing else of theirs changes."""
    pi = pi_cli()
    new_access = "sk-ant-oat01-new-" + "n" * 24
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    token_reply = {"access_token": new_access, "refresh_token": "rt-new", "expires_in": 28800, "token_type": "Bearer"}
    with FakeAnthropic(key=new_access) as fake, TokenProxy(tmp_path, token_reply) as proxy:
        fake.responder = lambda body: "short summary"
        env = pi_env(tmp_path, fake, TMPDIR=str(private_tmp), **proxy.env())
        agent = Path(env["HOME"]) / ".pi" / "agent"
        # the built-in anthropic provider, its address pointed at the fake
        (agent / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": fake.root}}}))
        settings = {"defaultProvider": "anthropic", "defaultModel": "claude-sonnet-4-5"}
        (agent / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        expired = {"type": "oauth", "access": "old", "refresh": "rt-old", "expires": int(time.time() * 1000) - 1000}
        (agent / "auth.json").write_text(json.dumps({"anthropic": expired}), encoding="utf-8")
        for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "PI_CODING_AGENT_DIR"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
        before = fingerprint(agent, private_tmp)
        backend = PiCliBackend(command=pi, timeout=180)
        results: list = [None] * CALLS

        def call(index: int) -> None:
            results[index] = backend.complete(REQUEST)

        if at_once:
            threads = [threading.Thread(target=call, args=(i,)) for i in range(CALLS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=300)
        else:
            for index in range(CALLS):
                call(index)
        after = fingerprint(agent, private_tmp)
    assert all(r is not None and r.ok and r.text == "short summary" for r in results), results
    (refresh,) = proxy.token_requests()  # the other calls used the refreshed login
    assert refresh.body["grant_type"] == "refresh_token" and refresh.body["refresh_token"] == "rt-old"
    turns = fake.seen("/v1/messages")
    assert len(turns) == CALLS and {t.headers.get("authorization") for t in turns} == {f"Bearer {new_access}"}
    stored = json.loads((agent / "auth.json").read_text(encoding="utf-8"))["anthropic"]
    assert stored["access"] == new_access and stored["refresh"] == "rt-new"  # not a stale refresh token
    assert differences(before, after) == [f"changed {agent / 'auth.json'}"]
    # What Pi sends on a subscription login: Claude Code's identity line before the documents.
    first, documents = turns[0].body["system"]
    assert first["text"] == "You are Claude Code, Anthropic's official CLI for Claude."
    assert documents["text"].startswith(DOCUMENT)


# -- control: the same context does reach pi run the ordinary way ---------------------------------


def test_control_plain_pi_print_carries_the_markers_and_offers_tools(pi_setup):
    backend, fake, home, project, evidence, _ = pi_setup
    out = subprocess.run(
        [backend.command, "-p", TASK],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
        env=os.environ.copy(),
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr
    (turn,) = fake.seen("/v1/messages")
    bodies = _bodies([turn])
    for marker in ("agent-dir-AGENTS.md", "agent-dir-SYSTEM.md", "project-agents-md", "skill-agent-dir", "tool-named"):
        assert f"{MARKER}-{marker}" in bodies, marker
    assert {"bash", "marker_discovered"} <= {tool["name"] for tool in turn.body["tools"]}
    assert {p.name for p in evidence.iterdir()} >= {"discovered", "named", "project"}
    assert list((home / ".pi" / "agent" / "sessions").rglob("*.jsonl"))  # and it saved a session


def test_a_whole_night_on_a_reviewed_tasks_file_runs_through_the_cli_and_leaves_nothing(pi_setup, tmp_path):
    backend, fake, home, project, evidence, private_tmp = pi_setup
    fake.responder = lambda body: "Refs: ACME-1 short summary"
    before = fingerprint(home, project, private_tmp)
    report = reviewed_night(tmp_path, f"pi-cli:command={backend.command},timeout=180", "pi")
    assert report.status in ("staged", "no-change", "budget"), (report.status, report.notes)
    assert attempts(report) >= report.splits["train"] > 0 and len(fake.seen("/v1/messages")) >= attempts(report), (
        report.calls
    )
    assert differences(before, fingerprint(home, project, private_tmp)) == []
    assert MARKER not in _bodies(fake.requests)
