"""pi-cli against a fake ``pi`` on PATH that records argv, cwd, stdin, the environment and the
private agent dir it was given, and answers with Pi's JSON event stream: the argv that turns off
every tool and all discovery, a private agent dir holding only what login needs (a login refreshed
during the call is kept), usage, a cut-off answer, the error kinds and a timeout. The real CLI
against a fake provider is in test_real_pi_cli.py."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from skillopt_sleep.backend_spec import parse_spec
from skillopt_sleep.backends.base import ProviderError, Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.pi_cli import (
    EMPTY_INSTRUCTIONS,
    REPLAY_SETTINGS,
    PiCliBackend,
    build_argv,
    failure_kind,
    from_options,
    login_expiring,
    login_settings,
)
from skillopt_sleep.backends.registry import make_backend

REQ = Request(purpose="attempt", system="SKILL: be brief. ✓", user="Summarize the PR.")

FAKE_PI = r"""
import json, os, sys, tempfile, time
mode = os.environ.get("FAKE_PI_MODE", "ok")
argv = sys.argv[1:]
stdin = sys.stdin.read()
agent = os.environ.get("PI_CODING_AGENT_DIR")
def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None
record = {
    "argv": argv, "cwd": os.getcwd(), "cwd_files": sorted(os.listdir(os.getcwd())), "stdin": stdin,
    "env": {k: os.environ.get(k) for k in ("PI_CODING_AGENT_DIR", "PI_OFFLINE", "PI_TELEMETRY",
                                           "PI_SKIP_VERSION_CHECK", "TMPDIR")},
    "system_prompt": read(argv[argv.index("--system-prompt") + 1]) if "--system-prompt" in argv else None,
    "agent_files": sorted(os.listdir(agent)) if agent and os.path.isdir(agent) else None,
    "agent_modes": {n: oct(os.stat(os.path.join(agent, n)).st_mode & 0o777) for n in os.listdir(agent)}
        if agent and os.path.isdir(agent) else None,
    "settings": read(os.path.join(agent, "settings.json")) if agent else None,
    "models": read(os.path.join(agent, "models.json")) if agent else None,
    "auth": read(os.path.join(agent, "auth.json")) if agent else None,
}
with open(os.environ["FAKE_PI_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(record) + "\n")
with open(os.path.join(tempfile.gettempdir(), "pi-probe-" + str(os.getpid())), "w") as probe:
    probe.write("probe\n")
def event(obj):
    print(json.dumps(obj, separators=(",", ":")), flush=True)
def assistant(text, stop="stop", error=None, usage=None):
    message = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}] +
               ([{"type": "text", "text": text}] if text else []),
               "api": "anthropic-messages", "provider": "fake", "model": "claude-fake",
               "usage": usage or {"input": 11, "output": 7, "cacheRead": 40, "cacheWrite": 3, "totalTokens": 61},
               "stopReason": stop}
    if error:
        message["errorMessage"] = error
    return message
event({"type": "session", "version": 3, "id": "x", "timestamp": "t", "cwd": os.getcwd()})
event({"type": "agent_start"})
if mode == "hang":
    time.sleep(60)
if mode == "no_login":
    sys.stderr.write("No API key found for anthropic.\n\nUse /login to log into a provider via OAuth or API key.\n")
    sys.exit(1)
if mode == "unknown_model":
    sys.stderr.write('Error: Model "nope" not found. Use --list-models to see available models.\n')
    sys.exit(1)
if mode == "refresh":
    with open(os.path.join(agent, "auth.json"), "w") as f:
        f.write('{"anthropic": {"type": "oauth", "access": "new"}}')
if mode == "refresh_if_expired":  # as Pi does: refresh an expired OAuth login, then answer
    auth = json.loads(read(os.path.join(agent, "auth.json")))
    if auth["anthropic"]["expires"] <= time.time() * 1000:
        time.sleep(1)
        with open(os.environ["FAKE_PI_REFRESHES"], "a") as f:
            f.write(auth["anthropic"]["refresh"] + "\n")
        auth["anthropic"] = {"type": "oauth", "access": "new", "refresh": "rt-new", "expires": time.time() * 1000 + 8 * 3600e3}
        with open(os.path.join(agent, "auth.json"), "w") as f:
            f.write(json.dumps(auth))
answer = "fake pi answer: " + stdin.strip()[:40]
if mode == "streamed":
    for i in range(1, 2001):
        partial = assistant(answer[: i % len(answer)] + "x" * i)
        event({"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "delta": "x",
               "partial": partial}, "message": partial})
