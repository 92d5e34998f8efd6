"""Removing the plugins, with the real CLIs of each release (throwaway HOME / CODEX_HOME): the
shell lines ``skillopt-sleep uninstall`` prints (``PLUGIN_REMOVAL``), run with ``/bin/sh -c``
after an install from a clone of the marketplace and a first use that set the plugin's engine up
in its data directory, leave neither plugin listed, enabled, configured, cached or holding data.

Claude Code's ``plugin uninstall`` deletes the plugin's data directory itself; Codex's ``plugin
remove`` leaves ``$CODEX_HOME/plugins/data/<plugin>-<marketplace>/``, so its line removes it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from skillopt_sleep.commands.uninstall import PLUGIN_REMOVAL
from tests.support.real_clients import RELEASES, client_env, real_cli

pytestmark = pytest.mark.real_clis  # drives the real claude / codex CLIs (scripts/install_real_clis.sh)

REPO = Path(__file__).resolve().parents[2]
PLUGIN = "skillopt-sleep@skillopt-sleep"
DATA = Path("plugins") / "data" / "skillopt-sleep-skillopt-sleep"


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    out = subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=str(cwd), timeout=120, stdin=subprocess.DEVNULL
    )
    assert out.returncode == 0, " ".join(argv[1:]) + ": " + out.stdout + out.stderr
    return out


def _clone(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    for rel in (".claude-plugin", ".agents", "plugins"):
        shutil.copytree(REPO / rel, copy / rel)
    subprocess.run(["git", "init", "-q", str(copy)], check=True, timeout=60)
    return copy


def _with_cli_on_path(env: dict[str, str], cli: str) -> dict[str, str]:
    return {**env, "PATH": os.pathsep.join([str(Path(cli).parent), env["PATH"]])}


def _engine_set_up(data: Path) -> None:
    """What the plugin's first use leaves in its data directory (the engine's virtualenv)."""
    (data / "engine" / "bin").mkdir(parents=True, exist_ok=True)
    (data / "engine" / "bin" / "python").write_text("", encoding="utf-8")


@pytest.mark.parametrize("release", RELEASES)
def test_claude_plugin_removal(release, tmp_path):
    claude = real_cli("claude", release)
    env = _with_cli_on_path(client_env(tmp_path), claude)
    repo = _clone(tmp_path)
    _run([claude, "plugin", "marketplace", "add", str(repo)], env, tmp_path)
    _run([claude, "plugin", "install", PLUGIN], env, tmp_path)
    data = Path(env["HOME"]) / ".claude" / DATA
    _engine_set_up(data)
    assert any(p["id"] == PLUGIN for p in json.loads(_run([claude, "plugin", "list", "--json"], env, tmp_path).stdout))
    line = next(line for line in PLUGIN_REMOVAL if line.startswith("claude "))
    _run(["/bin/sh", "-c", line], env, tmp_path)
    assert not any(
        p["id"] == PLUGIN for p in json.loads(_run([claude, "plugin", "list", "--json"], env, tmp_path).stdout)
    )
    settings = json.loads((Path(env["HOME"]) / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert PLUGIN not in settings.get("enabledPlugins", {})
    assert "skillopt-sleep" not in settings.get("extraKnownMarketplaces", {})
    assert not data.exists()


@pytest.mark.parametrize("release", RELEASES)
def test_codex_plugin_removal(release, tmp_path):
    codex = real_cli("codex", release)
    env = _with_cli_on_path(client_env(tmp_path), codex)
    repo = _clone(tmp_path)
    _run([codex, "plugin", "marketplace", "add", str(repo)], env, tmp_path)
    installed = Path(
        json.loads(_run([codex, "plugin", "add", PLUGIN, "--json"], env, tmp_path).stdout)["installedPath"]
    )
    assert installed.is_dir()
    data = Path(env["CODEX_HOME"]) / DATA
    _engine_set_up(data)
    line = next(line for line in PLUGIN_REMOVAL if line.startswith("codex "))
    _run(["/bin/sh", "-c", line], env, tmp_path)
    listing = json.loads(_run([codex, "plugin", "list", "--json"], env, tmp_path).stdout)
    assert not any(p["pluginId"] == PLUGIN for p in listing["installed"])
    assert not installed.exists() and not data.exists()
    config = (Path(env["CODEX_HOME"]) / "config.toml").read_text(encoding="utf-8")
    assert "skillopt-sleep" not in config
