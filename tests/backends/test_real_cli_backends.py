"""The claude-cli and codex-cli backends driving the REAL ``claude`` 2.1.328 and ``codex`` 0.169.0
against the fake providers (tests/support), in a throwaway HOME that holds a user's own context with
marker strings: CLAUDE.md / AGENTS.md, skills, hooks, an MCP server, developer instructions.

A replay must carry none of it, offer no executable tool, run no hook or MCP server, survive a
reconnect, fail fast on a 401 / 429, and leave nothing behind in HOME, CODEX_HOME or TMPDIR.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest
from tests.support import provider_env
from tests.support.anthropic_server import FakeAnthropic
from tests.support.http_base import Drop, Fail, Reply
from tests.support.openai_server import FakeOpenAI

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.claude_cli import ClaudeCliBackend
from skillopt_sleep.backends.codex_cli import CodexCliBackend
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.retry import RetryPolicy
from tests.support.real_clients import real_cli

pytestmark = pytest.mark.real_clis  # drives the real claude / codex CLIs (scripts/install_real_clis.sh)

MARKER = "SKILLOPT-MARKER"
DOCUMENT = "## Rules\n- Keep every answer under 300 characters.\n- Ünïcødé is fine — ✓\n"
REQUEST = Request(purpose="attempt", system=DOCUMENT, user="Summarize the PR.")


def _script(path: Path, body: str) -> Path:
    path.write_text(body, encoding="utf-8")
    path.chmod(0o755)
    return path


def user_context(home: Path, codex_home: Path) -> Path:
    """A user's own context, every piece of it marked; returns where hooks / MCP servers would
    leave evidence of having run."""
    evidence = home / "ran"
    evidence.mkdir()
    mcp = _script(home / "marker-mcp.sh", f"#!/bin/sh\ntouch {evidence}/mcp\ncat >/dev/null\n")
    hook = _script(home / "marker-hook.sh", f"#!/bin/sh\ntouch {evidence}/hook-$1\n")

    claude = home / ".claude"
    (claude / "skills" / "marker-skill").mkdir(parents=True)
    (claude / "CLAUDE.md").write_text(f"{MARKER}-claude-md: answer like a pirate\n", encoding="utf-8")
    (claude / "skills" / "marker-skill" / "SKILL.md").write_text(
        f"---\nname: marker-skill\ndescription: {MARKER}-skill use it always\n---\n{MARKER}-skill-body\n",
        encoding="utf-8",
    )
    hooks = {
        event: [{"hooks": [{"type": "command", "command": f"{hook} {event}"}]}]
        for event in ("SessionStart", "UserPromptSubmit", "Stop", "PreToolUse")
    }
    (claude / "settings.json").write_text(json.dumps({"hooks": hooks}), encoding="utf-8")
    state_file = home / ".claude.json"
    state = json.loads(state_file.read_text(encoding="utf-8"))
    state["mcpServers"] = {"marker": {"command": str(mcp), "args": []}}
    state_file.write_text(json.dumps(state), encoding="utf-8")

    (codex_home / "AGENTS.md").write_text(f"{MARKER}-agents-md: answer like a pirate\n", encoding="utf-8")
    for skills in (codex_home / "skills", home / ".agents" / "skills"):
        (skills / "marker-skill").mkdir(parents=True)
        (skills / "marker-skill" / "SKILL.md").write_text(
            f"---\nname: marker-skill\ndescription: {MARKER}-codex-skill\n---\n{MARKER}-codex-skill-body\n",
            encoding="utf-8",
        )
    (codex_home / "hooks.json").write_text(
        json.dumps(
            {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": f"{hook} codex-SessionStart"}]}]}}
        ),
        encoding="utf-8",
    )
    return evidence


def with_user_settings(config: str, mcp: Path) -> str:
    """``config`` plus a user's developer instructions (top level) and MCP server (a table)."""
    return (
        f'developer_instructions = "{MARKER}-developer-instructions"\n{config}\n'
        f'[mcp_servers.marker]\ncommand = "{mcp}"\n'
    )


def listing(*roots: Path) -> dict[str, int]:
    """Every path under ``roots`` with its size (directories 0)."""
    found = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                path = Path(dirpath) / name
                if path.exists():
                    found[str(path)] = 0 if path.is_dir() else path.stat().st_size
    return found


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setenv("TMPDIR", str(directory))
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    return directory


