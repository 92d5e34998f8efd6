"""What a person is told to type for an action, by where the output lands: the slash command in
Claude Code, a request for the skill in Codex, the command line in a terminal."""

from __future__ import annotations

import pytest

from skillopt_sleep.agent_surface import CLAUDE_COMMAND, CODEX_SKILL, ask_for, calling_agent


@pytest.mark.parametrize(
    "env, agent",
    [
        ({"CLAUDECODE": "1"}, "claude"),
        ({"CLAUDECODE": "0"}, None),  # only the value Claude Code's tools set
        ({"CODEX_THREAD_ID": "0199-thread"}, "codex"),
        ({"CODEX_THREAD_ID": ""}, None),
        ({"CLAUDECODE": "1", "CODEX_THREAD_ID": "t"}, "claude"),  # Codex run from a Claude Code tool
        ({}, None),
    ],
)
def test_the_calling_agent_is_read_from_what_its_tools_set(env: dict[str, str], agent: str | None) -> None:
    assert calling_agent(env) == agent


def test_each_surface_names_the_action_its_own_way() -> None:
    assert ask_for("adopt", "--night", "n1", env={"CLAUDECODE": "1"}) == f"{CLAUDE_COMMAND} adopt --night n1"
    assert ask_for("review", env={"CODEX_THREAD_ID": "t"}) == f'ask Codex: "{CODEX_SKILL} review"'
    assert (
        ask_for("review", project="/home/me/my project", env={})
        == "skillopt-sleep review --project '/home/me/my project'"
    )
    assert ask_for("status", env={}) == "skillopt-sleep status"


def test_inside_an_agent_the_project_is_the_agents_own() -> None:
    """The agent's command works on the directory the agent works in: no --project to type."""
    assert "--project" not in ask_for("review", project="/p", env={"CLAUDECODE": "1"})
    assert "--project" not in ask_for("review", project="/p", env={"CODEX_THREAD_ID": "t"})
