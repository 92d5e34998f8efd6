"""copilot-cli against a fake ``copilot`` on PATH that records argv, cwd, stdin, the environment and
its private COPILOT_HOME, and replies with the event stream the real CLI prints
(``--output-format json``) and a ``--usage-output-file`` report: the argv that turns off every tool,
a home holding only the login and the documents, the user's context variables dropped, parsing,
error classification, the fail-fast watch, timeout, truncation and a refreshed token kept. The real
CLI against a fake provider is in test_real_copilot_cli.py."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.copilot_cli import (
    EMPTY_INSTRUCTIONS,
    NO_TOOL,
    CopilotCliBackend,
    SERVER_FLAGS,
    build_argv,
    from_options,
    provider_from_env,
    read_usage,
    stop_on_fatal_error,
)
from skillopt_sleep.backend_spec import BackendSpecError
from skillopt_sleep.backends.registry import make_backend

REQ = Request(purpose="attempt", system="SKILL: be brief. — ✓", user="Summarize the PR.")

FAKE_COPILOT = r"""
import json, os, sys, time
mode = os.environ.get("FAKE_COPILOT_MODE", "ok")
argv = sys.argv[1:]
home = os.environ["COPILOT_HOME"]
server = "--headless" in argv
if mode == "crash":
    print("Error: unknown option '--bogus'", file=sys.stderr)
    sys.exit(2)
def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()
def write_frame(message):
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()
def read_frame():
    length = 0
    while True:
        line = sys.stdin.buffer.readline().strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(sys.stdin.buffer.read(length))
create, prompt = {}, None
if server:
    for reply in ({"ok": True, "protocolVersion": 3}, {"sessionId": "s1"}, {"messageId": "m1"}):
        request = read_frame()
        if request["method"] == "session.create":
            create = request["params"]
            if mode == "create_refused":
                error = {"code": -32603, "message": "Authentication failed: No GitHub OAuth token"}
                write_frame({"jsonrpc": "2.0", "id": request["id"], "error": error})
                time.sleep(60)
        if request["method"] == "session.send":
            prompt = request["params"]["prompt"]
        write_frame({"jsonrpc": "2.0", "id": request["id"], "result": reply})
else:
    prompt = sys.stdin.read()
