"""gemini-cli against a fake ``gemini`` on PATH that records its argv, cwd, stdin, environment, the
system prompt file it was pointed at and the private GEMINI_CLI_HOME, then answers like the real
CLI 0.61 with ``--output-format json`` (result on stdout, an error object on stderr) and writes the
telemetry file the backend reads the finish reason from. The real CLI against the fake Gemini API
is in test_real_gemini_cli.py."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest
from tests.support.tree_hash import differences, fingerprint

from skillopt_sleep import estimate
from skillopt_sleep.backend_spec import parse_spec
from skillopt_sleep.backends.base import ProviderError, Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.gemini_cli import (
    EMPTY_INSTRUCTIONS,
    GeminiCliBackend,
    build_argv,
    json_documents,
    login_settings,
    parse_stats,
)
from skillopt_sleep.backends.registry import make_backend
from skillopt_sleep.paths import REPLAY_DIR_PREFIX

REQ = Request(purpose="attempt", system="SKILL: be brief. Ünïcødé ✓", user="Summarize the PR.")
MARKER = "SKILLOPT-MARKER"

FAKE_GEMINI = r"""
import json, os, sys, tempfile, time
mode = os.environ.get("FAKE_GEMINI_MODE", "ok")
stdin = sys.stdin.read()
home = os.environ.get("GEMINI_CLI_HOME", "")
gemini_dir = os.path.join(home, ".gemini")
def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None
record = {
    "argv": sys.argv[1:], "cwd": os.getcwd(), "cwd_files": sorted(os.listdir(os.getcwd())), "stdin": stdin,
    "env": dict(os.environ),
    "system_md": read(os.environ.get("GEMINI_SYSTEM_MD", "/nonexistent")),
    "home_files": sorted(os.listdir(gemini_dir)) if os.path.isdir(gemini_dir) else None,
    "settings": json.loads(read(os.path.join(gemini_dir, "settings.json")) or "null"),
}
with open(os.environ["FAKE_GEMINI_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(record) + "\n")
# what the real CLI leaves: a session in its home, a probe in TMPDIR
os.makedirs(os.path.join(gemini_dir, "tmp", "x", "chats"), exist_ok=True)
with open(os.path.join(gemini_dir, "tmp", "x", "chats", "session-1.jsonl"), "w") as f:
    f.write("{}\n")
with open(os.path.join(tempfile.gettempdir(), "gemini-client-error-probe.json"), "w") as f:
    f.write("{}\n")

def telemetry(reasons, role="main"):
    with open(os.environ["GEMINI_TELEMETRY_OUTFILE"], "a", encoding="utf-8") as f:
        for event in ("gemini_cli.config", "gemini_cli.api_response"):
            record = {"hrTime": [1, 2], "attributes": {"event.name": event, "role": role, "finish_reasons": reasons}}
            f.write(json.dumps(record, indent=2) + "\n")

def stats(model="gemini-2.5-pro", **tokens):
    counts = {"input": 90, "prompt": 120, "candidates": 7, "total": 140, "cached": 30, "thoughts": 13, "tool": 0}
    counts.update(tokens)
    return {"models": {model: {"api": {"totalRequests": 1}, "tokens": counts}}, "tools": {"totalCalls": 0}}

def error(code, message, rc):
    sys.stderr.write("Error when talking to Gemini API\n")
    sys.stderr.write(json.dumps({"session_id": "s", "error": {"type": "Error", "message": message, "code": code}}, indent=2) + "\n")
    sys.exit(rc)

if mode == "ok":
    telemetry(["stop"])
    print(json.dumps({"session_id": "s", "response": "fake gemini answer", "stats": stats()}, indent=2))
elif mode == "preamble":
    print("Memory is currently empty.")
    print(json.dumps({"session_id": "s", "response": "after a note", "stats": stats()}, indent=2))
elif mode == "two_models":
    telemetry(["stop"], role="utility_router")
    telemetry(["stop"])
    s = stats()
    s["models"]["gemini-2.5-flash-lite"] = {"tokens": {"input": 50, "candidates": 5, "cached": 0, "thoughts": 0}}
    print(json.dumps({"session_id": "s", "response": "routed", "stats": s}, indent=2))
elif mode == "cut":
    telemetry(["stop", "length"])
    print(json.dumps({"session_id": "s", "response": "half an ans", "stats": stats()}, indent=2))
elif mode == "cut_router_only":
    telemetry(["length"], role="utility_router")
    telemetry(["stop"])
    print(json.dumps({"session_id": "s", "response": "whole", "stats": stats()}, indent=2))
elif mode == "cut_empty":
    error("MAX_TOKENS_EXCEEDED", "Model stream ended due to token limit exhaustion (MAX_TOKENS) with empty response text.", 1)
elif mode == "status_401":
    error(401, '{"error":{"code":401,"message":"API key not valid.","status":"UNAUTHENTICATED"}}', 145)
elif mode == "status_429":
    error(429, "Resource has been exhausted (e.g. check quota).", 173)
elif mode == "status_400":
    error(400, "Request contains an invalid argument.", 1)
elif mode == "empty":
    error(None, "The model returned an empty response with no text or thoughts. This may be a transient API issue; please try again.", 0)
elif mode == "blank":
    print(json.dumps({"session_id": "s", "response": "  ", "stats": stats()}, indent=2))
elif mode == "crash":
    sys.stderr.write("TypeError: fetch failed sending request (connection refused)\n")
    sys.exit(1)
elif mode == "no_key":
    sys.stderr.write("Warning: 256-color support not detected.\nRipgrep is not available. Falling back to GrepTool.\n")
    sys.stderr.write("When using Gemini API, you must specify the GEMINI_API_KEY environment variable.\n")
    sys.exit(41)
elif mode == "no_login":
    sys.stderr.write("Error authenticating: FatalAuthenticationError: Manual authorization is required but the current session is non-interactive.\n")
    sys.exit(41)
elif mode == "untrusted":
    sys.stderr.write("Gemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`\n")
    sys.exit(55)
elif mode == "hang":
    time.sleep(60)
elif mode == "refresh":
    with open(os.path.join(gemini_dir, "oauth_creds.json"), "w") as f:
        f.write('{"access_token": "new"}')
    print(json.dumps({"session_id": "s", "response": "refreshed", "stats": stats()}, indent=2))
"""


@pytest.fixture
def fake_gemini(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ``gemini`` first on PATH, a throwaway user HOME and TMPDIR; returns the run log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "gemini"
    script.write_text(f"#!{sys.executable}\n{FAKE_GEMINI}", encoding="utf-8")
    script.chmod(0o755)
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    for name in [n for n in os.environ if n.startswith(("GEMINI", "GOOGLE"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    monkeypatch.setenv("PATH", bin_dir.as_posix() + os.pathsep + os.environ.get("PATH", ""))
    log = tmp_path / "gemini-runs.jsonl"
    monkeypatch.setenv("FAKE_GEMINI_LOG", str(log))
    monkeypatch.setenv("FAKE_GEMINI_MODE", "ok")
    return log


def runs(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def user_context(home: Path) -> None:
    """A person's Gemini CLI setup, every piece marked."""
    gemini = home / ".gemini"
    (gemini / "GEMINI.md").write_text(f"{MARKER}-gemini-md\n", encoding="utf-8")
    for sub in ("extensions/marker", "skills/marker", "agents", "commands", "policies"):
        (gemini / sub).mkdir(parents=True)
    (gemini / "extensions" / "marker" / "gemini-extension.json").write_text(
        json.dumps({"name": "marker", "version": "1", "contextFileName": "M.md"}), encoding="utf-8"
    )
    (gemini / "skills" / "marker" / "SKILL.md").write_text(f"---\nname: m\ndescription: {MARKER}\n---\n")
    (gemini / "oauth_creds.json").write_text('{"access_token": "at-1", "refresh_token": "rt"}', encoding="utf-8")
    (gemini / "google_accounts.json").write_text('{"active": "me@example.com", "old": []}', encoding="utf-8")
    (gemini / "settings.json").write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "oauth-personal"}, "folderTrust": {"enabled": True}},
                "model": {"name": "gemini-2.5-pro", "compressionThreshold": 0.5},
                "mcpServers": {"marker": {"command": "marker-mcp"}},
                "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch ran"}]}]},
                "context": {"fileName": ["GEMINI.md", "AGENTS.md"]},
                "tools": {"core": ["run_shell_command"]},
                "general": {"defaultApprovalMode": "yolo"},
            }
        ),
        encoding="utf-8",
    )
    (gemini / ".env").write_text(
        "export GEMINI_API_KEY='AIza-from-env-file'\nGOOGLE_CLOUD_PROJECT=proj # mine\nOTHER_SECRET=no\n",
        encoding="utf-8",
    )


