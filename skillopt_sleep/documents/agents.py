"""Which documents each agent reads, and so which a night writes for it.

Each agent reads a memory file at the project's root on every turn, and loads a skill's SKILL.md
from a skills folder when its description fits (each from the agent's own documentation):

- Claude Code: ``CLAUDE.md``; skills in ``.claude/skills/``.
- Codex: ``AGENTS.md``; skills in ``.agents/skills/``.
- GitHub Copilot CLI: ``.github/copilot-instructions.md`` (and ``AGENTS.md``); skills in
  ``.github/skills/``, ``.claude/skills/`` or ``.agents/skills/``.
- Gemini CLI: ``GEMINI.md`` (``AGENTS.md`` only when a setting names it); skills in
  ``.gemini/skills/`` or its alias ``.agents/skills/``.
- OpenCode: ``AGENTS.md``; skills in ``.opencode/skills/``, ``.claude/skills/`` or ``.agents/skills/``.
- Pi: ``AGENTS.md``; skills in ``.pi/skills/`` or ``.agents/skills/``.
- Cursor: project rules, ``.cursor/rules/*.mdc`` (one with ``alwaysApply: true`` in its front matter
  is read on every request), and ``AGENTS.md``; skills in ``.cursor/skills/`` or ``.agents/skills/``.
  The Cursor CLI reads the same rules and ``AGENTS.md`` (and ``CLAUDE.md``), so its documents are the
  editor's.
- VS Code Copilot Chat: ``.github/copilot-instructions.md`` and ``AGENTS.md`` (both always on, the
  second unless ``chat.useAgentsMdFile`` is turned off); skills in ``.github/skills/``,
  ``.claude/skills/`` or ``.agents/skills/``.

So every agent but Claude Code reads the skills in ``.agents/skills/`` (and ``~/.agents/skills/``
for a user-level skill): a night writes its skill there for all of them, once. When a project is
used from several agents, a night writes the one set of documents they all read where there is one
(``AGENTS.md`` for Codex, both Copilots, OpenCode, Pi and Cursor), never a rule twice. What else an
agent loads on every request (Copilot's instruction files for every file, Cursor's rules applied
always) is read as context, never written (``context.py``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AgentDocuments:
    label: str  # how a person calls the agent
    memory: str  # the memory file, relative to the project
    skills: str  # the folder of skills, relative to the project (or to the home, for a user-level skill)
    reads_agents_md: bool  # reads AGENTS.md at the project's root without being told to


AGENT_DOCUMENTS: dict[str, AgentDocuments] = {
    "claude": AgentDocuments("Claude Code", "CLAUDE.md", ".claude/skills", reads_agents_md=False),
    "codex": AgentDocuments("Codex", "AGENTS.md", ".agents/skills", reads_agents_md=True),
    "copilot": AgentDocuments(
        "GitHub Copilot CLI", ".github/copilot-instructions.md", ".agents/skills", reads_agents_md=True
    ),
    "gemini": AgentDocuments("Gemini CLI", "GEMINI.md", ".agents/skills", reads_agents_md=False),
    "opencode": AgentDocuments("OpenCode", "AGENTS.md", ".agents/skills", reads_agents_md=True),
    "pi": AgentDocuments("Pi", "AGENTS.md", ".agents/skills", reads_agents_md=True),
    "cursor": AgentDocuments(
        "Cursor", ".cursor/rules/skillopt-sleep-learned.mdc", ".agents/skills", reads_agents_md=True
    ),
    "cursor-cli": AgentDocuments(
        "Cursor CLI", ".cursor/rules/skillopt-sleep-learned.mdc", ".agents/skills", reads_agents_md=True
    ),
    "vscode-copilot": AgentDocuments(
        "VS Code Copilot Chat", ".github/copilot-instructions.md", ".agents/skills", reads_agents_md=True
    ),
}
AGENTS_MD = "AGENTS.md"


def documents_agent(agents: list[str]) -> str:
    """Whose documents a night writes when its sessions came from ``agents`` (in harvest order):
    the one agent's; for several, those they all read — their one memory file when they share it,
    else ``AGENTS.md`` when every one reads it (an ``AGENTS.md`` reader's documents, Codex's when
    none of them keeps its own memory there); else Claude Code's when it is among them (as with no
    sessions at all), else the first agent's."""
    known = [a for a in agents if a in AGENT_DOCUMENTS]
    if len({AGENT_DOCUMENTS[a].memory for a in known}) == 1:
        return known[0]
    if known and all(AGENT_DOCUMENTS[a].reads_agents_md for a in known):
        return next((a for a in known if AGENT_DOCUMENTS[a].memory == AGENTS_MD), "codex")
    if not known or "claude" in known:
        return "claude"
    return known[0]
