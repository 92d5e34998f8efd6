"""opencode-cli against a fake ``opencode`` on PATH that records argv, cwd, stdin, the environment,
the private config it was given (and the agent prompt file it names) and the files of its private
HOME, then answers with ``--format json`` events as the real CLI 1.18 does: the isolation, the
login copied in (and a refreshed one copied back), usage, truncation, error events, a retry seen
only in the log, a timeout, an empty answer. The real CLI against a fake provider is in
test_real_opencode_cli.py."""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from skillopt_sleep.backend_spec import BACKEND_MODULES
from skillopt_sleep.backends.base import ProviderError, Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.opencode_cli import (
    AGENT,
    EMPTY_INSTRUCTIONS,
    ISOLATION_CONFIG,
    OpenCodeCliBackend,
    build_argv,
    from_options,
    login_config,
    strip_jsonc,
)
from skillopt_sleep.backends.registry import cli_command, make_backend

REQ = Request(purpose="attempt", system="SKILL: be brief. Ünï ✓", user='Summarize the PR.\nWith "quotes".')

FAKE_OPENCODE = r"""
import json, os, re, sys, time
mode = os.environ.get("FAKE_CLI_MODE", "ok")
stdin = sys.stdin.read()
config_home = os.environ["XDG_CONFIG_HOME"]
data_home = os.environ["XDG_DATA_HOME"]
config = json.load(open(os.path.join(config_home, "opencode", "opencode.json")))
prompt = config["agent"][config["default_agent"]]["prompt"]
prompt_file = re.fullmatch(r"\{file:(.*)\}", prompt).group(1)
home = os.environ["HOME"]
record = {
    "argv": sys.argv, "cwd": os.getcwd(), "stdin": stdin, "config": config,
    "system_prompt": open(prompt_file, encoding="utf-8").read(),
    "env": {k: v for k, v in os.environ.items()
            if k.startswith(("OPENCODE", "XDG_")) or k in ("HOME", "PWD", "TMPDIR")},
    "home_files": sorted(os.path.relpath(os.path.join(d, f), home)
                         for d, _, files in os.walk(home) for f in files),
}
with open(os.environ["FAKE_CLI_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(record) + "\n")
os.makedirs(os.path.join(data_home, "opencode"), exist_ok=True)
open(os.path.join(data_home, "opencode", "opencode.db"), "w").write("sessions")
open(os.path.join(os.environ["TMPDIR"], "probe.so"), "w").write("probe")
def event(kind, **fields):
    print(json.dumps({"type": kind, "timestamp": 1, "sessionID": "ses_1", **fields}), flush=True)
def finish(reason, tokens):
    event("step_finish", part={"type": "step-finish", "reason": reason, "tokens": tokens, "cost": 0})
TOKENS = {"total": 90, "input": 40, "output": 7, "reasoning": 3, "cache": {"write": 5, "read": 30}}
def stream_error(message):
    sys.stderr.write('timestamp=2026-01-01T00:00:00.000Z level=ERROR run=1 message="stream error" '
                     'providerID=p modelID=m error.error="AI_APICallError: ' + message + '"\n')
    sys.stderr.flush()
if mode == "oauth_refresh":  # as OpenCode's ChatGPT login: refresh an expired token, once
    auth_file = os.path.join(data_home, "opencode", "auth.json")
    auth = json.load(open(auth_file))
    with open(os.environ["FAKE_CLI_LOG"] + ".auth", "a") as seen:
        seen.write(auth["openai"]["refresh"] + "\n")
    if auth["openai"]["expires"] < time.time() * 1000:
        time.sleep(1)
        auth["openai"] = {"type": "oauth", "refresh": "r2", "access": "a2", "expires": (time.time() + 3600) * 1000}
        open(auth_file, "w").write(json.dumps(auth))
    mode = "ok"
if mode in ("ok", "refresh"):
    if mode == "refresh":
        open(os.path.join(data_home, "opencode", "auth.json"), "w").write('{"openai": "new"}')
    event("step_start", part={"type": "step-start"})
    event("text", part={"type": "text", "text": "fake opencode answer: " + stdin.splitlines()[0]})
    finish("stop", TOKENS)
elif mode == "cut":
    event("text", part={"type": "text", "text": "half an ans"})
    finish("length", TOKENS)
elif mode == "empty":
    finish("stop", {"input": 40, "output": 0, "reasoning": 0, "cache": {"write": 0, "read": 0}})
elif mode == "status_401":
    stream_error("Incorrect API key provided")
    event("error", error={"name": "APIError", "data": {"message": "Incorrect API key provided",
                                                        "statusCode": 401, "isRetryable": False}})
    sys.exit(1)
elif mode == "retrying":  # a 429 the CLI would retry for as long as the provider asks
    stream_error("Rate limit reached for requests")
    time.sleep(60)
    sys.exit(1)
elif mode == "auth_in_log_only":  # a loaded machine: the event would come after the grace
    stream_error("Incorrect API key provided: sk-fake****")
    time.sleep(60)
elif mode == "hang":
    time.sleep(60)
elif mode == "model_missing":  # the event says little; the log names the cause by the same ref
    sys.stderr.write('timestamp=2026-01-01T00:00:00.000Z level=ERROR run=1 message=failed ref=err_1 '
                     'error="ProviderModelNotFoundError: Model not found: fake/nope." cause="at …"\n')
    event("error", error={"name": "UnknownError",
                          "data": {"message": "Unexpected server error. Check server logs for details.",
                                   "ref": "err_1"}})
    sys.exit(1)
elif mode == "fail":
    sys.stderr.write("Error: something broke inside opencode\n")
    sys.exit(1)
"""