def test_argv_asks_for_json_and_no_tool_approval():
    argv = build_argv(model="gemini-2.5-pro")
    assert argv[:3] == ["gemini", "--prompt", ""]  # the task comes on stdin
    assert argv[argv.index("--output-format") + 1] == "json"
    assert argv[argv.index("--approval-mode") + 1] == "default" and "--yolo" not in argv
    assert "--skip-trust" in argv and argv[argv.index("--model") + 1] == "gemini-2.5-pro"
    assert "--model" not in build_argv()


def test_private_home_holds_only_the_login_and_tools_are_off(fake_gemini, tmp_path, monkeypatch):
    home = tmp_path / "home"
    user_context(home)
    monkeypatch.setenv("GEMINI_TELEMETRY_OTLP_ENDPOINT", "http://collector.example:4317")
    monkeypatch.setenv("GEMINI_WRITE_SYSTEM_MD", "1")
    monkeypatch.setenv("GEMINI_SYSTEM_MD", str(home / "their-system.md"))
    monkeypatch.setenv("GEMINI_CLI_IDE_SERVER_PORT", "9999")
    before = fingerprint(home)

    completion = GeminiCliBackend("gemini-2.5-flash").complete(REQ)
    assert completion.ok and completion.text == "fake gemini answer", completion.error_message
    (run,) = runs(fake_gemini)

    private = Path(run["env"]["GEMINI_CLI_HOME"])
    assert private != home and not private.exists()  # removed with everything the CLI wrote in it
    assert run["home_files"] == ["google_accounts.json", "oauth_creds.json", "settings.json"]
    settings = run["settings"]
    assert settings["security"]["auth"] == {"selectedType": "oauth-personal"}
    assert settings["security"]["folderTrust"] == {"enabled": False}
    assert settings["model"]["name"] == "gemini-2.5-pro" and "compressionThreshold" not in settings["model"]
    assert settings["tools"]["core"] == [] and settings["mcpServers"] == {}
    assert "hooks" not in settings and settings["hooksConfig"] == {"enabled": False}
    assert settings["skills"] == {"enabled": False} and settings["experimental"]["enableAgents"] is False
    assert settings["general"]["maxAttempts"] == 1 and "defaultApprovalMode" not in settings["general"]
    assert settings["context"]["includeDirectoryTree"] is False and "fileName" not in settings["context"]
    assert MARKER not in json.dumps(run)

    env = run["env"]
    assert run["system_md"] == REQ.system and run["stdin"] == REQ.user
    assert env["GEMINI_API_KEY"] == "AIza-from-env-file" and env["GOOGLE_CLOUD_PROJECT"] == "proj"
    assert "OTHER_SECRET" not in env and "GEMINI_WRITE_SYSTEM_MD" not in env
    assert "GEMINI_TELEMETRY_OTLP_ENDPOINT" not in env and "GEMINI_CLI_IDE_SERVER_PORT" not in env
    assert env["GEMINI_TELEMETRY_TARGET"] == "local" and env["GEMINI_TELEMETRY_LOG_PROMPTS"] == "false"
    assert not Path(env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]).exists()
    assert not Path(env["GEMINI_CLI_SYSTEM_DEFAULTS_PATH"]).exists()
    assert run["cwd_files"] == [] and Path(run["cwd"]).name.startswith(REPLAY_DIR_PREFIX)
    assert not Path(run["cwd"]).exists()
    assert differences(before, fingerprint(home)) == []  # the person's home untouched
    assert list((tmp_path / "tmp").iterdir()) == []  # the probe went with the sandbox's TMPDIR


