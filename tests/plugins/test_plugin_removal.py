"""Removing the plugins, with the real CLIs of each release (throwaway HOME / CODEX_HOME): the
commands the README gives, after an install from a clone of the marketplace, leave neither plugin
listed, enabled, cached in use or holding data.

Claude Code: ``claude plugin uninstall skillopt-sleep@skillopt-sleep`` (also deletes the plugin's
data directory, where its engine lives) then ``claude plugin marketplace remove skillopt-sleep``.
Codex: ``codex plugin remove skillopt-sleep@skillopt-sleep`` then ``codex plugin marketplace remove
skillopt-sleep``.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from skillopt_sleep.commands.uninstall import PLUGIN_REMOVAL
from tests.support.real_clients import RELEASES, client_env, real_cli

REPO = Path(__file__).resolve().parents[2]
PLUGIN = "skillopt-sleep@skillopt-sleep"
# the commands ``skillopt-sleep uninstall`` prints, each line two commands joined by ``&&``
CLAUDE_REMOVAL, CODEX_REMOVAL = ([shlex.split(part)[1:] for part in line.split(" && ")] for line in PLUGIN_REMOVAL)


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(cwd), timeout=120,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, " ".join(argv[1:]) + ": " + out.stdout + out.stderr
    return out


def _clone(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    for rel in (".claude-plugin", ".agents", "plugins"):
        shutil.copytree(REPO / rel, copy / rel)
    subprocess.run(["git", "init", "-q", str(copy)], check=True, timeout=60)
    return copy


@pytest.mark.parametrize("release", RELEASES)
def test_claude_plugin_removal(release, tmp_path):
    claude = real_cli("claude", release)
    env = client_env(tmp_path)
    repo = _clone(tmp_path)
    _run([claude, "plugin", "marketplace", "add", str(repo)], env, tmp_path)
    _run([claude, "plugin", "install", PLUGIN], env, tmp_path)
    data = Path(env["HOME"]) / ".claude" / "plugins" / "data" / "skillopt-sleep-skillopt-sleep"
    data.mkdir(parents=True, exist_ok=True)
    (data / "engine-marker").write_text("the plugin's own engine lives here\n", encoding="utf-8")
    assert any(p["id"] == PLUGIN for p in json.loads(_run([claude, "plugin", "list", "--json"], env, tmp_path).stdout))
    for command in CLAUDE_REMOVAL:
        _run([claude, *command], env, tmp_path)
    assert not any(p["id"] == PLUGIN for p in json.loads(_run([claude, "plugin", "list", "--json"], env, tmp_path).stdout))
    settings = json.loads((Path(env["HOME"]) / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert PLUGIN not in settings.get("enabledPlugins", {})
    assert "skillopt-sleep" not in settings.get("extraKnownMarketplaces", {})
    assert not data.exists()


@pytest.mark.parametrize("release", RELEASES)
def test_codex_plugin_removal(release, tmp_path):
    codex = real_cli("codex", release)
    env = client_env(tmp_path)
    repo = _clone(tmp_path)
    _run([codex, "plugin", "marketplace", "add", str(repo)], env, tmp_path)
    installed = Path(json.loads(_run([codex, "plugin", "add", PLUGIN, "--json"], env, tmp_path).stdout)["installedPath"])
    assert installed.is_dir()
    for command in CODEX_REMOVAL:
        _run([codex, *command], env, tmp_path)
    listing = json.loads(_run([codex, "plugin", "list", "--json"], env, tmp_path).stdout)
    assert not any(p["pluginId"] == PLUGIN for p in listing["installed"])
    assert not installed.exists()
    config = (Path(env["CODEX_HOME"]) / "config.toml").read_text(encoding="utf-8")
    assert "skillopt-sleep" not in config