def runs(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture
def user_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A person's HOME and XDG dirs (empty) and a fake ``opencode`` first on PATH."""
    home = tmp_path / "person"
    dirs = {
        "home": home,
        "config": home / ".config" / "opencode",
        "data": home / ".local" / "share" / "opencode",
        "cache": home / ".cache" / "opencode",
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    for name, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"), ("XDG_CACHE_HOME", ".cache")):
        monkeypatch.setenv(name, str(home / sub))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "opencode"
    fake.write_text(f"#!{sys.executable}\n{FAKE_OPENCODE}", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_CLI_LOG", str(tmp_path / "cli-runs.jsonl"))
    monkeypatch.setenv("FAKE_CLI_MODE", "ok")
    dirs["log"] = tmp_path / "cli-runs.jsonl"
    return dirs


def test_argv_runs_the_replay_agent_headless_with_json_events():
    argv = build_argv(model="anthropic/claude-sonnet-4-5")
    assert argv[:4] == ["opencode", "run", "--format", "json"]
    assert argv[argv.index("--agent") + 1] == AGENT
    assert argv[argv.index("--title") + 1]  # a title of its own: no title-generation call
    assert "--pure" in argv and "--print-logs" in argv  # no external plugins; retries show in the log
    assert argv[argv.index("--model") + 1] == "anthropic/claude-sonnet-4-5"
    assert "--model" not in build_argv()
    assert not any("Summarize" in arg for arg in argv)  # the task goes on stdin


def test_the_documents_are_the_agent_prompt_and_the_task_goes_on_stdin(user_dirs):
    completion = OpenCodeCliBackend().complete(REQ)
    assert completion.ok, completion.error_message
    (run,) = runs(user_dirs["log"])
    assert run["system_prompt"] == REQ.system and run["stdin"] == REQ.user
    agent = run["config"]["agent"][AGENT]
    assert run["config"]["default_agent"] == AGENT and agent["mode"] == "primary"
    assert agent["tools"] == {"*": False} and agent["permission"] == {"*": "deny"}
    for key, value in ISOLATION_CONFIG.items():
        assert run["config"][key] == value
    assert run["config"]["instructions"] == [] and run["config"]["mcp"] == {} and run["config"]["plugin"] == []


def test_an_empty_system_prompt_gets_fixed_instructions(user_dirs):
    assert OpenCodeCliBackend().complete(Request(purpose="preflight", system=" ", user="hi")).ok
    assert runs(user_dirs["log"])[0]["system_prompt"] == EMPTY_INSTRUCTIONS


def test_private_home_holds_only_what_login_needs(user_dirs, monkeypatch):
    person = user_dirs["home"]
    (user_dirs["data"] / "auth.json").write_text('{"anthropic": {"type": "api", "key": "sk-1"}}', encoding="utf-8")
    (user_dirs["cache"] / "models.json").write_text('{"anthropic": {}}', encoding="utf-8")
    (user_dirs["config"] / "AGENTS.md").write_text("MARKER global agents", encoding="utf-8")
    (person / ".claude").mkdir()
    (person / ".claude" / "CLAUDE.md").write_text("MARKER claude md", encoding="utf-8")
    (user_dirs["config"] / "opencode.jsonc").write_text(
        """{
          // the person's own settings
          "model": "corp/big", /* which model */
          "instructions": ["MARKER.md"],
          "mcp": {"marker": {"type": "local", "command": ["marker-mcp"]}},
          "plugin": ["marker-plugin"],
          "agent": {"build": {"prompt": "MARKER agent"}},
          "provider": {"corp": {"npm": "@ai-sdk/openai-compatible",
                                "options": {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "{file:~/.corp-key}"},
                                "models": {"big": {"name": "Big // not a comment"}},},},
          "enabled_providers": ["corp"],
        }""",
        encoding="utf-8",
    )
    for name in ("OPENCODE_CONFIG_DIR", "OPENCODE_DB", "OPENCODE_PERMISSION", "OPENCODE_MODELS_PATH"):
        monkeypatch.setenv(name, str(person / "MARKER"))
    monkeypatch.setenv("OPENCODE_API_KEY", "zen-key")

    assert OpenCodeCliBackend().complete(REQ).ok
    (run,) = runs(user_dirs["log"])
    env = run["env"]
    private = Path(env["HOME"])
    assert private != person and not private.exists()  # removed with the sandbox
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        assert Path(env[name]).is_relative_to(private)
    assert env["PWD"] == run["cwd"] and Path(run["cwd"]).parent == private.parent
    assert env["XDG_RUNTIME_DIR"] == env["TMPDIR"] and Path(env["TMPDIR"]).parent == private.parent
    assert run["home_files"] == [
        ".cache/opencode/models.json",
        ".config/opencode/opencode.json",
        ".config/opencode/package-lock.json",  # the plugin package marked installed: no npm fetch
        ".config/opencode/package.json",
        ".local/share/opencode/auth.json",
    ]
    config = run["config"]
    assert config["model"] == "corp/big" and config["enabled_providers"] == ["corp"]
    corp = config["provider"]["corp"]
    assert corp["options"]["apiKey"] == "{file:" + str(person / ".corp-key") + "}"
    assert corp["models"]["big"]["name"] == "Big // not a comment"
    assert "MARKER" not in json.dumps(config)
    assert env["OPENCODE_API_KEY"] == "zen-key"
    assert not {"OPENCODE_CONFIG_DIR", "OPENCODE_DB", "OPENCODE_PERMISSION", "OPENCODE_MODELS_PATH"} & env.keys()
    for name in ("OPENCODE_DISABLE_PROJECT_CONFIG", "OPENCODE_DISABLE_CLAUDE_CODE", "OPENCODE_DISABLE_MODELS_FETCH"):
        assert env[name] == "1"
    assert sorted(p.name for p in user_dirs["data"].iterdir()) == ["auth.json"]  # no session database


def test_login_config_reads_jsonc_and_the_config_env(tmp_path, monkeypatch):
    (tmp_path / "config.json").write_text('{"model": "a/one", "theme": "x"}', encoding="utf-8")
    (tmp_path / "opencode.json").write_text('{"small_model": "a/two", "disabled_providers": ["b"]}', encoding="utf-8")
    monkeypatch.delenv("OPENCODE_CONFIG", raising=False)
    monkeypatch.setenv("OPENCODE_CONFIG_CONTENT", '{"model": "c/three", "mcp": {}}')
    assert login_config(tmp_path) == {"model": "c/three", "disabled_providers": ["b"]}
    (tmp_path / "opencode.jsonc").write_text("{ not json", encoding="utf-8")
    monkeypatch.delenv("OPENCODE_CONFIG_CONTENT")
    assert login_config(tmp_path) == {"model": "a/one", "disabled_providers": ["b"]}
    assert json.loads(strip_jsonc('{"a": "x//y", /* c */ "b": [1, 2,], // d\n}')) == {"a": "x//y", "b": [1, 2]}


def test_answer_and_usage_from_the_events(user_dirs):
    completion = OpenCodeCliBackend(model="corp/big").complete(REQ)
    assert completion.text == "fake opencode answer: Summarize the PR."
    assert completion.model == "corp/big"
    usage = completion.usage
    assert (usage.input_tokens, usage.output_tokens) == (40, 10)  # output + reasoning
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (30, 5)


def test_a_step_cut_off_at_the_length_limit_is_truncated(user_dirs, monkeypatch):
    monkeypatch.setenv("FAKE_CLI_MODE", "cut")
    completion = OpenCodeCliBackend().complete(REQ)
    assert completion.ok and completion.truncated and completion.text == ""


def test_a_401_event_is_a_fatal_auth_error(user_dirs, monkeypatch, retry, sleep):
    monkeypatch.setenv("FAKE_CLI_MODE", "status_401")
    completion = OpenCodeCliBackend().complete(REQ)
    assert completion.error == "auth" and "401" in completion.error_message
    with pytest.raises(ProviderError) as info:
        Client(OpenCodeCliBackend(), retry=retry).complete(REQ)
    assert info.value.kind == "auth" and sleep.calls == []


def test_a_retry_seen_in_the_log_stops_the_cli(user_dirs, monkeypatch):
    monkeypatch.setenv("FAKE_CLI_MODE", "retrying")  # the fake keeps retrying for 60 s
    completion = OpenCodeCliBackend(timeout=45).complete(REQ)
    assert completion.error == "rate_limit", completion.error_message  # not "timeout"
    assert completion.latency < 30 and "Rate limit reached" in completion.error_message


def test_an_auth_failure_seen_only_in_the_log_is_still_auth(user_dirs, monkeypatch):
    monkeypatch.setenv("FAKE_CLI_MODE", "auth_in_log_only")
    completion = OpenCodeCliBackend(timeout=45).complete(REQ)
    assert completion.error == "auth", completion.error_message


def test_a_model_the_cli_does_not_know_is_fatal(user_dirs, monkeypatch):
    monkeypatch.setenv("FAKE_CLI_MODE", "model_missing")
    completion = OpenCodeCliBackend(model="fake/nope").complete(REQ)
    assert completion.error == "model" and "Model not found: fake/nope." in completion.error_message


def test_timeout_empty_answer_and_a_crash(user_dirs, monkeypatch):
    monkeypatch.setenv("FAKE_CLI_MODE", "hang")
    assert OpenCodeCliBackend(timeout=2).complete(REQ).error == "timeout"
    monkeypatch.setenv("FAKE_CLI_MODE", "empty")
    assert OpenCodeCliBackend().complete(REQ).error == "empty"
    monkeypatch.setenv("FAKE_CLI_MODE", "fail")
    crashed = OpenCodeCliBackend().complete(REQ)
    assert crashed.error == "server" and "something broke" in crashed.error_message
    monkeypatch.setenv("PATH", "/nonexistent")
    assert OpenCodeCliBackend().complete(REQ).error == "unavailable"


def test_a_login_refreshed_during_the_call_is_kept(user_dirs, monkeypatch):
    auth = user_dirs["data"] / "auth.json"
    auth.write_text('{"openai": "old"}', encoding="utf-8")
    monkeypatch.setenv("FAKE_CLI_MODE", "refresh")
    assert OpenCodeCliBackend().complete(REQ).ok
    assert auth.read_text(encoding="utf-8") == '{"openai": "new"}'
    assert sorted(p.name for p in user_dirs["data"].iterdir()) == ["auth.json"]
    assert auth.stat().st_mode & 0o077 == 0


def test_no_login_file_is_created_for_a_person_without_one(user_dirs, monkeypatch):
    monkeypatch.setenv("FAKE_CLI_MODE", "refresh")
    assert OpenCodeCliBackend().complete(REQ).ok
    assert list(user_dirs["data"].iterdir()) == []


def test_spec_options_and_registry():
    assert BACKEND_MODULES["opencode-cli"] == "skillopt_sleep.backends.opencode_cli"
    assert cli_command("opencode-cli") == "opencode"
    backend = make_backend("opencode-cli:model=corp/big,timeout=30,command=/opt/opencode")
    assert isinstance(backend, OpenCodeCliBackend)
    assert (backend.model, backend.timeout, backend.command) == ("corp/big", 30.0, "/opt/opencode")
    assert backend.id == "opencode-cli:corp/big"
    assert from_options({}, None).id == "opencode-cli:default"


def test_an_expiring_oauth_login_is_refreshed_by_one_call_while_the_others_wait(user_dirs, monkeypatch):
    auth = user_dirs["data"] / "auth.json"
    auth.write_text(json.dumps({"openai": {"type": "oauth", "refresh": "r1", "access": "a1", "expires": 0}}))
    monkeypatch.setenv("FAKE_CLI_MODE", "oauth_refresh")
    backend = OpenCodeCliBackend()
    with ThreadPoolExecutor(3) as pool:
        completions = list(pool.map(backend.complete, [REQ] * 3))
    assert all(c.ok for c in completions), [c.error_message for c in completions]
    refresh_tokens = Path(str(user_dirs["log"]) + ".auth").read_text().split()
    assert sorted(refresh_tokens) == ["r1", "r2", "r2"]  # one refresh with r1; the others got its result
    assert json.loads(auth.read_text())["openai"]["refresh"] == "r2"
