"""The plugin files agree with each other and with the engine (no CLI needed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillopt_sleep import __version__

REPO = Path(__file__).resolve().parents[2]
CLAUDE_PLUGIN = REPO / "plugins" / "claude-code"
CODEX_PLUGIN = REPO / "plugins" / "codex"
SKILLS = [CLAUDE_PLUGIN / "skills" / "skillopt-sleep-guide", CODEX_PLUGIN / "skills" / "skillopt-sleep"]


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("manifest", [CLAUDE_PLUGIN / ".claude-plugin" / "plugin.json",
                                      CODEX_PLUGIN / ".codex-plugin" / "plugin.json"])
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
    assert (REPO / entry["source"]["path"]).resolve() == CODEX_PLUGIN


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


def test_hooks_and_command_use_the_runner():
    hooks = _json(CLAUDE_PLUGIN / "hooks" / "hooks.json")["hooks"]
    commands = [hook["command"] for event in ("SessionStart", "SessionEnd")
                for group in hooks[event] for hook in group["hooks"]]
    assert commands == ['python3 -I -S "${CLAUDE_PLUGIN_ROOT}/scripts/hook.py" session-start --agent claude',
                        'python3 -I -S "${CLAUDE_PLUGIN_ROOT}/scripts/hook.py" session-end --agent claude']
    assert (CLAUDE_PLUGIN / "scripts" / "hook.py").is_file()
    command = (CLAUDE_PLUGIN / "commands" / "skillopt-sleep.md").read_text(encoding="utf-8")
    for action in ("status", "run", "review", "adopt", "revert", "schedule", "unschedule"):
        assert f"| `{action}`" in command or f"`{action}` |" in command
    assert "engine.py\" night" in command and "engine review --project" in command
    assert (CLAUDE_PLUGIN / "scripts" / "engine.py").is_file()