def test_a_key_already_in_the_environment_wins_over_the_env_file(fake_gemini, tmp_path, monkeypatch):
    user_context(tmp_path / "home")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-from-environment")
    assert GeminiCliBackend().complete(REQ).ok
    assert runs(fake_gemini)[0]["env"]["GEMINI_API_KEY"] == "AIza-from-environment"


def test_the_person_home_may_be_moved_with_gemini_cli_home(fake_gemini, tmp_path, monkeypatch):
    moved = tmp_path / "elsewhere"
    (moved / ".gemini").mkdir(parents=True)
    (moved / ".gemini" / "oauth_creds.json").write_text('{"access_token": "moved"}', encoding="utf-8")
    monkeypatch.setenv("GEMINI_CLI_HOME", str(moved))
    assert GeminiCliBackend().complete(REQ).ok
    (run,) = runs(fake_gemini)
    assert run["home_files"] == ["oauth_creds.json", "settings.json"]
    assert run["env"]["GEMINI_CLI_HOME"] != str(moved)


def test_without_the_persons_model_the_router_is_skipped_and_their_choice_kept(fake_gemini, tmp_path):
    home = tmp_path / "home"
    assert GeminiCliBackend().complete(REQ).ok
    (home / ".gemini" / "settings.json").write_text(json.dumps({"model": {"name": "auto"}}), encoding="utf-8")
    assert GeminiCliBackend().complete(REQ).ok
    names = [run["settings"]["model"]["name"] for run in runs(fake_gemini)]
    assert names == ["pro", "auto"]  # the router's own fallback model; a chosen router stays


