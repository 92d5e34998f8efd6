"""Whose documents a night writes (documents/agents.py): each agent's own files, and for a
project used from several agents the ones they all read."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.documents.agents import AGENT_DOCUMENTS, documents_agent
from skillopt_sleep.documents.managed_block import AGENTS_MD_LIMIT, document_paths, load_documents
from skillopt_sleep.paths import TRANSCRIPT_SOURCES


def test_every_agent_whose_sessions_are_read_has_documents():
    assert set(TRANSCRIPT_SOURCES) <= set(AGENT_DOCUMENTS)


@pytest.mark.parametrize(
    ("agent", "skill", "memory"),
    [
        ("claude", ".claude/skills/s/SKILL.md", "CLAUDE.md"),
        ("codex", ".agents/skills/s/SKILL.md", "AGENTS.md"),
        ("copilot", ".agents/skills/s/SKILL.md", ".github/copilot-instructions.md"),
        ("gemini", ".agents/skills/s/SKILL.md", "GEMINI.md"),
        ("opencode", ".agents/skills/s/SKILL.md", "AGENTS.md"),
        ("pi", ".agents/skills/s/SKILL.md", "AGENTS.md"),
    ],
)
def test_each_agent_reads_its_own_memory_file_and_a_skills_folder_it_loads(tmp_path: Path, agent, skill, memory):
    assert document_paths(tmp_path, agent, "s") == (tmp_path / skill, tmp_path / memory)


def test_an_agents_md_keeps_within_the_size_codex_reads_whoever_it_is_written_for(tmp_path: Path):
    for agent in ("codex", "opencode", "pi"):
        assert load_documents(tmp_path, agent).memory.limits.max_bytes == AGENTS_MD_LIMIT
    for agent in ("claude", "gemini", "copilot"):
        assert load_documents(tmp_path, agent).memory.limits.max_bytes is None


@pytest.mark.parametrize(
    ("agents", "chosen"),
    [
        ([], "claude"),
        (["gemini"], "gemini"),
        (["copilot"], "copilot"),
        (["codex", "opencode", "pi"], "codex"),  # one AGENTS.md every one of them reads
        (["copilot", "pi"], "pi"),  # Copilot reads AGENTS.md too: Pi's documents serve both
        (["claude", "codex"], "claude"),  # no file both read by default
        (["gemini", "opencode"], "gemini"),
        (["nobody", "pi"], "pi"),
    ],
)
def test_the_documents_of_several_agents_are_those_they_all_read(agents, chosen):
    assert documents_agent(agents) == chosen