if mode in ("ok", "refresh", "refresh_if_expired", "streamed"):
    message = assistant(answer)
elif mode == "cut":
    message = assistant("half an ans", stop="length")
elif mode == "empty":
    message = assistant("")
elif mode.startswith("status_"):
    status = mode[len("status_"):]
    message = assistant("", stop="error", error=status + ' {"type":"error","error":{"message":"scripted"}}',
                        usage={"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0})
elif mode == "aborted":
    message = assistant("", stop="aborted", error="Request was aborted")
event({"type": "message_end", "message": {"role": "user", "content": [{"type": "text", "text": stdin}]}})
event({"type": "message_end", "message": message})
event({"type": "agent_end", "messages": [message]})
"""


@pytest.fixture
def fake_pi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A fake ``pi`` first on PATH, the test's own TMPDIR and a user agent dir; returns the run log
    and the user's agent dir."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "pi"
    script.write_text(f"#!{sys.executable}\n{FAKE_PI}", encoding="utf-8")
    script.chmod(0o755)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    user_dir = tmp_path / "user-pi-agent"
    user_dir.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(user_dir))
    monkeypatch.setenv("PATH", bin_dir.as_posix() + os.pathsep + os.environ.get("PATH", ""))
    log = tmp_path / "pi-runs.jsonl"
    monkeypatch.setenv("FAKE_PI_LOG", str(log))
    monkeypatch.setenv("FAKE_PI_MODE", "ok")
    return log, user_dir


def runs(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []


def test_argv_turns_off_every_tool_discovery_and_the_session_file():
    argv = build_argv("/run/system.md", model="fake/claude-x")
    assert argv[:4] == ["pi", "-p", "--mode", "json"]
    for flag in (
        "--no-session",
        "--no-tools",
        "--no-extensions",
        "--no-skills",
        "--no-prompt-templates",
        "--no-themes",
        "--no-context-files",
    ):
        assert flag in argv, flag
    assert argv[argv.index("--system-prompt") + 1] == "/run/system.md"
    assert argv[argv.index("--model") + 1] == "fake/claude-x"
    assert "--model" not in build_argv("/run/system.md")
    assert "--append-system-prompt" not in argv and "--tools" not in argv


def test_the_call_gets_the_documents_the_task_and_a_private_agent_dir(fake_pi, tmp_path):
    log, user_dir = fake_pi
    (user_dir / "auth.json").write_text('{"anthropic": {"type": "api_key", "key": "sk-1"}}', encoding="utf-8")
    models = '{"providers": {"corp": {"baseUrl": "http://127.0.0.1:9", "api": "anthropic-messages"}}}'
    (user_dir / "models.json").write_text(models, encoding="utf-8")
    user_settings = {
        "defaultProvider": "corp",
        "defaultModel": "claude-x",
        "defaultThinkingLevel": "low",
        "packages": ["npm:MARKER-package"],
        "extensions": ["/MARKER/extension.ts"],
        "skills": ["/MARKER/skills"],
        "sessionDir": "/MARKER/sessions",
        "retry": {"enabled": True, "maxRetries": 9},
    }
    (user_dir / "settings.json").write_text(json.dumps(user_settings), encoding="utf-8")
    for name in ("AGENTS.md", "SYSTEM.md", "APPEND_SYSTEM.md"):
        (user_dir / name).write_text("MARKER " + name, encoding="utf-8")
    for name in ("extensions", "skills", "prompts", "sessions", "themes"):
        (user_dir / name).mkdir()

    completion = PiCliBackend().complete(REQ)
    assert completion.ok, completion.error_message
    (run,) = runs(log)
    assert run["system_prompt"] == REQ.system and run["stdin"] == REQ.user
    assert run["cwd_files"] == [] and not Path(run["cwd"]).exists()
    private = Path(run["env"]["PI_CODING_AGENT_DIR"])
    assert private != user_dir and not private.exists()
    assert run["env"]["PI_OFFLINE"] == "1" and run["env"]["PI_TELEMETRY"] == "0"
    assert run["env"]["PI_SKIP_VERSION_CHECK"] == "1"
    assert run["agent_files"] == ["auth.json", "models.json", "settings.json"]
    assert set(run["agent_modes"].values()) == {"0o600"}
    assert run["models"] == models and json.loads(run["auth"])["anthropic"]["key"] == "sk-1"
    assert json.loads(run["settings"]) == {
        "defaultProvider": "corp",
        "defaultModel": "claude-x",
        "defaultThinkingLevel": "low",
        **REPLAY_SETTINGS,
    }
    assert "MARKER" not in json.dumps(run)
    assert list((tmp_path / "tmp").iterdir()) == []  # the sandbox and the CLI's probe are gone
    assert (user_dir / "settings.json").read_text(encoding="utf-8") == json.dumps(user_settings)


def test_without_a_login_the_agent_dir_holds_only_the_replay_settings(fake_pi):
    log, _ = fake_pi
    assert PiCliBackend().complete(REQ).ok
    (run,) = runs(log)
    assert run["agent_files"] == ["settings.json"]
    assert json.loads(run["settings"]) == REPLAY_SETTINGS


def test_an_empty_system_prompt_gets_fixed_instructions(fake_pi):
    log, _ = fake_pi
    assert PiCliBackend().complete(Request(purpose="preflight", system=" \n", user="hi")).ok
    assert runs(log)[0]["system_prompt"] == EMPTY_INSTRUCTIONS


def test_login_settings_ignores_what_it_cannot_read(tmp_path):
    assert login_settings(tmp_path) == {}
    (tmp_path / "settings.json").write_text("{not json", encoding="utf-8")
    assert login_settings(tmp_path) == {}
    (tmp_path / "settings.json").write_text("[1]", encoding="utf-8")
    assert login_settings(tmp_path) == {}
    (tmp_path / "settings.json").write_text('{"defaultModel": "m", "theme": "dark"}', encoding="utf-8")
    assert login_settings(tmp_path) == {"defaultModel": "m"}


def test_answer_usage_and_model(fake_pi):
    completion = PiCliBackend(model="fake/claude-fake").complete(REQ)
    assert completion.text == "fake pi answer: Summarize the PR."  # the thinking block left out
    assert completion.model == "claude-fake"
    usage = completion.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        11,
        7,
        40,
        3,
    )
    assert completion.cost_usd is None  # Pi's cost is its own estimate, not a bill


def test_streamed_updates_are_not_needed(fake_pi, monkeypatch):
    """Each streamed event repeats the whole message so far; the answer comes from message_end."""
    monkeypatch.setenv("FAKE_PI_MODE", "streamed")
    completion = PiCliBackend().complete(REQ)
    assert completion.ok and completion.text == "fake pi answer: Summarize the PR."


def test_a_cut_off_answer_is_truncated(fake_pi, monkeypatch):
    monkeypatch.setenv("FAKE_PI_MODE", "cut")
    completion = PiCliBackend().complete(REQ)
    assert completion.ok and completion.truncated and completion.text == ""
    assert completion.usage.output_tokens == 7


@pytest.mark.parametrize(
    "mode,kind",
    [
        ("status_401", "auth"),
        ("status_403", "auth"),
        ("status_429", "rate_limit"),
        ("status_404", "model"),
        ("status_400", "bad_request"),
        ("status_500", "server"),
        ("status_529", "overloaded"),
        ("no_login", "auth"),
        ("unknown_model", "model"),
        ("empty", "empty"),
        ("aborted", "server"),
    ],
)
def test_error_kinds(fake_pi, monkeypatch, mode, kind):
    monkeypatch.setenv("FAKE_PI_MODE", mode)
    completion = PiCliBackend().complete(REQ)
    assert completion.error == kind, completion.error_message
    assert completion.text == "" and completion.error_message.startswith("pi")


@pytest.mark.parametrize("mode", ["status_401", "no_login", "status_400"])
def test_a_fatal_error_is_not_retried(fake_pi, monkeypatch, retry, sleep, mode):
    monkeypatch.setenv("FAKE_PI_MODE", mode)
    with pytest.raises(ProviderError):
        Client(PiCliBackend(), retry=retry).complete(REQ)
    assert len(runs(fake_pi[0])) == 1 and sleep.calls == []


def test_failure_kind_reads_the_status_first():
    assert failure_kind('429 {"error": "unauthorized"}') == "rate_limit"
    assert failure_kind("No API key found for openai.") == "auth"
    assert failure_kind("fetch failed: connection refused") == "server"


def test_a_call_that_does_not_answer_times_out(fake_pi, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_PI_MODE", "hang")
    completion = PiCliBackend(timeout=1).complete(REQ)
    assert completion.error == "timeout", completion.error_message
    assert completion.latency < 30
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_login_refreshed_during_the_call_is_kept(fake_pi, monkeypatch):
    log, user_dir = fake_pi
    (user_dir / "auth.json").write_text('{"anthropic": {"type": "oauth", "access": "old"}}', encoding="utf-8")
    (user_dir / "auth.json").chmod(0o600)
    monkeypatch.setenv("FAKE_PI_MODE", "refresh")
    assert PiCliBackend().complete(REQ).ok
    assert json.loads((user_dir / "auth.json").read_text(encoding="utf-8"))["anthropic"]["access"] == "new"
    assert (user_dir / "auth.json").stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in user_dir.iterdir()) == ["auth.json"]


def test_a_refresh_does_not_overwrite_a_login_the_user_changed_meanwhile(fake_pi, monkeypatch):
    log, user_dir = fake_pi
    (user_dir / "auth.json").write_text('{"anthropic": {"access": "old"}}', encoding="utf-8")
    script = Path(os.environ["PATH"].split(os.pathsep)[0]) / "pi"
    text = script.read_text(encoding="utf-8")
    user_write = f'open({str(user_dir / "auth.json")!r}, \'w\').write(\'{{"anthropic": {{"access": "theirs"}}}}\')\n'
    script.write_text(text.replace('answer = "fake pi answer', user_write + 'answer = "fake pi answer', 1))
    monkeypatch.setenv("FAKE_PI_MODE", "refresh")
    assert PiCliBackend().complete(REQ).ok
    assert json.loads((user_dir / "auth.json").read_text(encoding="utf-8"))["anthropic"]["access"] == "theirs"


def test_concurrent_calls_refresh_an_expired_login_once(fake_pi, monkeypatch, tmp_path):
    """An OAuth refresh replaces the refresh token: a second call refreshing with the old one
    would fail, so the calls wait for the first one's refreshed login."""
    _, user_dir = fake_pi
    expired = {"type": "oauth", "access": "old", "refresh": "rt-old", "expires": time.time() * 1000 - 1}
    (user_dir / "auth.json").write_text(json.dumps({"anthropic": expired}), encoding="utf-8")
    refreshes = tmp_path / "refreshes"
    monkeypatch.setenv("FAKE_PI_REFRESHES", str(refreshes))
    monkeypatch.setenv("FAKE_PI_MODE", "refresh_if_expired")
    backend = PiCliBackend()
    results: list = [None] * 3

    def call(index: int) -> None:
        results[index] = backend.complete(REQ)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(r is not None and r.ok for r in results), results
    assert refreshes.read_text(encoding="utf-8").split() == ["rt-old"]
    assert json.loads((user_dir / "auth.json").read_text(encoding="utf-8"))["anthropic"]["refresh"] == "rt-new"


def test_login_expiring(tmp_path):
    now = time.time() * 1000

    def auth(**creds: dict) -> None:
        (tmp_path / "auth.json").write_text(json.dumps(creds), encoding="utf-8")

    assert not login_expiring(tmp_path)  # no auth.json
    auth(anthropic={"type": "api_key", "key": "k"})
    assert not login_expiring(tmp_path)
    auth(anthropic={"type": "oauth", "expires": now + 3600e3})
    assert not login_expiring(tmp_path)
    auth(anthropic={"type": "oauth", "expires": now + 60e3}, openai={"type": "api_key"})
    assert login_expiring(tmp_path)  # within the margin
    auth(anthropic={"type": "oauth", "expires": now - 1})
    assert login_expiring(tmp_path)
    (tmp_path / "auth.json").write_text("[]", encoding="utf-8")
    assert not login_expiring(tmp_path)


def test_an_unchanged_login_is_not_written_back(fake_pi):
    _, user_dir = fake_pi
    (user_dir / "auth.json").write_text("{}", encoding="utf-8")
    before = (user_dir / "auth.json").stat().st_mtime_ns
    assert PiCliBackend().complete(REQ).ok
    assert (user_dir / "auth.json").stat().st_mtime_ns == before


def test_a_missing_binary_is_unavailable(tmp_path):
    completion = PiCliBackend(command=str(tmp_path / "no-pi")).complete(REQ)
    assert completion.error == "unavailable"


def test_spec_and_options():
    name, options = parse_spec("pi-cli:model=anthropic/claude-sonnet-4-5,timeout=30")
    assert name == "pi-cli"
    backend = from_options(options, None)
    assert backend.model == "anthropic/claude-sonnet-4-5" and backend.timeout == 30.0
    assert backend.id == "pi-cli:anthropic/claude-sonnet-4-5" and backend.command == "pi"
    assert from_options({"command": "/opt/pi"}, "m").command == "/opt/pi"
    assert isinstance(make_backend("pi-cli:model=x"), PiCliBackend)
