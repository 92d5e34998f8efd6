"""codex-cli against a fake ``codex`` on PATH that records argv, cwd, stdin, the environment it
was given and the files it was pointed at (tests/support/fake_cli.py): the argv that turns off every
tool, a private CODEX_HOME holding only what the login needs (a login refreshed during the call is
kept), usage, reconnects, the turn's failure, and an auth failure or a keyring login explained. What
both CLI backends share is in test_cli_common.py; the real CLI against fake providers is in
test_real_cli_backends.py."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from tests.support.fake_cli import runs

from skillopt_sleep.backends.base import ProviderError, Request
from skillopt_sleep.backends.codex_cli import (
    EMPTY_INSTRUCTIONS,
    CodexCliBackend,
    login_config,
    to_toml,
    turn_failure,
)
from skillopt_sleep.backends.codex_cli import build_argv as codex_argv
from skillopt_sleep.backends.client import Client

REQ = Request(purpose="attempt", system="SKILL: be brief.", user="Summarize the PR.")


def test_codex_argv_turns_off_every_tool_and_preamble():
    argv = codex_argv("/run/system.md", "/run/out.txt", model="gpt-5-codex")
    assert argv[:3] == ["codex", "exec", "--ephemeral"]
    assert argv[argv.index("--sandbox") + 1] == "read-only"
    assert "--skip-git-repo-check" in argv and "--json" in argv
    assert argv[argv.index("-o") + 1] == "/run/out.txt"
    assert argv[argv.index("--model") + 1] == "gpt-5-codex"
    disabled = {argv[i + 1] for i, arg in enumerate(argv) if arg == "--disable"}
    assert {"shell_tool", "unified_exec", "multi_agent", "view_image"} <= disabled
    overrides = {argv[i + 1] for i, arg in enumerate(argv) if arg == "-c"}
    assert 'web_search="disabled"' in overrides and "skills.include_instructions=false" in overrides
    assert 'model_instructions_file="/run/system.md"' in overrides
    assert argv[-1] == "-"  # prompt from stdin


def test_codex_gets_fixed_instructions_when_the_system_prompt_is_empty(fake_clis):
    assert CodexCliBackend().complete(Request(purpose="preflight", system="", user="hi")).ok
    assert runs(fake_clis)[0]["system_prompt"] == EMPTY_INSTRUCTIONS


def test_codex_home_is_private_and_holds_only_what_login_needs(fake_clis, tmp_path, monkeypatch):
    user_home = Path(os.environ["CODEX_HOME"])
    (user_home / "auth.json").write_text('{"tokens": {"access_token": "at-1"}}', encoding="utf-8")
    (user_home / "AGENTS.md").write_text("MARKER user agents md", encoding="utf-8")
    (user_home / "skills").mkdir()
    (user_home / "config.toml").write_text(
        'model = "gpt-5-codex"\nmodel_provider = "corp"\ndeveloper_instructions = "MARKER dev"\n'
        '[model_providers.corp]\nname = "Corp"\nbase_url = "http://127.0.0.1:9/v1"\nenv_key = "CORP_KEY"\n'
        'wire_api = "responses"\n[mcp_servers.marker]\ncommand = "marker-mcp"\n'
        "[features]\nshell_tool = true\n",
        encoding="utf-8",
    )
    assert CodexCliBackend().complete(REQ).ok
    (run,) = runs(fake_clis)
    private = Path(run["env"]["CODEX_HOME"])
    assert private != user_home and not private.exists()
    assert run["codex_home_files"] == ["auth.json", "config.toml"]
    config = tomllib.loads(run["codex_config"])
    assert config == {
        "model": "gpt-5-codex",
        "model_provider": "corp",
        "model_providers": {
            "corp": {
                "name": "Corp",
                "base_url": "http://127.0.0.1:9/v1",
                "env_key": "CORP_KEY",
                "wire_api": "responses",
            }
        },
    }


def test_login_config_and_toml_round_trip(tmp_path):
    source = {
        "model": "o3",
        "model_reasoning_effort": "high",
        "model_providers": {
            "a b": {
                "base_url": "http://x",
                "query_params": {"api-version": "1"},
                "request_max_retries": 2,
                "http_headers": {"X-Ü": 'ü"\\'},
            }
        },
        "mcp_servers": {"m": {"command": "x"}},
        "notify": ["say", "done"],
    }
    kept = {k: v for k, v in source.items() if k not in ("mcp_servers", "notify")}
    (tmp_path / "config.toml").write_text(to_toml(source), encoding="utf-8")
    assert tomllib.loads(to_toml(source)) == source
    assert login_config(tmp_path) == kept
    (tmp_path / "config.toml").write_text("not = [toml", encoding="utf-8")
    assert login_config(tmp_path) == {}


def test_a_login_refreshed_during_the_call_is_kept(fake_clis, monkeypatch):
    user_home = Path(os.environ["CODEX_HOME"])
    (user_home / "auth.json").write_text('{"tokens": "old"}', encoding="utf-8")
    monkeypatch.setenv("FAKE_CLI_MODE", "ok")
    refresher = Path(os.environ["PATH"].split(os.pathsep)[0]) / "codex"
    script = refresher.read_text(encoding="utf-8")
    refresher.write_text(
        script.replace(
            "out = argv", 'open(os.path.join(codex_home, "auth.json"), "w").write(\'{"tokens": "new"}\')\nout = argv', 1
        ),
        encoding="utf-8",
    )
    assert CodexCliBackend().complete(REQ).ok
    assert (user_home / "auth.json").read_text(encoding="utf-8") == '{"tokens": "new"}'
    assert sorted(p.name for p in user_home.iterdir()) == ["auth.json"]


def test_codex_usage(fake_clis):
    completion = CodexCliBackend().complete(REQ)
    assert completion.usage.input_tokens == 20 and completion.usage.cache_read_tokens == 30
    assert completion.usage.output_tokens == 9


def test_codex_reconnect_then_completed_is_a_success(fake_clis, monkeypatch):
    monkeypatch.setenv("FAKE_CLI_MODE", "reconnect")
    completion = CodexCliBackend().complete(REQ)
    assert completion.ok and completion.text == "fake codex answer after a reconnect"
    assert completion.usage.output_tokens == 9


def test_turn_failure_reads_the_last_turn():
    reconnect = {"type": "error", "message": "Reconnecting... 1/5"}
    assert turn_failure([reconnect, {"type": "turn.completed"}]) == ""
    assert turn_failure([reconnect]) == "Reconnecting... 1/5"
    assert turn_failure([reconnect, {"type": "turn.failed", "error": {"message": "boom"}}]) == "boom"
    assert turn_failure([{"type": "item.completed", "item": {"type": "error", "message": "warn"}}]) == ""


def test_codex_auth_failure_stops_the_cli_at_the_first_report(fake_clis, monkeypatch, retry, sleep):
    monkeypatch.setenv("FAKE_CLI_MODE", "auth_retrying")  # the fake keeps retrying for 60 s
    completion = CodexCliBackend(timeout=45).complete(REQ)
    assert completion.error == "auth" and "401" in completion.error_message  # not "timeout"
    with pytest.raises(ProviderError) as info:
        Client(CodexCliBackend(timeout=45), retry=retry).complete(REQ)
    assert info.value.kind == "auth" and sleep.calls == []


@pytest.mark.parametrize(
    "store,auth_file,explained",
    [("keyring", False, True), ("auto", False, True), ("auto", True, False), ("file", False, False)],
)
@pytest.mark.parametrize("mode", ["not_logged_in", "auth_retrying"])
def test_codex_login_in_the_keyring_is_explained(fake_clis, monkeypatch, mode, store, auth_file, explained):
    """Codex keys a keyring login by the CODEX_HOME path, which a replay's private home changes."""
    monkeypatch.setenv("FAKE_CLI_MODE", mode)
    user_home = Path(os.environ["CODEX_HOME"])
    (user_home / "config.toml").write_text(f'cli_auth_credentials_store = "{store}"\n', encoding="utf-8")
    if auth_file:
        (user_home / "auth.json").write_text('{"OPENAI_API_KEY": null}', encoding="utf-8")
    completion = CodexCliBackend(timeout=45).complete(REQ)
    assert completion.error == "auth"
    assert ("system keyring" in completion.error_message) is explained, completion.error_message
    assert "401" in completion.error_message and len(completion.error_message) <= 300
