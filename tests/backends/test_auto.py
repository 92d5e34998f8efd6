"""``backend = "auto"``: the agent's own CLI, else an SDK whose key is set, else a clear refusal."""

from __future__ import annotations

import pytest

from skillopt_sleep.backends.auto import AGENTS, choose_backend, resolve_config
from skillopt_sleep.backends import cli_command
from skillopt_sleep.documents.agents import AGENT_DOCUMENTS
from skillopt_sleep.config import Config
from skillopt_sleep.errors import EXIT_PROVIDER, UserError


def which_of(*present: str):
    return lambda name: f"/opt/bin/{name}" if name in present else None


def test_the_harvested_agents_own_cli_wins() -> None:
    both = which_of("claude", "codex")
    assert choose_backend(["claude"], which=both, env={}).spec == "claude-cli"
    choice = choose_backend(["codex"], which=both, env={"ANTHROPIC_API_KEY": "k"})
    assert choice.spec == "codex-cli"
    assert "Codex sessions were harvested" in choice.reason and "/opt/bin/codex" in choice.reason


@pytest.mark.parametrize("agent", AGENTS)
def test_each_agents_own_cli_replays_its_sessions(agent: str) -> None:
    command = cli_command(f"{agent}-cli")
    assert command is not None
    everyone = which_of(*(cli_command(f"{a}-cli") or "" for a in AGENTS))
    choice = choose_backend([agent], which=everyone, env={})
    assert choice.spec == f"{agent}-cli"
    assert f"{AGENT_DOCUMENTS[agent].label} sessions were harvested" in choice.reason


def test_sessions_of_an_agent_without_a_cli_backend_are_not_replayed_by_another_agents_cli() -> None:
    everyone = which_of(*(cli_command(f"{a}-cli") or "" for a in AGENTS))
    assert "cursor" not in AGENTS
    choice = choose_backend(["cursor"], which=everyone, env={"ANTHROPIC_API_KEY": "k"})
    assert choice.spec == "anthropic"
    with pytest.raises(UserError) as info:
        choose_backend(["cursor"], which=everyone, env={})
    assert "no agent CLI replays these sessions" in info.value.message and "\n" not in info.value.message


def test_another_agents_cli_is_not_used_for_harvested_sessions() -> None:
    choice = choose_backend(["codex"], which=which_of("claude"), env={"OPENAI_API_KEY": "k"})
    assert choice.spec == "openai" and "OPENAI_API_KEY" in choice.reason


def test_with_no_sessions_either_cli_will_do() -> None:
    assert choose_backend([], which=which_of("codex"), env={}).spec == "codex-cli"


def test_sdk_order_follows_the_agent() -> None:
    keys = {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"}
    assert choose_backend(["claude"], which=which_of(), env=keys).spec == "anthropic"
    assert choose_backend(["codex"], which=which_of(), env=keys).spec == "openai"
    assert choose_backend(["codex"], which=which_of(), env={"ANTHROPIC_API_KEY": "a"}).spec == "anthropic"


def test_configured_command_and_key_count() -> None:
    options = {"claude-cli": {"command": "/home/me/bin/claude-2"}}
    choice = choose_backend(["claude"], backend_options=options, which=which_of("/home/me/bin/claude-2"), env={})
    assert choice.spec == "claude-cli" and "claude-2" in choice.reason
    choice = choose_backend(["claude"], backend_options={"openai": {"api_key": "none"}}, which=which_of(), env={})
    assert choice.spec == "openai" and "backend_options.openai.api_key" in choice.reason


def test_nothing_available_is_one_line_with_the_choices() -> None:
    with pytest.raises(UserError) as info:
        choose_backend(["claude"], which=which_of(), env={"ANTHROPIC_API_KEY": ""})
    assert info.value.code == EXIT_PROVIDER
    message = info.value.message
    assert "\n" not in message
    for choice in (
        "`claude`",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "claude-cli",
        "codex-cli",
        "anthropic",
        "openai",
        "sim",
    ):
        assert choice in message
    assert "`codex`" not in message  # only the harvested agent's CLI would have been used


def test_resolve_config_replaces_only_auto_roles() -> None:
    config = Config(backend="auto", target_backend="sim:seed=3")
    resolved, choice = resolve_config(config, ["claude"], which=which_of("claude"), env={})
    assert choice is not None and choice.spec == "claude-cli"
    assert resolved.backend_for("target") == "sim:seed=3"
    assert resolved.backend_for("optimizer") == "claude-cli"
    assert config.models.backend == "auto"  # the caller's config is not changed
    same, none = resolve_config(Config(backend="sim"), ["claude"], which=which_of(), env={})
    assert none is None and same.models.backend == "sim"


def test_auto_is_the_default_backend() -> None:
    assert Config().models.backend == "auto"