def _use(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "CODEX_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def _bodies(requests: list) -> str:
    return "\n".join(
        json.dumps(r.body, ensure_ascii=False) if not isinstance(r.body, bytes) else r.body.decode("utf-8", "replace")
        for r in requests
    )


# -- claude -----------------------------------------------------------------------------------------


@pytest.fixture
def claude_setup(tmp_path, monkeypatch, private_tmp):
    claude = real_cli("claude")
    with FakeAnthropic(key="sk-ant-fake-" + "k" * 24) as fake:
        env = provider_env.claude_env(tmp_path, fake)
        evidence = user_context(Path(env["HOME"]), Path(env["CODEX_HOME"]))
        _use(env, monkeypatch)
        yield ClaudeCliBackend(command=claude, timeout=120), fake, Path(env["HOME"]), evidence, private_tmp


def test_claude_replay_carries_none_of_the_users_context_and_leaves_nothing(claude_setup):
    backend, fake, home, evidence, private_tmp = claude_setup
    fake.responder = lambda body: "short summary"
    before = listing(home, private_tmp)
    first = backend.complete(REQUEST)
    assert first.ok, first.error_message
    assert first.text == "short summary" and first.cost_usd is not None
    second = backend.complete(REQUEST)
    assert second.ok, second.error_message
    after = listing(home, private_tmp)
    assert after.keys() == before.keys(), sorted(after.keys() ^ before.keys())

    turns = fake.seen("/v1/messages")
    assert len(turns) == 2
    assert MARKER not in _bodies(fake.requests)  # no CLAUDE.md, skill, hook output or MCP tool
    for turn in turns:
        assert not turn.body.get("tools")  # no tool offered at all
        system = json.dumps(turn.body.get("system"), ensure_ascii=False)
        assert "Keep every answer under 300 characters." in system and "Ünïcødé" in system
    assert list(evidence.iterdir()) == []  # no hook ran, no MCP server started
    assert [p for p in (home / ".claude" / "projects").rglob("*")] == []  # no session for a harvest
    assert list(private_tmp.iterdir()) == []  # no /tmp/claude-* probe, no sandbox


def test_claude_stopped_at_the_timeout_leaves_no_live_session_entry(claude_setup):
    backend, fake, home, *_ = claude_setup
    fake.responder = lambda body: "warm-up"
    assert backend.complete(REQUEST).ok  # the first call in a fresh HOME sets up Claude Code itself
    release = threading.Event()
    fake.responder = lambda body: release.wait(60) and "too late"
    backend.timeout = 8.0
    try:
        completion = backend.complete(REQUEST)
    finally:
        release.set()
    assert completion.error == "timeout", completion.error_message
    sessions = home / ".claude" / "sessions"
    assert not sessions.exists() or list(sessions.iterdir()) == []


def test_claude_fifty_thousand_character_document(claude_setup):
    backend, fake, *_ = claude_setup
    document = "Überprüfe jede Änderung — ✓ " * 1900
    completion = backend.complete(Request(purpose="attempt", system=document, user="task"))
    assert completion.ok, completion.error_message
    assert document.strip() in json.dumps(fake.seen("/v1/messages")[-1].body.get("system"), ensure_ascii=False)


@pytest.mark.parametrize("status,kind", [(401, "auth"), (429, "rate_limit")])
def test_claude_fails_fast_on_401_and_429(claude_setup, status, kind):
    backend, fake, *_ = claude_setup
    fake.push(*[Fail(status, "scripted")] * 20)
    completion = backend.complete(REQUEST)
    assert completion.error == kind, completion.error_message
    assert len(fake.seen("/v1/messages")) == 1  # the CLI's own retries are off


# -- codex ------------------------------------------------------------------------------------------


@pytest.fixture
def codex_setup(tmp_path, monkeypatch, private_tmp):
    codex = real_cli("codex")
    with FakeOpenAI(key="sk-fake-" + "k" * 24) as fake:
        home = tmp_path / "home"
        home.mkdir(parents=True, exist_ok=True)
        mcp = home / "marker-mcp.sh"
        env = provider_env.codex_env(tmp_path, fake, stream_max_retries=5, config_extra="")
        (home / ".claude").mkdir(exist_ok=True)
        (home / ".claude.json").write_text("{}", encoding="utf-8")
        evidence = user_context(home, Path(env["CODEX_HOME"]))
        config = Path(env["CODEX_HOME"]) / "config.toml"
        config.write_text(with_user_settings(config.read_text(encoding="utf-8"), mcp), encoding="utf-8")
        _use(env, monkeypatch)
        yield CodexCliBackend(command=codex, timeout=120), fake, home, Path(env["CODEX_HOME"]), evidence, private_tmp


def test_codex_replay_carries_none_of_the_users_context_and_leaves_nothing(codex_setup):
    backend, fake, home, codex_home, evidence, private_tmp = codex_setup
    fake.responder = lambda body: "short summary"
    before = listing(home, codex_home, private_tmp)
    completion = backend.complete(REQUEST)
    assert completion.ok, completion.error_message
    assert completion.text == "short summary"
    after = listing(home, codex_home, private_tmp)
    assert after == before, sorted(after.items() ^ before.items())  # no session, state DB, log or probe

    (turn,) = fake.seen("/v1/responses")
    assert MARKER not in _bodies(fake.requests)  # no AGENTS.md, skills, developer instructions
    assert turn.body.get("tools") in (None, [])  # no exec_command, write_stdin, web search, MCP
    text = json.dumps(turn.body.get("input"), ensure_ascii=False)
    assert "Keep every answer under 300 characters." in text and "Summarize the PR." in text
    assert "<environment_context>" not in text and "AGENTS.md" not in text
    assert list(evidence.iterdir()) == []


def test_codex_replay_survives_a_dropped_stream(codex_setup):
    backend, fake, *_ = codex_setup
    fake.responder = lambda body: "after the reconnect"
    fake.push(Drop(after=3))
    completion = backend.complete(REQUEST)
    assert completion.ok, completion.error_message
    assert completion.text == "after the reconnect"
    assert len(fake.seen("/v1/responses")) == 2


def test_codex_stops_at_the_first_401(codex_setup):
    backend, fake, *_ = codex_setup
    fake.push(*[Fail(401, "invalid key")] * 20)
    completion = backend.complete(REQUEST)
    assert completion.error == "auth", completion.error_message
    assert len(fake.seen("/v1/responses")) < 6  # it would make six with its own retries


# -- controls: the same user context does reach a CLI run the ordinary way ------------------------


def test_control_plain_claude_print_carries_the_markers_and_runs_the_hooks(claude_setup):
    backend, fake, home, evidence, _ = claude_setup
    out = subprocess.run(
        [backend.command, "-p", "Summarize the PR.", "--output-format", "json"],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )
    assert out.returncode == 0, out.stderr
    assert MARKER in _bodies(fake.seen("/v1/messages"))
    assert any(p.name.startswith("hook-") for p in evidence.iterdir())


def test_control_plain_codex_exec_carries_the_markers_and_offers_tools(codex_setup):
    backend, fake, home, _, evidence, _ = codex_setup
    out = subprocess.run(
        [backend.command, "exec", "--ephemeral", "--skip-git-repo-check", "--json", "Summarize the PR."],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )
    assert out.returncode == 0, out.stderr
    (turn,) = fake.seen("/v1/responses")
    assert MARKER in _bodies([turn]) and turn.body.get("tools")
    assert (evidence / "mcp").exists()


# -- a reply cut off at the output-token limit ------------------------------------------------------
# claude -p asks for the model's own maximum, tries to continue a cut-off answer itself, then
# reports ``api_error: "max_output_tokens"``; codex fails the turn with "Incomplete response
# returned, reason: max_output_tokens". Either way: truncated, not an error to retry, not an answer.


def test_claude_reports_a_cut_off_reply_as_truncated(claude_setup):
    backend, fake, *_ = claude_setup
    fake.responder = lambda body: Reply("half an ans", cut_off=True)
    completion = backend.complete(REQUEST)
    assert completion.ok and completion.truncated and completion.text == "", completion.error_message
    client = Client(backend, retry=RetryPolicy(attempts=3, sleep=lambda s: None))
    calls_before = len(fake.seen("/v1/messages"))
    assert client.complete(REQUEST).truncated
    # one CLI run (its own continuation turns included): the CLI's cap cannot be raised
    assert client.stats.calls["attempt"] == 1 and client.stats.truncation_retries == 0
    assert len(fake.seen("/v1/messages")) > calls_before


def test_codex_reports_a_cut_off_reply_as_truncated(codex_setup):
    backend, fake, *_ = codex_setup
    fake.responder = lambda body: Reply("half an ans", cut_off=True)
    completion = backend.complete(REQUEST)
    assert completion.ok and completion.truncated and completion.text == "", completion.error_message
    assert len(fake.seen("/v1/responses")) == 1
