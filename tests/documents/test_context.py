"""What an agent loads beside the documents a night writes (documents/context.py): read, shown to
the target and the optimizer, fingerprinted, bounded, and never written."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from skillopt_sleep.config import Config
from skillopt_sleep.documents import context
from skillopt_sleep.documents.managed_block import load_documents
from skillopt_sleep.documents.optimizer_view import optimizer_view
from skillopt_sleep.night import NightOptions, run_night

from tests.support.tasks import make_tasks, write_tasks_file

# (file under .github/instructions, its text, whether the Copilot CLI puts it whole into every
# request: observed with the real CLI, tests/documents/test_context_real_copilot.py)
INSTRUCTION_FILES = [
    ("all.instructions.md", '---\napplyTo: "**"\n---\nMARK_ALL\n', True),
    ("every.instructions.md", '---\napplyTo: "**/*"\n---\nMARK_EVERY\n', True),
    ("star.instructions.md", "---\napplyTo: '*'\n---\nMARK_STAR\n", True),
    ("bare.instructions.md", "---\napplyTo: **\n---\nMARK_BARE\n", True),
    ("described.instructions.md", "---\ndescription: style\n---\nMARK_DESCRIBED\n", True),
    ("sub/plain.instructions.md", "MARK_PLAIN\n", True),
    ("py.instructions.md", '---\napplyTo: "**/*.py"\n---\nMARK_PY\n', False),
    ("list.instructions.md", '---\napplyTo: "src/**,**"\n---\nMARK_LIST\n', False),
    ("notes.md", "MARK_NOT_AN_INSTRUCTION_FILE\n", False),
]


def copilot_project(root: Path) -> Path:
    project = root / "proj"
    folder = project / ".github" / "instructions"
    for name, text, _ in INSTRUCTION_FILES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    (project / ".github" / "copilot-instructions.md").write_text("MARK_REPO_WIDE\n", encoding="utf-8")
    (project / "AGENTS.md").write_text("MARK_AGENTS_MD\n", encoding="utf-8")
    return project


def markers(text: str) -> set[str]:
    return {word for word in text.replace("\n", " ").split() if word.startswith("MARK_")}


def test_copilot_context_is_agents_md_and_the_instruction_files_for_every_file(tmp_path: Path):
    project = copilot_project(tmp_path)
    docs = load_documents(project, "copilot")
    expected = sorted(f".github/instructions/{n}" for n, _, on in INSTRUCTION_FILES if on)
    assert [c.name for c in docs.context] == ["AGENTS.md", *expected]
    told = docs.prompt_prefix()
    wanted = {"MARK_REPO_WIDE", "MARK_AGENTS_MD"} | {markers(t).pop() for _, t, on in INSTRUCTION_FILES if on}
    assert markers(told) == wanted
    # the order the agent reads them in: its memory, then the context, then the skill
    assert told.index("MARK_REPO_WIDE") < told.index("MARK_AGENTS_MD") < told.index("MARK_ALL")
    assert told.index("MARK_PLAIN") < told.index('role="skill"')
    assert 'name=".github/instructions/all.instructions.md" role="context"' in told


def test_the_optimizer_sees_the_context_as_read_only(tmp_path: Path):
    docs = load_documents(copilot_project(tmp_path), "copilot")
    view = optimizer_view(docs)
    assert "MARK_ALL" in view and "MARK_PY" not in view
    assert view.count("read-only context the agent loads") == len(docs.context)
    # a long one is cut like the documents, saying how much is left out
    (tmp_path / "proj" / "AGENTS.md").write_text("MARK_AGENTS_MD\n" + "word " * 3000, encoding="utf-8")
    cut = optimizer_view(load_documents(tmp_path / "proj", "copilot"), max_chars=2000)
    assert "MARK_AGENTS_MD" in cut and "more characters of AGENTS.md not shown" in cut


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "opencode", "pi"])
def test_agents_that_load_none_of_these_files_have_no_context(tmp_path: Path, agent: str):
    docs = load_documents(copilot_project(tmp_path), agent)
    assert docs.context == ()
    assert "MARK_ALL" not in docs.prompt_prefix()


def test_cursor_context_is_agents_md_and_the_rules_applied_always_but_its_own(tmp_path: Path):
    project = tmp_path / "proj"
    rules = project / ".cursor" / "rules"
    rules.mkdir(parents=True)
    (rules / "always.mdc").write_text("---\nalwaysApply: true\n---\nMARK_ALWAYS\n", encoding="utf-8")
    (rules / "sometimes.mdc").write_text('---\nalwaysApply: false\nglobs: "*.py"\n---\nMARK_SOMETIMES\n')
    (rules / "skillopt-sleep-learned.mdc").write_text("---\nalwaysApply: true\n---\nMARK_OWN\n", encoding="utf-8")
    (project / "AGENTS.md").write_text("MARK_AGENTS_MD\n", encoding="utf-8")
    (project / "CLAUDE.md").write_text("MARK_CLAUDE_MD\n", encoding="utf-8")
    docs = load_documents(project, "cursor")
    assert [c.name for c in docs.context] == ["AGENTS.md", ".cursor/rules/always.mdc"]
    assert markers(docs.prompt_prefix()) == {"MARK_OWN", "MARK_AGENTS_MD", "MARK_ALWAYS"}
    cli = load_documents(project, "cursor-cli")  # the CLI reads CLAUDE.md at the root as well
    assert [c.name for c in cli.context] == ["AGENTS.md", "CLAUDE.md", ".cursor/rules/always.mdc"]


def test_the_fingerprint_follows_the_context_and_is_unchanged_without_one(tmp_path: Path):
    project = copilot_project(tmp_path)
    plain = load_documents(project, "claude")
    legacy = hashlib.sha256((plain.skill.text + "\0" + plain.memory.text).encode()).hexdigest()[:16]
    assert plain.fingerprint() == legacy  # evidence pooled before keeps its key
    before = load_documents(project, "copilot").fingerprint()
    (project / ".github" / "instructions" / "all.instructions.md").write_text('---\napplyTo: "**"\n---\nchanged\n')
    assert load_documents(project, "copilot").fingerprint() != before


def test_a_link_out_of_the_project_a_fifo_and_an_oversized_file_are_left_out_and_said_so(tmp_path: Path):
    project = copilot_project(tmp_path)
    folder = project / ".github" / "instructions"
    secret = tmp_path / "outside.md"
    secret.write_text("MARK_OUTSIDE\n", encoding="utf-8")
    (folder / "link.instructions.md").symlink_to(secret)
    os.mkfifo(folder / "pipe.instructions.md")
    (folder / "big.instructions.md").write_text("MARK_BIG\n" + "x" * context.MAX_BYTES, encoding="utf-8")
    outside_dir = tmp_path / "elsewhere"
    outside_dir.mkdir()
    (outside_dir / "far.instructions.md").write_text("MARK_FAR\n", encoding="utf-8")
    (folder / "linked-folder").symlink_to(outside_dir, target_is_directory=True)
    docs = load_documents(project, "copilot")
    told = docs.prompt_prefix()
    assert not markers(told) & {"MARK_OUTSIDE", "MARK_BIG", "MARK_FAR"}
    skipped = "\n".join(docs.context_skipped)
    assert "link.instructions.md" in skipped and "outside the project" in skipped
    assert "pipe.instructions.md" in skipped and "big.instructions.md" in skipped
    assert "far.instructions.md" not in skipped  # a linked folder is not walked at all


def test_at_most_max_files_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(context, "MAX_FILES", 3)
    docs = load_documents(copilot_project(tmp_path), "copilot")
    assert len(docs.context) == 3
    assert any("more than 3 context files" in line for line in docs.context_skipped)


def test_a_night_for_copilot_writes_its_memory_and_leaves_every_context_file_as_it_was(tmp_path: Path):
    project = copilot_project(tmp_path)
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file() and "instructions" in p.parts}
    before[project / "AGENTS.md"] = (project / "AGENTS.md").read_bytes()
    tasks = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    config = Config(backend="sim:correct=1,harmful=0,seed=1", agent="copilot", retries=2, retry_base_delay=0.0)
    report = run_night(NightOptions(project=project, config=config, mode="run", tasks_file=tasks, auto_adopt=True))
    assert report.accepted_edits, report.notes  # something was written, so the test can see where
    assert any(note.startswith("read as context, never written: AGENTS.md, ") for note in report.notes)
    written = {
        p
        for p in project.rglob("*")
        if p.is_file() and ".skillopt-sleep" not in p.parts and b"skillopt-sleep:learned:start" in p.read_bytes()
    }
    allowed = {project / ".github" / "copilot-instructions.md"} | set(project.glob(".agents/skills/*/SKILL.md"))
    assert written and written <= allowed
    assert {p: p.read_bytes() for p in before} == before
