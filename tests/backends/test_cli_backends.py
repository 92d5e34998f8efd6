"""claude-cli and codex-cli against fake executables on PATH that record argv, cwd and stdin."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from fakes.fake_cli import runs

from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.base import ProviderError, Request
from skillopt_sleep.backends.claude_cli import MAX_ARG_CHARS, ClaudeCliBackend
from skillopt_sleep.backends.claude_cli import build_argv as claude_argv
from skillopt_sleep.backends.codex_cli import CodexCliBackend
from skillopt_sleep.backends.codex_cli import build_argv as codex_argv
from skillopt_sleep.backends.layers import Client
from skillopt_sleep.paths import REPLAY_DIR_PREFIX

REQ = Request(purpose="attempt", system="SKILL: be brief.", user="Summarize the PR.")


def test_claude_argv():
    argv, stdin = claude_argv(REQ, model="sonnet")
    assert argv[:2] == ["claude", "-p"]
    assert argv[argv.index("--output-format") + 1] == "json"
    assert argv[argv.index("--tools") + 1] == ""  # every built-in tool off
    assert "--strict-mcp-config" in argv and "--no-session-persistence" in argv
    assert argv[argv.index("--model") + 1] == "sonnet"
    assert argv[argv.index("--system-prompt") + 1] == "SKILL: be brief."
    assert stdin == "Summarize the PR."
    assert "--model" not in claude_argv(REQ)[0]
    assert "--no-session-persistence" not in claude_argv(REQ, session_persistence=True)[0]


def test_claude_argv_moves_a_huge_system_prompt_to_stdin():
    big = Request(purpose="attempt", system="x" * (MAX_ARG_CHARS + 1), user="task")
    argv, stdin = claude_argv(big)
    assert "--system-prompt" not in argv and stdin.startswith("xxx") and stdin.endswith("task")


def test_codex_argv():
    argv, stdin = codex_argv(REQ, "/tmp/out.txt", model="gpt-5-codex")
    assert argv[:3] == ["codex", "exec", "--ephemeral"]
    assert argv[argv.index("--sandbox") + 1] == "read-only"
    assert "--skip-git-repo-check" in argv and "--json" in argv
    assert argv[argv.index("-o") + 1] == "/tmp/out.txt"
    assert argv[argv.index("--model") + 1] == "gpt-5-codex"
    assert argv[-1] == "-"  # prompt from stdin
    assert stdin.startswith("SKILL: be brief.") and stdin.endswith("Summarize the PR.")


@pytest.mark.parametrize("spec", ["claude-cli:model=sonnet", "codex-cli:model=gpt-5-codex"])
def test_runs_in_an_empty_replay_dir_that_is_removed(fake_clis, spec, tmp_path, monkeypatch):
    workdir = tmp_path / "project"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    before_tmp = set(os.listdir(tempfile.gettempdir()))
    completion = make_backend(spec).complete(REQ)
    assert completion.ok and completion.text.startswith("fake ")
    (run,) = runs(fake_clis)
    cwd = Path(run["cwd"])
    assert cwd.name.startswith(REPLAY_DIR_PREFIX) and run["cwd_files"] == []
    assert not cwd.exists()  # the artefact the fake dropped went with the dir
    assert list(workdir.iterdir()) == []
    leftovers = set(os.listdir(tempfile.gettempdir())) - before_tmp
    assert not leftovers, leftovers  # no -o file, no replay dir
    assert "Summarize the PR." in run["stdin"]


def test_claude_usage_and_model(fake_clis):
    completion = ClaudeCliBackend("sonnet").complete(REQ)
    assert completion.usage.input_tokens == 11 and completion.usage.output_tokens == 7
    assert completion.usage.cache_read_tokens == 40 and completion.usage.cache_write_tokens == 3
    assert completion.model == "claude-fake-model"


def test_codex_usage(fake_clis):
    completion = CodexCliBackend().complete(REQ)
    assert completion.usage.input_tokens == 20 and completion.usage.cache_read_tokens == 30
    assert completion.usage.output_tokens == 9


@pytest.mark.parametrize("cls", [ClaudeCliBackend, CodexCliBackend])
@pytest.mark.parametrize("mode", ["not_logged_in", "login_text"])
def test_not_logged_in_is_an_auth_error_never_an_answer(fake_clis, monkeypatch, retry, sleep, cls, mode):
    monkeypatch.setenv("FAKE_CLI_MODE", mode)
    completion = cls().complete(REQ)
    assert completion.error == "auth" and completion.text == ""
    with pytest.raises(ProviderError) as info:
        Client(cls(), retry=retry).complete(REQ)
    assert info.value.kind == "auth" and sleep.calls == []  # fails fast


@pytest.mark.parametrize("cls", [ClaudeCliBackend, CodexCliBackend])
@pytest.mark.parametrize("mode,kind", [("fail", "server"), ("empty", "empty"), ("rate_limit", "rate_limit")])
def test_failures_are_retried_bounded_then_raise(fake_clis, monkeypatch, retry, sleep, cls, mode, kind):
    monkeypatch.setenv("FAKE_CLI_MODE", mode)
    with pytest.raises(ProviderError) as info:
        Client(cls(), retry=retry).complete(REQ)
    assert info.value.kind == kind
    assert len(runs(fake_clis)) == retry.attempts


@pytest.mark.parametrize("cls", [ClaudeCliBackend, CodexCliBackend])
def test_missing_cli_is_unavailable(cls, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    completion = cls(command="definitely-not-installed-cli").complete(REQ)
    assert completion.error == "unavailable" and "not found on PATH" in completion.error_message


def test_claude_usage_limit_reset_time_becomes_retry_after(fake_clis, monkeypatch, retry, sleep):
    monkeypatch.setenv("FAKE_CLI_MODE", "rate_limit")  # the fake's reset epoch is long past
    completion = ClaudeCliBackend().complete(REQ)
    assert completion.error == "rate_limit" and completion.retry_after == 0.0
