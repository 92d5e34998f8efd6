"""The private Claude Code configuration directory a replay call runs with (no CLI needed)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillopt_sleep.backends.claude_home import PrivateClaudeConfig
from skillopt_sleep.backends.cli_common import ReplaySandbox


@pytest.fixture
def person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for name in ("CLAUDE_CONFIG_DIR", "CLAUDE_SECURESTORAGE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    return home


STATE = {
    "primaryApiKey": "sk-ant-api03-managed",
    "oauthAccount": {"emailAddress": "a@example.com"},
    "hasCompletedOnboarding": True,
    "projects": {"/secret/project": {"history": ["x"]}},
    "mcpServers": {"m": {"command": "/bin/true"}},
    "numStartups": 41,
}
SETTINGS = {
    "env": {"ANTHROPIC_BASE_URL": "https://gateway.example"},
    "apiKeyHelper": "/usr/bin/key-helper",
    "hooks": {"Stop": []},
    "permissions": {"allow": ["Bash"]},
}


def _private(environ: dict[str, str] | None = None) -> tuple[dict, dict, dict[str, str]]:
    with ReplaySandbox.create() as sandbox:
        config = PrivateClaudeConfig(sandbox, environ if environ is not None else os.environ)
        state = json.loads((config.path / ".claude.json").read_text(encoding="utf-8"))
        settings_file = config.path / "settings.json"
        settings = json.loads(settings_file.read_text(encoding="utf-8")) if settings_file.exists() else {}
        env = config.env()
        assert env["CLAUDE_CONFIG_DIR"] == str(config.path) and config.path.parent == sandbox.root
    return state, settings, env


def test_only_the_login_keys_reach_the_private_directory(person):
    (person / ".claude.json").write_text(json.dumps(STATE), encoding="utf-8")
    (person / ".claude" / "settings.json").write_text(json.dumps(SETTINGS), encoding="utf-8")
    state, settings, env = _private()
    assert state == {k: STATE[k] for k in ("primaryApiKey", "oauthAccount", "hasCompletedOnboarding")}
    assert settings == {k: SETTINGS[k] for k in ("env", "apiKeyHelper")}
    assert env["CLAUDE_SECURESTORAGE_CONFIG_DIR"] == ""  # Claude Code's default store: ~/.claude, keychain


def test_a_custom_config_dir_is_read_and_names_the_credential_store(person, tmp_path):
    custom = tmp_path / "work-claude"
    custom.mkdir()
    (custom / ".claude.json").write_text(json.dumps(STATE), encoding="utf-8")
    (person / ".claude.json").write_text(json.dumps({"primaryApiKey": "not this one"}), encoding="utf-8")
    state, _, env = _private({"CLAUDE_CONFIG_DIR": str(custom)})
    assert state["primaryApiKey"] == STATE["primaryApiKey"]
    assert env["CLAUDE_SECURESTORAGE_CONFIG_DIR"] == str(custom)
    _, _, env = _private({"CLAUDE_CONFIG_DIR": str(custom), "CLAUDE_SECURESTORAGE_CONFIG_DIR": "/mine"})
    assert env["CLAUDE_SECURESTORAGE_CONFIG_DIR"] == "/mine"  # the person's own choice is kept


def test_a_fifo_or_a_broken_file_is_no_login(person):
    os.mkfifo(person / ".claude.json")  # would block a plain open() forever
    (person / ".claude" / "settings.json").write_text("{not json", encoding="utf-8")
    state, settings, _ = _private()
    assert state == {} and settings == {}