def test_empty_system_prompt_gets_fixed_instructions(fake_gemini):
    assert GeminiCliBackend().complete(Request(purpose="preflight", system=" ", user="hi")).ok
    assert runs(fake_gemini)[0]["system_md"] == EMPTY_INSTRUCTIONS


def test_a_task_starting_with_a_slash_is_not_a_slash_command(fake_gemini):
    assert GeminiCliBackend().complete(Request(purpose="attempt", system="s", user="/init the repo")).ok
    assert GeminiCliBackend().complete(Request(purpose="attempt", system="s", user="// a comment")).ok
    assert [r["stdin"] for r in runs(fake_gemini)] == ["\n/init the repo", "// a comment"]


def test_login_settings_take_the_system_precedence(tmp_path):
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    defaults, system = tmp_path / "defaults.json", tmp_path / "system.json"
    defaults.write_text(json.dumps({"model": {"name": "from-defaults"}, "billing": {"overageStrategy": "ask"}}))
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"model": {"name": "from-user"}, "security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    system.write_text(json.dumps({"security": {"auth": {"enforcedType": "vertex-ai"}}, "mcpServers": {"m": {}}}))
    assert login_settings(home, [defaults, system]) == {
        "model": {"name": "from-user"},
        "billing": {"overageStrategy": "ask"},
        "security": {"auth": {"enforcedType": "vertex-ai"}},
    }
    (home / ".gemini" / "settings.json").write_text(
        '{\n  // how I log in\n  "security": {"auth": {"selectedType": "oauth-personal"}}, /* mine */\n'
        '  "model": {"name": "a // b"}\n}\n'
    )
    assert login_settings(home, []) == {
        "security": {"auth": {"selectedType": "oauth-personal"}},
        "model": {"name": "a // b"},
    }
    (home / ".gemini" / "settings.json").write_text("{not json")
    assert login_settings(home, []) == {}


def test_usage_sums_every_model_with_thinking_as_output(fake_gemini, monkeypatch):
    completion = GeminiCliBackend().complete(REQ)
    assert completion.usage.input_tokens == 90 and completion.usage.cache_read_tokens == 30
    assert completion.usage.output_tokens == 7 + 13 and completion.model == "gemini-2.5-pro"
    monkeypatch.setenv("FAKE_GEMINI_MODE", "two_models")
    routed = GeminiCliBackend().complete(REQ)
    assert routed.ok and routed.usage.input_tokens == 140 and routed.usage.output_tokens == 25
    assert parse_stats(None).input_tokens == 0 and parse_stats({"models": {"m": {"tokens": "x"}}}).output_tokens == 0


def test_a_note_printed_before_the_result_is_skipped(fake_gemini, monkeypatch):
    monkeypatch.setenv("FAKE_GEMINI_MODE", "preamble")
    completion = GeminiCliBackend().complete(REQ)
    assert completion.ok and completion.text == "after a note"


@pytest.mark.parametrize(
    "mode,kind",
    [
        ("status_401", "auth"),
        ("status_429", "rate_limit"),
        ("status_400", "bad_request"),
        ("empty", "empty"),
        ("blank", "empty"),
        ("crash", "server"),
        ("no_key", "auth"),
        ("no_login", "auth"),
    ],
)
def test_failures_are_classified(fake_gemini, monkeypatch, mode, kind):
    monkeypatch.setenv("FAKE_GEMINI_MODE", mode)
    completion = GeminiCliBackend().complete(REQ)
    assert completion.error == kind, completion.error_message
    assert completion.text == "" and len(completion.error_message) <= 300
    assert "color" not in completion.error_message and "Ripgrep" not in completion.error_message


