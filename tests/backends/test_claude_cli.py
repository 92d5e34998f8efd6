"""claude-cli against a fake ``claude`` on PATH that records argv, cwd, stdin, the environment it
was given and the files it was pointed at (tests/support/fake_cli.py): the isolated argv, no retries
of its own, usage and cost, and how its failures read. What both CLI backends share is in
test_cli_common.py; the real CLI against fake providers is in test_real_cli_backends.py."""

from __future__ import annotations

import pytest
from tests.support.fake_cli import runs

from skillopt_sleep.backends.base import BudgetExceeded, Request
from skillopt_sleep.backends.budget import Budget
from skillopt_sleep.backends.claude_cli import ClaudeCliBackend
from skillopt_sleep.backends.claude_cli import build_argv as claude_argv
from skillopt_sleep.backends.client import Client

REQ = Request(purpose="attempt", system="SKILL: be brief.", user="Summarize the PR.")


def test_claude_argv_is_isolated_from_the_users_context():
    argv = claude_argv("/run/system.md", model="sonnet")
    assert argv[:2] == ["claude", "-p"]
    assert argv[argv.index("--output-format") + 1] == "json"
    assert "--safe-mode" in argv  # no user CLAUDE.md, skills, hooks, plugins, MCP servers
    assert argv[argv.index("--tools") + 1] == ""  # every built-in tool off
    assert "--strict-mcp-config" in argv and "--no-session-persistence" in argv
    assert argv[argv.index("--system-prompt-file") + 1] == "/run/system.md"
    assert argv[argv.index("--model") + 1] == "sonnet"
    assert "--model" not in claude_argv("/f")
    assert "--no-session-persistence" not in claude_argv("/f", session_persistence=True)


def test_claude_runs_without_its_own_retries(fake_clis):
    ClaudeCliBackend().complete(REQ)
    (run,) = runs(fake_clis)
    assert run["env"]["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert run["env"]["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"


def test_claude_usage_model_and_cost(fake_clis):
    completion = ClaudeCliBackend("sonnet").complete(REQ)
    assert completion.usage.input_tokens == 11 and completion.usage.output_tokens == 7
    assert completion.usage.cache_read_tokens == 40 and completion.usage.cache_write_tokens == 3
    assert completion.model == "claude-fake-model"
    assert completion.cost_usd == pytest.approx(0.001)


def test_claude_cost_counts_against_the_night_budget(fake_clis):
    budget = Budget(max_cost=0.0025)
    client = Client(ClaudeCliBackend("an-alias-with-no-price"), budget=budget, cache=False)
    for _ in range(3):
        client.complete(REQ)  # the CLI bills 0.001 a call; no price is known for the model
    assert budget.cost_used == pytest.approx(0.003) and budget.unpriced == set()
    with pytest.raises(BudgetExceeded):
        client.complete(REQ)
    assert len(runs(fake_clis)) == 3


@pytest.mark.parametrize("mode,kind", [("status_401", "auth"), ("status_429", "rate_limit")])
def test_claude_api_error_status_decides_the_kind(fake_clis, monkeypatch, mode, kind):
    monkeypatch.setenv("FAKE_CLI_MODE", mode)
    completion = ClaudeCliBackend().complete(REQ)
    assert completion.error == kind and completion.text == ""


def test_claude_usage_limit_reset_time_becomes_retry_after(fake_clis, monkeypatch, retry, sleep):
    monkeypatch.setenv("FAKE_CLI_MODE", "rate_limit")  # the fake's reset epoch is long past
    completion = ClaudeCliBackend().complete(REQ)
    assert completion.error == "rate_limit" and completion.retry_after == 0.0
