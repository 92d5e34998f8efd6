"""How a person asks for a skillopt-sleep action from where they read the output: the slash
command inside Claude Code, the skill inside Codex, the command line in a terminal.

Claude Code runs its Bash tool with ``CLAUDECODE=1`` in the environment, and Codex runs its shell
tool with ``CODEX_THREAD_ID`` set (both checked with the real CLIs); the plugin's command and
skill run the engine through those tools, so the engine knows whose conversation its output lands
in. There the person types the agent's command, not a terminal one: ``--project`` is the
directory the agent works in.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping

CLAUDE_COMMAND = "/skillopt-sleep"  # what a person types in Claude Code (the plugin's skill; /skillopt-sleep:skillopt-sleep works too)
CODEX_SKILL = "skillopt-sleep"  # the Codex plugin's skill; a request that names it runs it


def calling_agent(env: Mapping[str, str] | None = None) -> str | None:
    """``"claude"`` or ``"codex"`` when this process runs in that agent's tool, else None."""
    env = os.environ if env is None else env
    if env.get("CLAUDECODE") == "1":
        return "claude"
    if env.get("CODEX_THREAD_ID"):
        return "codex"
    return None


def ask_for(action: str, *arguments: str, project: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """What to type for ``action`` (``review``, ``adopt``…) with ``arguments``: the slash command
    in Claude Code, a request for the skill in Codex, else ``skillopt-sleep <action> --project …``."""
    rest = " ".join(arguments)
    agent = calling_agent(env)
    if agent == "claude":
        return f"{CLAUDE_COMMAND} {action}" + (f" {rest}" if rest else "")
    if agent == "codex":
        return f'ask Codex: "{CODEX_SKILL} {action}' + (f" {rest}" if rest else "") + '"'
    where = f" --project {shlex.quote(project)}" if project is not None else ""
    return f"skillopt-sleep {action}{where}" + (f" {rest}" if rest else "")