def test_an_auth_failure_is_fatal_at_the_first_report(fake_gemini, monkeypatch, retry, sleep):
    monkeypatch.setenv("FAKE_GEMINI_MODE", "status_401")
    with pytest.raises(ProviderError) as info:
        Client(GeminiCliBackend(), retry=retry).complete(REQ)
    assert info.value.kind == "auth" and sleep.calls == []
    assert len(runs(fake_gemini)) == 1


def test_a_rate_limit_is_left_to_the_engines_retries(fake_gemini, monkeypatch, retry, sleep):
    monkeypatch.setenv("FAKE_GEMINI_MODE", "status_429")
    with pytest.raises(ProviderError) as info:
        Client(GeminiCliBackend(), retry=retry).complete(REQ)
    assert info.value.kind == "rate_limit" and sleep.calls  # the engine waited, the CLI did not
    (run,) = runs(fake_gemini)[:1]
    assert run["settings"]["general"]["maxAttempts"] == 1


def test_timeout(fake_gemini, monkeypatch):
    monkeypatch.setenv("FAKE_GEMINI_MODE", "hang")
    completion = GeminiCliBackend(timeout=1).complete(REQ)
    assert completion.error == "timeout" and completion.latency < 30


@pytest.mark.parametrize("mode", ["cut", "cut_empty"])
def test_an_answer_cut_off_at_the_limit_is_truncated(fake_gemini, monkeypatch, mode):
    monkeypatch.setenv("FAKE_GEMINI_MODE", mode)
    completion = GeminiCliBackend().complete(REQ)
    assert completion.ok and completion.truncated and completion.text == "", completion.error_message


def test_only_the_main_models_finish_reason_counts(fake_gemini, monkeypatch):
    monkeypatch.setenv("FAKE_GEMINI_MODE", "cut_router_only")
    completion = GeminiCliBackend().complete(REQ)
    assert completion.ok and not completion.truncated and completion.text == "whole"


def test_a_login_refreshed_during_the_call_is_copied_back(fake_gemini, tmp_path, monkeypatch):
    creds = tmp_path / "home" / ".gemini" / "oauth_creds.json"
    creds.write_text('{"access_token": "old"}', encoding="utf-8")
    monkeypatch.setenv("FAKE_GEMINI_MODE", "refresh")
    assert GeminiCliBackend().complete(REQ).ok
    assert creds.read_text(encoding="utf-8") == '{"access_token": "new"}'
    assert oct(creds.stat().st_mode & 0o777) == "0o600"
    assert sorted(p.name for p in creds.parent.iterdir()) == ["oauth_creds.json"]


def test_a_refresh_does_not_overwrite_a_login_the_person_changed_meanwhile(fake_gemini, tmp_path, monkeypatch):
    creds = tmp_path / "home" / ".gemini" / "oauth_creds.json"
    creds.write_text('{"access_token": "old"}', encoding="utf-8")
    monkeypatch.setenv("FAKE_GEMINI_MODE", "refresh")
    script = Path(os.environ["PATH"].split(os.pathsep)[0]) / "gemini"
    text = script.read_text(encoding="utf-8")  # the person logs in again while the call runs
    script.write_text(
        text.replace("mode = os.environ", f"open({str(creds)!r}, 'w').write('relogin')\nmode = os.environ", 1),
        encoding="utf-8",
    )
    assert GeminiCliBackend().complete(REQ).ok
    assert creds.read_text(encoding="utf-8") == "relogin"


def test_json_documents_reads_pretty_printed_runs():
    text = 'note {x}\n{\n  "a": 1\n}\n{"b": [1, {"c": 2}]}\n{broken\n'
    assert json_documents(text) == [{"a": 1}, {"b": [1, {"c": 2}]}]


def test_spec_and_registry():
    assert parse_spec("gemini-cli:model=gemini-2.5-pro,timeout=90") == (
        "gemini-cli",
        {"model": "gemini-2.5-pro", "timeout": 90},
    )
    backend = make_backend("gemini-cli:model=gemini-2.5-pro,timeout=90,command=/opt/gemini")
    assert isinstance(backend, GeminiCliBackend)
    assert backend.model == "gemini-2.5-pro" and backend.timeout == 90 and backend.command == "/opt/gemini"
    assert backend.id == "gemini-cli:gemini-2.5-pro"
    payer = estimate.payer_of("gemini-cli:default")  # paid by the person's Gemini CLI login
    assert payer["kind"] == "login" and payer["login"] == "gemini"
