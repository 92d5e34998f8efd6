"""Whose documents a night writes (documents/agents.py): each agent's own files, and for a
project used from several agents the ones they all read."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.documents.agents import AGENT_DOCUMENTS, documents_agent
from skillopt_sleep.documents.managed_block import START, AGENTS_MD_LIMIT, apply_edit, document_paths, load_documents
from skillopt_sleep.staging.adoption import adopt, revert
from skillopt_sleep.staging.stage import StagedFile, stage
from skillopt_sleep.types import Edit, NightReport
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
        ("cursor", ".agents/skills/s/SKILL.md", ".cursor/rules/skillopt-sleep-learned.mdc"),
        ("vscode-copilot", ".agents/skills/s/SKILL.md", ".github/copilot-instructions.md"),
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
        (["cursor"], "cursor"),
        (["cursor", "codex"], "codex"),  # Cursor reads AGENTS.md: one file for both
        (["vscode-copilot", "copilot"], "vscode-copilot"),  # the same instructions file
        (["cursor", "gemini"], "cursor"),
        (["cursor", "copilot"], "codex"),  # both read AGENTS.md, neither keeps its own memory there
        (["copilot", "copilot"], "copilot"),
    ],
)
def test_the_documents_of_several_agents_are_those_they_all_read(agents, chosen):
    assert documents_agent(agents) == chosen


def test_a_new_cursor_rule_file_is_read_on_every_request_and_holds_the_block(tmp_path: Path):
    docs = load_documents(tmp_path, "cursor")
    assert docs.memory.original is None
    proposed = apply_edit(docs, Edit("memory", "add", "Put the ticket number in every commit subject."))
    text = proposed.memory.encoded().decode("utf-8")
    front, body = text.split("\n---\n", 1)
    assert front.startswith("---\n") and "\nalwaysApply: true" in front and "\ndescription: " in front
    assert START in body and "- Put the ticket number in every commit subject." in body


def test_an_existing_cursor_rule_file_keeps_its_own_front_matter(tmp_path: Path):
    rule = tmp_path / ".cursor" / "rules" / "skillopt-sleep-learned.mdc"
    rule.parent.mkdir(parents=True)
    rule.write_bytes(b"---\ndescription: mine\nglobs: src/**\nalwaysApply: false\n---\nHand-written.\n")
    docs = load_documents(tmp_path, "cursor")
    proposed = apply_edit(docs, Edit("memory", "add", "Keep functions short."))
    assert proposed.memory.encoded().startswith(rule.read_bytes())


def test_a_cursor_rule_adopted_and_reverted_leaves_no_rules_folder(tmp_path: Path):
    project = tmp_path / "proj"
    (project / ".cursor").mkdir(parents=True)  # a folder the person has: kept
    docs = load_documents(project, "cursor")
    proposed = apply_edit(docs, Edit("memory", "add", "Put the ticket number in every commit subject."))
    report = NightReport(night_id="n1", project=str(project), mode="run", status="staged")
    memory = proposed.memory
    stage(project, report, [StagedFile("memory", memory.path, None, memory.encoded())])
    adopt(project)
    assert memory.path.read_bytes() == memory.encoded()
    revert(project)
    assert not memory.path.exists() and not (project / ".cursor" / "rules").exists()
    assert (project / ".cursor").is_dir()