record = {
    "argv": argv, "cwd": os.getcwd(), "cwd_files": sorted(os.listdir(os.getcwd())), "stdin": prompt,
    "env": dict(os.environ), "home_files": sorted(os.listdir(home)),
    "config": json.loads(read(os.path.join(home, "config.json"))), "create": create,
    "instructions": create["systemMessage"]["content"] if server else read(os.path.join(home, "copilot-instructions.md")),
}
with open(os.environ["FAKE_COPILOT_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(record) + "\n")
os.makedirs(os.path.join(home, "session-state", "s1"))
open(os.path.join(home, "session-state", "s1", "events.jsonl"), "w").write("{}\n")
open(os.path.join(os.environ["TMPDIR"], "probe"), "w").write("probe\n")
def emit(kind, data=None, **extra):
    event = {"type": kind, "data": data or {}, "id": "x", **extra}
    if server:
        write_frame({"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": "s1", "event": event}})
    else:
        print(json.dumps(event), flush=True)
def turn(text, n=0):
    emit("assistant.turn_start", {"turnId": str(n)})
    emit("assistant.message_delta", {"deltaContent": text}, ephemeral=True)
    if text is not None:
        emit("assistant.message", {"content": text, "model": "claude-sonnet-4.5", "toolRequests": []})
    emit("assistant.turn_end", {"turnId": str(n)})
def report(models):
    if server:
        for model, entry in models.items():
            emit("assistant.usage", {"model": model, **entry["usage"]}, ephemeral=True)
    else:
        usage = argv[argv.index("--usage-output-file") + 1]
        open(usage, "w").write(json.dumps({"currentModel": "claude-sonnet-4.5", "modelMetrics": models}))
def result(code):
    if server:  # the session goes idle; the server stays up until it is stopped
        emit("session.idle", {}, ephemeral=True)
        time.sleep(60)
    emit("result", exitCode=code)
    sys.exit(code)
emit("user.message", {"content": record["stdin"]})
if mode == "ok":
    emit("assistant.message", {"content": "sub-agent text", "parentToolCallId": "t1"}, agentId="a1")
    turn("short summary")
    report({
        "claude-sonnet-4.5": {"usage": {"inputTokens": 2100, "outputTokens": 40, "cacheReadTokens": 1000, "cacheWriteTokens": 1000}},
        "gpt-5-mini": {"usage": {"inputTokens": 10, "outputTokens": 2, "cacheReadTokens": 0, "cacheWriteTokens": 0}},
    })
    result(0)
if mode == "refresh":
    config = json.loads(read(os.path.join(home, "config.json")))
    config["copilotTokens"] = {"https://github.com:octo": "gho_new"}
    config["trustedFolders"] = ["/somewhere"]
    open(os.path.join(home, "config.json"), "w").write(json.dumps(config))
    turn("ok")
    result(0)
if mode == "cut":
    for n in range(3):
        turn(None if n < 2 else "half an ans", n)
    report({"m": {"usage": {"inputTokens": 30, "outputTokens": 9}}})
    result(0)
if mode in ("401", "429"):
    for attempt in range(6):
        emit("model.call_failure", {"statusCode": int(mode), "errorMessage": "scripted", "retryAttempt": attempt})
        time.sleep(20)
    result(1)
if mode == "500_then_ok":
    emit("model.call_failure", {"statusCode": 500, "errorMessage": "boom"})
    turn("after a retry")
    result(0)
if mode == "session_error":
    emit("session.error", {"errorType": "authentication", "message": "Authentication failed (HTTP 401).", "statusCode": 401})
    result(1)
if mode == "session_error_text":
    emit("session.error", {"errorType": "rate_limit", "message": "Failed to get response; rate limited"})
    result(1)
if mode == "login_text":
    turn("Error: not logged in. Please run /login")
    result(0)
if mode == "empty":
    turn("")
    result(0)
if mode == "hang":
    time.sleep(60)
"""


@pytest.fixture(params=["server", "prompt"])
def run_mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def fake_copilot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_mode: str) -> Path:
    """A fake ``copilot`` first on PATH, the test's own TMPDIR and a user COPILOT_HOME with the
    user's own context in it; returns the run log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "copilot"
    script.write_text(f"#!{sys.executable}\n{FAKE_COPILOT}", encoding="utf-8")
    script.chmod(0o755)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    user_home = tmp_path / "user-copilot-home"
    user_home.mkdir()
    (user_home / "copilot-instructions.md").write_text("MARKER user instructions", encoding="utf-8")
    (user_home / "mcp-config.json").write_text('{"mcpServers": {"marker": {"command": "x"}}}', encoding="utf-8")
    (user_home / "settings.json").write_text('{"model": "gpt-5", "disableAllHooks": false}', encoding="utf-8")
    monkeypatch.setenv("COPILOT_HOME", str(user_home))
    for name in ("COPILOT_PKG_CACHE_HOME", "COPILOT_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    (tmp_path / "user-cache" / "copilot" / "pkg").mkdir(parents=True)
    monkeypatch.setenv("PATH", bin_dir.as_posix() + os.pathsep + os.environ.get("PATH", ""))
    log = tmp_path / "runs.jsonl"
    monkeypatch.setenv("FAKE_COPILOT_LOG", str(log))
    monkeypatch.setenv("FAKE_COPILOT_MODE", "ok")
    monkeypatch.setattr(CopilotCliBackend, "__init__", _with_mode(run_mode))
    return log


def _with_mode(mode: str):
    """The backend's constructor with ``mode`` as its default, so every test runs both ways."""
    init = CopilotCliBackend.__init__

    def construct(self, *args, **kwargs):
        kwargs.setdefault("mode", mode)
        init(self, *args, **kwargs)

    return construct


def runs(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def user_home() -> Path:
    return Path(os.environ["COPILOT_HOME"])


def test_argv_turns_off_every_tool_and_reads_the_task_from_stdin():
    argv = build_argv("/run/usage.json", model="gpt-5", effort="low")
    assert argv[0] == "copilot" and "-p" not in argv and "--prompt" not in argv
    assert f"--available-tools={NO_TOOL}" in argv
    assert {"--disable-builtin-mcps", "--no-ask-user", "--no-auto-update", "--disable-client-telemetry"} <= set(argv)
    assert argv[argv.index("--output-format") + 1] == "json"
    assert argv[argv.index("--usage-output-file") + 1] == "/run/usage.json"
    assert argv[argv.index("--model") + 1] == "gpt-5"
    assert argv[argv.index("--reasoning-effort") + 1] == "low"
    assert not any(a.startswith(("--allow", "--yolo", "--add-dir", "--plugin-dir", "--agent")) for a in argv)
    assert "--model" not in build_argv("/u")


def test_answer_usage_and_model(fake_copilot):
    completion = CopilotCliBackend().complete(REQ)
    assert completion.ok, completion.error_message
    assert completion.text == "short summary"  # not the sub-agent's message
    assert completion.model == "claude-sonnet-4.5"
    # inputTokens include cache reads and writes; two models are summed
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (110, 42)
    assert (completion.usage.cache_read_tokens, completion.usage.cache_write_tokens) == (1000, 1000)


def test_home_is_private_and_holds_only_the_login_and_the_documents(fake_copilot, tmp_path, monkeypatch, run_mode):
    login = {
        "lastLoggedInUser": {"host": "https://github.com", "login": "octo"},
        "loggedInUsers": [{"host": "https://github.com", "login": "octo"}],
        "copilotTokens": {"https://github.com:octo": "gho_old"},
    }
    (user_home() / "config.json").write_text(
        json.dumps({**login, "trustedFolders": ["/work"], "staff": True}), encoding="utf-8"
    )
    monkeypatch.setenv("COPILOT_CUSTOM_INSTRUCTIONS_DIRS", "/marker/dir")
    monkeypatch.setenv("COPILOT_SKILLS_DIRS", "/marker/skills")
    monkeypatch.setenv("COPILOT_ALLOW_ALL", "true")
    monkeypatch.setenv("GH_TOKEN", "gho_env")
    monkeypatch.setenv("COPILOT_PROVIDER_BASE_URL", "http://127.0.0.1:9")
    before = sorted(p.name for p in user_home().iterdir())
    assert CopilotCliBackend().complete(REQ).ok
    (run,) = runs(fake_copilot)
    env = run["env"]
    private = Path(env["COPILOT_HOME"])
    assert private != user_home() and not private.exists()  # session state went with the sandbox
    assert run["home_files"] == (
        ["config.json"] if run_mode == "server" else ["config.json", "copilot-instructions.md"]
    )
    assert run["config"] == login
    assert run["instructions"] == REQ.system
    assert run["stdin"] == REQ.user and run["cwd_files"] == []
    for name in ("COPILOT_CUSTOM_INSTRUCTIONS_DIRS", "COPILOT_SKILLS_DIRS", "COPILOT_ALLOW_ALL"):
        assert name not in env
    assert env["GH_TOKEN"] == "gho_env" and env["COPILOT_PROVIDER_BASE_URL"] == "http://127.0.0.1:9"
    assert env["COPILOT_PKG_CACHE_HOME"] == str(tmp_path / "user-cache" / "copilot")
    assert Path(env["XDG_CACHE_HOME"]).parent == private.parent and env["COPILOT_AUTO_UPDATE"] == "false"
    assert sorted(p.name for p in user_home().iterdir()) == before
    assert list(Path(os.environ["TMPDIR"]).iterdir()) == []  # the sandbox and its probe are gone


def test_the_users_own_package_cache_setting_is_left_alone(fake_copilot, monkeypatch):
    monkeypatch.setenv("COPILOT_PKG_CACHE_HOME", "/opt/copilot-cache")
    assert CopilotCliBackend().complete(REQ).ok
    assert runs(fake_copilot)[0]["env"]["COPILOT_PKG_CACHE_HOME"] == "/opt/copilot-cache"


def test_an_empty_document_still_gives_fixed_instructions(fake_copilot):
    assert CopilotCliBackend().complete(Request(purpose="preflight", system=" ", user="hi")).ok
    assert runs(fake_copilot)[0]["instructions"] == EMPTY_INSTRUCTIONS


def test_a_token_refreshed_during_the_call_is_kept(fake_copilot, monkeypatch):
    config = {
        "lastLoggedInUser": {"host": "https://github.com", "login": "octo"},
        "copilotTokens": {"https://github.com:octo": "gho_old"},
        "trustedFolders": ["/work"],
    }
    header = "// This file is managed automatically.\n"
    (user_home() / "config.json").write_text(header + json.dumps(config), encoding="utf-8")
    monkeypatch.setenv("FAKE_COPILOT_MODE", "refresh")
    assert CopilotCliBackend().complete(REQ).ok
    text = (user_home() / "config.json").read_text(encoding="utf-8")
    assert text.startswith(header)
    kept = json.loads(text[len(header) :])
    assert kept == {**config, "copilotTokens": {"https://github.com:octo": "gho_new"}}  # trust untouched
    assert not [p for p in user_home().iterdir() if p.name.startswith(".config.json")]


def test_a_refresh_does_not_overwrite_a_login_the_user_changed_meanwhile(fake_copilot, monkeypatch):
    (user_home() / "config.json").write_text('{"copilotTokens": {"h:a": "old"}}', encoding="utf-8")
    monkeypatch.setenv("FAKE_COPILOT_MODE", "refresh")
    # the user's file changes while the CLI runs (after the private home was made)
    script = Path(os.environ["PATH"].split(os.pathsep)[0]) / "copilot"
    text = script.read_text(encoding="utf-8")
    script.write_text(
        text.replace(
            'if mode == "refresh":',
            'if mode == "refresh":\n'
            f'    open({str(user_home() / "config.json")!r}, "w").write(\'{{"copilotTokens": {{"h:b": "theirs"}}}}\')',
            1,
        ),
        encoding="utf-8",
    )
    assert CopilotCliBackend().complete(REQ).ok
    assert json.loads((user_home() / "config.json").read_text(encoding="utf-8")) == {"copilotTokens": {"h:b": "theirs"}}


def test_a_cut_off_answer_is_truncated_not_an_answer(fake_copilot, monkeypatch):
    monkeypatch.setenv("FAKE_COPILOT_MODE", "cut")
    completion = CopilotCliBackend().complete(REQ)
    assert completion.ok and completion.truncated and completion.text == ""
    assert completion.usage.output_tokens == 9


@pytest.mark.parametrize("mode,kind", [("401", "auth"), ("429", "rate_limit")])
def test_the_first_fatal_failure_stops_the_cli_retrying(fake_copilot, monkeypatch, mode, kind):
    monkeypatch.setenv("FAKE_COPILOT_MODE", mode)
    completion = CopilotCliBackend(timeout=60).complete(REQ)
    assert completion.error == kind, completion.error_message
    assert completion.latency < 10  # the fake would go on retrying for two minutes
    assert f"HTTP {mode}" in completion.error_message


def test_a_server_error_the_cli_retried_is_a_success(fake_copilot, monkeypatch):
    monkeypatch.setenv("FAKE_COPILOT_MODE", "500_then_ok")
    completion = CopilotCliBackend().complete(REQ)
    assert completion.ok and completion.text == "after a retry"


def test_watch_ignores_everything_but_model_call_failures():
    assert stop_on_fatal_error('{"type":"model.call_failure","data":{"statusCode":401}}')[0] == "auth"
    assert stop_on_fatal_error('{"type":"model.call_failure","data":{"statusCode":400}}')[0] == "bad_request"
    assert stop_on_fatal_error('{"type":"model.call_failure","data":{"statusCode":503}}') is None
    assert stop_on_fatal_error('{"type":"session.info","data":{"statusCode":401}}') is None
    assert stop_on_fatal_error("not json 401") is None


@pytest.mark.parametrize(
    "mode,kind",
    [
        ("session_error", "auth"),
        ("session_error_text", "rate_limit"),
        ("login_text", "auth"),
        ("empty", "empty"),
        ("crash", "bad_request"),
    ],
)
def test_failures_are_classified(fake_copilot, monkeypatch, mode, kind):
    monkeypatch.setenv("FAKE_COPILOT_MODE", mode)
    completion = CopilotCliBackend().complete(REQ)
    assert not completion.ok and completion.text == ""
    assert completion.error == kind, completion.error_message


def test_timeout(fake_copilot, monkeypatch):
    monkeypatch.setenv("FAKE_COPILOT_MODE", "hang")
    completion = CopilotCliBackend(timeout=2).complete(REQ)
    assert completion.error == "timeout"
    assert list(Path(os.environ["TMPDIR"]).iterdir()) == []


def test_missing_binary_is_unavailable(fake_copilot):
    completion = CopilotCliBackend(command="/nonexistent/copilot").complete(REQ)
    assert completion.error == "unavailable"


def test_read_usage_tolerates_a_missing_or_odd_report(tmp_path):
    assert read_usage(tmp_path / "none.json")[0].output_tokens == 0
    (tmp_path / "u.json").write_text('{"modelMetrics": {"m": {"usage": {"inputTokens": true}}}}', encoding="utf-8")
    usage, model = read_usage(tmp_path / "u.json")
    assert usage.input_tokens == 0 and model == ""


def test_options_and_spec():
    backend = from_options({"model": "gpt-5", "timeout": 30, "reasoning_effort": "none", "command": "/x/copilot"}, None)
    assert (backend.model, backend.timeout, backend.reasoning_effort, backend.command) == (
        "gpt-5",
        30.0,
        "none",
        "/x/copilot",
    )
    assert backend.id == "copilot-cli:gpt-5" and not backend.offline
    assert make_backend("copilot-cli:model=claude-sonnet-4.5").id == "copilot-cli:claude-sonnet-4.5"


def test_server_argv_and_session_replace_the_system_prompt_and_offer_no_tool(fake_copilot, monkeypatch):
    monkeypatch.setenv("COPILOT_MODEL", "claude-sonnet-4.5")
    monkeypatch.setenv("COPILOT_PROVIDER_TYPE", "anthropic")
    monkeypatch.setenv("COPILOT_PROVIDER_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("COPILOT_PROVIDER_API_KEY", "sk-x")
    monkeypatch.setenv("COPILOT_PROVIDER_MAX_OUTPUT_TOKENS", "4096")
    monkeypatch.setenv("COPILOT_PROVIDER_HEADERS", "X-Gateway: a\\nX-Tenant: b")
    assert CopilotCliBackend(mode="server", reasoning_effort="low").complete(REQ).ok
    (run,) = runs(fake_copilot)
    assert run["argv"] == SERVER_FLAGS
    assert run["create"] == {
        "systemMessage": {"mode": "replace", "content": REQ.system},
        "availableTools": [],
        "workingDirectory": run["cwd"],
        "model": "claude-sonnet-4.5",
        "reasoningEffort": "low",
        "provider": {
            "type": "anthropic",
            "baseUrl": "http://127.0.0.1:9",
            "apiKey": "sk-x",
            "maxOutputTokens": 4096,
            "headers": {"X-Gateway": "a", "X-Tenant": "b"},
        },
    }
    assert run["stdin"] == REQ.user


def test_provider_only_for_byok():
    assert provider_from_env({"GH_TOKEN": "gho_x"}) is None
    assert provider_from_env({"COPILOT_PROVIDER_BASE_URL": "http://h", "COPILOT_PROVIDER_AZURE_API_VERSION": "v"}) == {
        "baseUrl": "http://h",
        "azure": {"apiVersion": "v"},
    }


def test_an_unknown_mode_is_refused():
    with pytest.raises(BackendSpecError, match="mode must be one of"):
        make_backend("copilot-cli:mode=tui")


def test_a_session_the_server_refuses_is_classified(fake_copilot, monkeypatch):
    monkeypatch.setenv("FAKE_COPILOT_MODE", "create_refused")
    completion = CopilotCliBackend(mode="server", timeout=30).complete(REQ)
    assert completion.error == "auth" and "No GitHub OAuth token" in completion.error_message
    assert completion.latency < 10
