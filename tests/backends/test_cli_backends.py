"""claude-cli and codex-cli against fake executables on PATH that record argv, cwd, stdin, the
environment they were given and the files they were pointed at (tests/support/fake_cli.py).
The real CLIs against fake providers are in test_real_cli_*.py."""

from __future__ import annotations

import os
import tempfile
import tomllib
from pathlib import Path

import pytest
from tests.support.fake_cli import runs

from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.base import BudgetExceeded, ProviderError, Request
from skillopt_sleep.backends.budget import Budget
from skillopt_sleep.backends.claude_cli import ClaudeCliBackend
from skillopt_sleep.backends.claude_cli import build_argv as claude_argv
from skillopt_sleep.backends.codex_cli import (
    EMPTY_INSTRUCTIONS,
    CodexCliBackend,
    login_config,
    to_toml,
    turn_failure,
)
from skillopt_sleep.backends.codex_cli import build_argv as codex_argv
from skillopt_sleep.backends.client import Client
from skillopt_sleep.paths import REPLAY_DIR_PREFIX

REQ = Request(purpose="attempt", system="SKILL: be brief.", user="Summarize the PR.")
BACKENDS = [ClaudeCliBackend, CodexCliBackend]


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


@pytest.mark.parametrize("spec", ["claude-cli:model=sonnet", "codex-cli:model=gpt-5-codex"])
def test_runs_in_an_empty_replay_dir_and_leaves_nothing(fake_clis, spec, tmp_path, monkeypatch):
    workdir = tmp_path / "project"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    private_tmp = Path(tempfile.gettempdir())  # the fixture gave this test its own TMPDIR
    completion = make_backend(spec).complete(REQ)
    assert completion.ok and completion.text.startswith("fake ")
    (run,) = runs(fake_clis)
    cwd = Path(run["cwd"])
    assert cwd.name.startswith(REPLAY_DIR_PREFIX) and run["cwd_files"] == []
    assert not cwd.exists()  # the artefact the fake dropped went with the dir
    assert Path(run["env"]["TMPDIR"]).is_relative_to(cwd.parent)  # a private TMPDIR, also removed
    assert list(workdir.iterdir()) == []
    assert list(private_tmp.iterdir()) == []  # no probe, no -o file, no system prompt file
    assert run["stdin"] == "Summarize the PR."
    assert run["system_prompt"] == "SKILL: be brief."


def test_a_fifty_thousand_character_document_goes_through_a_file(fake_clis):
    document = "Überprüfe die Änderungen — ✓ " * 1800  # > 50,000 non-ASCII characters
    request = Request(purpose="attempt", system=document, user="task")
    for backend in (ClaudeCliBackend(), CodexCliBackend()):
        assert backend.complete(request).ok
    for run in runs(fake_clis):
        assert run["system_prompt"] == document and run["stdin"] == "task"
        assert max(len(arg) for arg in run["argv"]) < 1000


def test_codex_gets_fixed_instructions_when_the_system_prompt_is_empty(fake_clis):
    assert CodexCliBackend().complete(Request(purpose="preflight", system="", user="hi")).ok
    assert runs(fake_clis)[0]["system_prompt"] == EMPTY_INSTRUCTIONS


