"""The plugin files agree with each other and with the engine (no CLI needed)."""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest

from skillopt_sleep import __version__

REPO = Path(__file__).resolve().parents[2]
CLAUDE_PLUGIN = REPO / "plugins" / "claude-code"
CODEX_PLUGIN = REPO / "plugins" / "codex"
SKILLS = [
    CLAUDE_PLUGIN / "skills" / "skillopt-sleep",
    CLAUDE_PLUGIN / "skills" / "skillopt-sleep-guide",
    CODEX_PLUGIN / "skills" / "skillopt-sleep",
]
ACTIONS = ("status", "run", "start", "handoff", "review", "adopt", "revert", "schedule", "unschedule")


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "manifest", [CLAUDE_PLUGIN / ".claude-plugin" / "plugin.json", REPO / ".codex-plugin" / "plugin.json"]
)
def test_plugin_version_is_the_engine_version(manifest):
    data = _json(manifest)
    assert data["name"] == "skillopt-sleep"
    assert data["version"] == __version__


def test_marketplaces_point_at_the_plugins():
    claude = _json(REPO / ".claude-plugin" / "marketplace.json")
    (entry,) = claude["plugins"]
    assert entry["name"] == "skillopt-sleep"
    assert (REPO / entry["source"]).resolve() == CLAUDE_PLUGIN
    codex = _json(REPO / ".agents" / "plugins" / "marketplace.json")
    (entry,) = codex["plugins"]
    assert entry["name"] == "skillopt-sleep"
    # codex plugin add copies no symlinks, so the Codex plugin is the repository itself (it holds
    # the package source); its skills are the ones in plugins/codex
    assert (REPO / entry["source"]["path"]).resolve() == REPO
    manifest = _json(REPO / ".codex-plugin" / "plugin.json")
    assert (REPO / manifest["skills"]).resolve() == CODEX_PLUGIN / "skills"


def _frontmatter(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert match, f"{path} has no frontmatter"
    fields = {}
    for line in match.group(1).splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


@pytest.mark.parametrize("skill_dir", SKILLS, ids=lambda p: p.parent.parent.name)
def test_skills_have_valid_agent_skills_frontmatter(skill_dir):
    fields = _frontmatter(skill_dir / "SKILL.md")
    assert fields["name"] == skill_dir.name
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", fields["name"]) and len(fields["name"]) <= 64
    assert 0 < len(fields["description"]) <= 1024


def test_codex_skill_evolves_codex_documents():
    text = (CODEX_PLUGIN / "skills" / "skillopt-sleep" / "SKILL.md").read_text(encoding="utf-8")
    assert "--agent codex" in text and "AGENTS.md" in text and ".agents/skills/" in text


def test_hooks_use_the_standalone_hook():
    hooks = _json(CLAUDE_PLUGIN / "hooks" / "hooks.json")["hooks"]
    commands = [
        hook["command"] for event in ("SessionStart", "SessionEnd") for group in hooks[event] for hook in group["hooks"]
    ]
    assert commands == [
        'python3 -I -S "${CLAUDE_PLUGIN_ROOT}/scripts/hook.py" session-start --agent claude',
        'python3 -I -S "${CLAUDE_PLUGIN_ROOT}/scripts/hook.py" session-end --agent claude',
    ]
    assert (CLAUDE_PLUGIN / "scripts" / "hook.py").is_file()


def test_the_codex_plugin_bundles_the_session_start_hook():
    manifest = _json(REPO / ".codex-plugin" / "plugin.json")
    hooks = _json(REPO / manifest["hooks"])["hooks"]
    (command,) = [hook["command"] for group in hooks["SessionStart"] for hook in group["hooks"]]
    assert command == 'python3 -I -S "${PLUGIN_ROOT}/plugins/claude-code/scripts/hook.py" session-start --agent codex'
    assert (REPO / "plugins" / "claude-code" / "scripts" / "hook.py").is_file()


def _rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("| ") else []
        if len(cells) == 2:
            for name in re.findall(r"`([^`]*)`", cells[0]):
                rows[name] = re.findall(r"`([^`]*)`", cells[1])
    return rows


def test_the_claude_skill_prescribes_only_commands_its_allowed_tools_permit():
    """Claude Code permits a command without a prompt only when it matches ``allowed-tools`` and
    holds no quoted text or expansion it cannot check: each action is one plain ``skillopt-sleep``
    call (the real sessions are in test_claude_front_door.py)."""
    path = CLAUDE_PLUGIN / "skills" / "skillopt-sleep" / "SKILL.md"
    fields = _frontmatter(path)
    # handoff: sub-agents that write only the answer files (test_claude_handoff.py)
    assert fields["allowed-tools"] == "Bash(skillopt-sleep:*) Agent Edit(./.skillopt-sleep/handoff/answers/**)"
    assert fields["disable-model-invocation"] == "true"
    rows = _rows(path.read_text(encoding="utf-8"))
    assert set(ACTIONS) <= set(rows)
    for action in ACTIONS:
        commands = [c for c in rows[action] if not c.startswith("/")]
        assert commands, action
        for command in commands:
            assert re.fullmatch(r"skillopt-sleep [a-z-]+( --[a-z-]+( [a-z]+)?)*( <remaining arguments>)?", command), (
                command
            )
    assert not (
        CLAUDE_PLUGIN / "commands"
    ).exists()  # a command would be reachable only as /skillopt-sleep:skillopt-sleep


def test_the_plugins_carry_the_package_source_and_the_launcher():
    """No second copy of the package: the Claude plugin's engine/ links to the repository's files
    (claude plugin install copies their targets), and its launcher links to the Codex plugin's."""
    engine = CLAUDE_PLUGIN / "engine"
    entries = [p for p in engine.iterdir() if not p.name.startswith(".")]  # a tool's cache is not ours
    assert sorted(p.name for p in entries) == ["README.md", "pyproject.toml", "skillopt_sleep"]
    for entry in entries:
        assert entry.is_symlink() and entry.resolve() == REPO / entry.name
    launcher = CODEX_PLUGIN / "bin" / "skillopt-sleep"
    assert launcher.is_file() and not launcher.is_symlink() and os.access(launcher, os.X_OK)
    assert (CLAUDE_PLUGIN / "bin" / "skillopt-sleep").resolve() == launcher
    tree = ast.parse(launcher.read_text(encoding="utf-8"))
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= {
        "__future__",
        "hashlib",
        "json",
        "os",
        "re",
        "shutil",
        "subprocess",
        "sys",
        "tempfile",
        "time",
        "pathlib",
        "fcntl",
        "msvcrt",
    }, imported  # standard library only


def test_the_codex_skill_runs_the_launcher_next_to_it():
    text = (CODEX_PLUGIN / "skills" / "skillopt-sleep" / "SKILL.md").read_text(encoding="utf-8")
    assert "`skills/skillopt-sleep/SKILL.md` replaced by\n`bin/skillopt-sleep`" in text
    assert (CODEX_PLUGIN / "skills" / "skillopt-sleep" / ".." / ".." / "bin" / "skillopt-sleep").resolve().is_file()
    assert "pipx install <path of the clone>" in text and "pipx install skillopt-sleep" not in text
