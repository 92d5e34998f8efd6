"""``backend = "auto"``: pick the model a night uses from what the machine already has.

In order: the agent's own CLI (``claude`` for Claude Code sessions, ``codex`` for Codex sessions,
``gemini``, ``copilot``, ``opencode`` and ``pi`` for theirs: a backend named ``<agent>-cli``) when it
is on PATH, so a subscription user's night runs on their own login; else an SDK backend whose API
key is set (the agent's own provider first); else a refusal naming the choices. The offline
``sim`` backend is never picked: simulated rules must not reach real documents unasked.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillopt_sleep.backend_spec import BACKEND_MODULES
from skillopt_sleep.backends import cli_command, key_env
from skillopt_sleep.config import Config
from skillopt_sleep.documents.agents import AGENT_DOCUMENTS
from skillopt_sleep.errors import EXIT_PROVIDER, UserError

AUTO = "auto"
# the agents whose own CLI can replay a night (a backend named after them), Claude Code and Codex
# first: with no sessions harvested, the first of these on PATH is used
AGENTS = tuple(dict.fromkeys(a for a in ("claude", "codex", *AGENT_DOCUMENTS) if f"{a}-cli" in BACKEND_MODULES))
_SDK_FOR_AGENT = {"codex": ("openai", "anthropic")}  # every other agent: Anthropic's first
_SDK_ORDER = ("anthropic", "openai")

Which = Callable[[str], "str | None"]


@dataclass(frozen=True)
class AutoChoice:
    """The backend ``auto`` stands for tonight, and why (shown in the report)."""

    spec: str  # a backend spec make_backend understands, e.g. "claude-cli"
    reason: str


def is_auto(spec: str | None) -> bool:
    return (spec or "").strip().lower() == AUTO


def choose_backend(
    agents: Sequence[str],
    *,
    backend_options: Mapping[str, Mapping[str, object]] | None = None,
    which: Which = shutil.which,
    env: Mapping[str, str] | None = None,
    harvested: bool = True,
) -> AutoChoice:
    """The backend for a night whose sessions belong to ``agents`` (in order of preference).

    ``agents`` empty means no agent's sessions were found; then either agent's CLI will do.
    ``backend_options`` are the config's per-backend defaults: a configured CLI ``command`` or
    SDK ``api_key`` counts. Raises ``UserError(EXIT_PROVIDER)`` with one line listing the choices
    when nothing is available.
    """
    env = os.environ if env is None else env
    options = backend_options or {}
    harvested_agents = [a for a in agents if a in AGENT_DOCUMENTS]
    known = [a for a in harvested_agents if a in AGENTS]
    for agent in known or ([] if harvested_agents else AGENTS):
        backend = f"{agent}-cli"
        command = str((options.get(backend) or {}).get("command") or cli_command(backend))
        found = which(command)
        if found:
            label = AGENT_DOCUMENTS[agent].label
            if known and harvested:
                why = f"{label} sessions were harvested"
            elif known:
                why = f"the night evolves {label} documents"
            else:
                why = "no agent sessions were harvested"
            return AutoChoice(backend, f"{why} and `{command}` is on PATH ({found})")
    order = _SDK_FOR_AGENT.get(harvested_agents[0], _SDK_ORDER) if harvested_agents else _SDK_ORDER
    for backend in order:
        key = key_env(backend)
        assert key is not None  # the SDK backends each read their key from the environment
        if env.get(key) or (options.get(backend) or {}).get("api_key"):
            where = key if env.get(key) else f"backend_options.{backend}.api_key"
            return AutoChoice(backend, f"no agent CLI on PATH; {where} is set")
    clis = known or ([] if harvested_agents else list(AGENTS))
    wanted = " or ".join(f"`{cli_command(f'{a}-cli')}`" for a in clis)
    missing = f"{wanted} is not on PATH and neither" if clis else "no agent CLI replays these sessions and neither"
    choices = "|".join([f"{a}-cli" for a in AGENTS] + list(_SDK_ORDER))
    raise UserError(
        f"no model backend available for backend=auto: {missing} "
        "ANTHROPIC_API_KEY nor OPENAI_API_KEY is set; install/log in to the agent CLI, set a key, "
        f"or choose one with --backend {choices} "
        "(--backend sim runs the offline simulator; its proposals are marked simulated)",
        EXIT_PROVIDER,
    )


def resolve_config(
    config: Config,
    agents: Sequence[str],
    *,
    which: Which = shutil.which,
    env: Mapping[str, str] | None = None,
    harvested: bool = True,
) -> tuple[Config, AutoChoice | None]:
    """A copy of ``config`` with every ``auto`` role replaced by the chosen backend.

    Returns the config unchanged and ``None`` when no role uses ``auto``.
    """
    roles = {"target": "target_backend", "optimizer": "optimizer_backend"}
    auto_roles = [r for r in roles if is_auto(config.backend_for(r))]
    if not auto_roles:
        return config, None
    choice = choose_backend(
        agents, backend_options=config.models.backend_options, which=which, env=env, harvested=harvested
    )
    changes: dict[str, Any] = {roles[r]: choice.spec for r in auto_roles}
    if is_auto(config.models.backend):
        changes["backend"] = choice.spec
    return config.replace(**changes), choice
