"""Where the engine keeps things: one relocatable user home, the agents' data dirs, and each
project's own ``.skillopt-sleep/``."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from skillopt_sleep.paths import APP, PROJECT_DIR, claude_home, codex_home, project_dirs, user_dirs


def test_skillopt_sleep_home_relocates_config_state_and_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", "~/sleep/../sleep-home")
    dirs = user_dirs()
    root = (tmp_path / "sleep-home").resolve()
    assert (dirs.config, dirs.state, dirs.cache) == (root / "config", root / "state", root / "cache")
    state_files = [
        dirs.checkpoints,
        dirs.digests,
        dirs.history,
        dirs.archive,
        dirs.rejected_ledger,
        dirs.sessions_seen,
        dirs.logs,
        dirs.schedule_file,
        dirs.scheduled_runs,
    ]
    assert all(path.is_relative_to(root) for path in state_files)
    assert len(set(state_files)) == len(state_files)  # no two records share a file
    assert dirs.config_file == root / "config" / "config.toml"
    assert not root.exists()  # naming a place creates nothing


def test_without_it_the_platform_dirs_are_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SKILLOPT_SLEEP_HOME")
    dirs = user_dirs()
    assert dirs.config == Path(platformdirs.user_config_dir(APP))
    assert dirs.state == Path(platformdirs.user_state_dir(APP))
    assert dirs.cache == Path(platformdirs.user_cache_dir(APP))


def test_the_agents_data_dirs_follow_their_own_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert (claude_home(), codex_home()) == (tmp_path / ".claude", tmp_path / ".codex")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "~/claude-elsewhere")
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-elsewhere"))
    assert (claude_home(), codex_home()) == (tmp_path / "claude-elsewhere", tmp_path / "codex-elsewhere")


def test_project_state_lives_in_the_resolved_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "app")
    monkeypatch.chdir(tmp_path)
    dirs = project_dirs("link")
    assert dirs.project == (tmp_path / "app").resolve()
    assert dirs.root == dirs.project / PROJECT_DIR
    for path in (dirs.staging, dirs.backups, dirs.ledger, dirs.lock, dirs.tmp, dirs.config_file):
        assert path.parent == dirs.root
    assert project_dirs(tmp_path / "app") == dirs  # one project, one set of paths, however named