def test_claude_runs_without_its_own_retries(fake_clis):
    ClaudeCliBackend().complete(REQ)
    (run,) = runs(fake_clis)
    assert run["env"]["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert run["env"]["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"


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


@pytest.mark.parametrize("mode,kind", [("status_401", "auth"), ("status_429", "rate_limit")])
def test_claude_api_error_status_decides_the_kind(fake_clis, monkeypatch, mode, kind):
    monkeypatch.setenv("FAKE_CLI_MODE", mode)
    completion = ClaudeCliBackend().complete(REQ)
    assert completion.error == kind and completion.text == ""


@pytest.mark.parametrize("cls", BACKENDS)
@pytest.mark.parametrize("mode", ["not_logged_in", "login_text"])
def test_not_logged_in_is_an_auth_error_never_an_answer(fake_clis, monkeypatch, retry, sleep, cls, mode):
    monkeypatch.setenv("FAKE_CLI_MODE", mode)
    completion = cls().complete(REQ)
    assert completion.error == "auth" and completion.text == ""
    with pytest.raises(ProviderError) as info:
        Client(cls(), retry=retry).complete(REQ)
    assert info.value.kind == "auth" and sleep.calls == []  # fails fast


@pytest.mark.parametrize("cls", BACKENDS)
@pytest.mark.parametrize("mode,kind", [("fail", "server"), ("empty", "empty"), ("rate_limit", "rate_limit")])
def test_failures_are_retried_bounded_then_raise(fake_clis, monkeypatch, retry, sleep, cls, mode, kind):
    monkeypatch.setenv("FAKE_CLI_MODE", mode)
    with pytest.raises(ProviderError) as info:
        Client(cls(), retry=retry).complete(REQ)
    assert info.value.kind == kind
    assert len(runs(fake_clis)) == retry.attempts


@pytest.mark.parametrize("cls", BACKENDS)
def test_missing_cli_is_unavailable(cls, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    completion = cls(command="definitely-not-installed-cli").complete(REQ)
    assert completion.error == "unavailable" and "not found on PATH" in completion.error_message


def test_claude_usage_limit_reset_time_becomes_retry_after(fake_clis, monkeypatch, retry, sleep):
    monkeypatch.setenv("FAKE_CLI_MODE", "rate_limit")  # the fake's reset epoch is long past
    completion = ClaudeCliBackend().complete(REQ)
    assert completion.error == "rate_limit" and completion.retry_after == 0.0


# -- tool checks ------------------------------------------------------------------------------------


def test_a_cli_backend_offers_no_tools_so_tool_tasks_are_left_out_of_the_night(fake_clis, tmp_path):
    from skillopt_sleep.config import Config
    from skillopt_sleep.night import NightOptions, run_night
    from skillopt_sleep.types import TaskRecord
    from tests.support.tasks import make_tasks, write_tasks_file

    project = tmp_path / "proj"
    project.mkdir()
    tasks = make_tasks()
    tool_task = TaskRecord(
        id="lint-0",
        intent="Run the linter on the change",
        project="/p",
        split="val",
        judge={"kind": "rule", "checks": [{"op": "tool_called", "arg": "Bash"}]},
    )
    tasks_file = write_tasks_file(tmp_path / "tasks.json", [*tasks, tool_task])
    config = Config(
        backend="claude-cli", agent="claude", retries=1, retry_base_delay=0.0, k=1, val_samples=1, max_val_samples=1
    )
    report = run_night(NightOptions(project=project, config=config, mode="dry-run", tasks_file=tasks_file))
    assert any("lint-0" in note and "cannot offer tools" in note for note in report.notes)
    assert report.n_tasks == len(tasks)
    assert not any("Run the linter" in run["stdin"] for run in runs(fake_clis))  # never replayed
    assert any("Write the commit message" in run["stdin"] for run in runs(fake_clis))


def test_an_interrupted_night_does_not_leave_the_cli_running(fake_clis, monkeypatch):
    import subprocess
    import time

    monkeypatch.setenv("FAKE_CLI_MODE", "auth_retrying")  # reports a 401, then runs for a minute
    monkeypatch.setattr("skillopt_sleep.backends.codex_cli.stop_on_fatal_error", lambda line: None)
    seen: list[subprocess.Popen] = []
    real_wait = subprocess.Popen.wait

    def interrupted_wait(self, timeout=None):
        if timeout is not None and not seen:
            seen.append(self)
            deadline = time.monotonic() + 30
            while not runs(fake_clis) and time.monotonic() < deadline:  # the fake is up and running
                time.sleep(0.05)
            time.sleep(0.5)
            raise KeyboardInterrupt
        return real_wait(self, timeout)

    monkeypatch.setattr(subprocess.Popen, "wait", interrupted_wait)
    with pytest.raises(KeyboardInterrupt):
        CodexCliBackend(timeout=45).complete(REQ)
    (proc,) = seen
    assert real_wait(proc, timeout=10) == -9  # killed, not left sleeping


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
