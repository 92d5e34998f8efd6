"""The private COPILOT_HOME of one Copilot CLI replay (backends/copilot_home.py): only the login
keys of the user's commented config.json, the documents as its instruction file, the environment
without the user's context variables, and a token refreshed during the call written back only while
the user's own login is unchanged. The whole call with a fake CLI is in test_copilot_cli.py."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from skillopt_sleep.backends.cli_common import ReplaySandbox
from skillopt_sleep.backends.copilot_home import (
    CONFIG_FILE,
    DROPPED_ENV,
    INSTRUCTIONS_FILE,
    PrivateCopilotHome,
    login_config,
    package_cache,
    read_config,
    replay_env,
)

HEADER = "// User settings belong in settings.json.\n// This file is managed automatically.\n"
LOGIN = {"loggedInUsers": [{"host": "https://github.com", "login": "octo"}], "copilotTokens": {"h:octo": "old"}}


def test_login_config_reads_the_clis_commented_json(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        HEADER
        + '{\n  "loggedInUsers": [{"host": "https://github.com", "login": "octo"}],\n  "firstLaunchAt": "x"\n}\n',
        encoding="utf-8",
    )
    assert login_config(tmp_path) == {"loggedInUsers": [{"host": "https://github.com", "login": "octo"}]}
    assert read_config(tmp_path / "config.json")[1] == HEADER


def test_login_config_keeps_only_login_keys(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({"loggedInUsers": [], "trustedFolders": ["/x"], "copilotTokens": {"a": "b"}}), encoding="utf-8"
    )
    assert login_config(tmp_path) == {"loggedInUsers": [], "copilotTokens": {"a": "b"}}
    (tmp_path / "config.json").write_text("{not json", encoding="utf-8")
    assert login_config(tmp_path) == {}
    (tmp_path / "config.json").write_text("[1, 2]", encoding="utf-8")
    assert login_config(tmp_path) == {}
    assert login_config(tmp_path / "missing") == {}


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    home = tmp_path / "user-copilot"
    home.mkdir()
    (home / CONFIG_FILE).write_text(HEADER + json.dumps({**LOGIN, "trustedFolders": ["/work"]}), encoding="utf-8")
    return home


def test_the_private_home_holds_the_login_and_the_documents_only(user_home: Path) -> None:
    with ReplaySandbox.create() as sandbox:
        home = PrivateCopilotHome(sandbox, user_home, "SKILL: be brief.")
        assert sorted(p.name for p in home.path.iterdir()) == [CONFIG_FILE, INSTRUCTIONS_FILE]
        assert json.loads((home.path / CONFIG_FILE).read_text(encoding="utf-8")) == LOGIN
        assert (home.path / INSTRUCTIONS_FILE).read_text(encoding="utf-8") == "SKILL: be brief."
        assert stat.S_IMODE(os.stat(home.path).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(home.path / CONFIG_FILE).st_mode) == 0o600
    with ReplaySandbox.create() as sandbox:  # no documents: no instruction file
        assert not (PrivateCopilotHome(sandbox, user_home, None).path / INSTRUCTIONS_FILE).exists()


def test_a_refreshed_token_is_written_back_keeping_the_header_and_the_rest(user_home: Path) -> None:
    with ReplaySandbox.create() as sandbox:
        home = PrivateCopilotHome(sandbox, user_home, None)
        refreshed = {**LOGIN, "copilotTokens": {"h:octo": "new"}}
        (home.path / CONFIG_FILE).write_text(json.dumps(refreshed), encoding="utf-8")
        home.sync_refreshed_login()
    text = (user_home / CONFIG_FILE).read_text(encoding="utf-8")
    assert text.startswith(HEADER)
    assert json.loads(text[len(HEADER) :]) == {**refreshed, "trustedFolders": ["/work"]}
    assert sorted(p.name for p in user_home.iterdir()) == [CONFIG_FILE]


def test_a_login_the_user_changed_meanwhile_is_not_overwritten(user_home: Path) -> None:
    with ReplaySandbox.create() as sandbox:
        home = PrivateCopilotHome(sandbox, user_home, None)
        theirs = json.dumps({"copilotTokens": {"h:other": "theirs"}})
        (user_home / CONFIG_FILE).write_text(theirs, encoding="utf-8")
        (home.path / CONFIG_FILE).write_text(
            json.dumps({**LOGIN, "copilotTokens": {"h:octo": "new"}}), encoding="utf-8"
        )
        home.sync_refreshed_login()
    assert (user_home / CONFIG_FILE).read_text(encoding="utf-8") == theirs


def test_the_replay_env_drops_the_users_context_and_keeps_their_package_cache(
    user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in DROPPED_ENV:
        monkeypatch.setenv(name, "/marker")
    monkeypatch.delenv("COPILOT_PKG_CACHE_HOME", raising=False)
    monkeypatch.delenv("COPILOT_CACHE_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert package_cache() != str(tmp_path / "cache" / "copilot")  # nothing unpacked there yet
    (tmp_path / "cache" / "copilot" / "pkg").mkdir(parents=True)
    assert package_cache() == str(tmp_path / "cache" / "copilot")
    with ReplaySandbox.create() as sandbox:
        env = replay_env(sandbox, PrivateCopilotHome(sandbox, user_home, None))
        assert not set(DROPPED_ENV) & set(env)
        assert env["COPILOT_HOME"] == str(sandbox.root / "copilot-home")
        assert env["COPILOT_PKG_CACHE_HOME"] == str(tmp_path / "cache" / "copilot")
        assert env["COPILOT_AUTO_UPDATE"] == "false" and env["XDG_CACHE_HOME"] == str(sandbox.root / "cache")
    monkeypatch.setenv("COPILOT_PKG_CACHE_HOME", "/opt/theirs")
    assert package_cache() is None  # the user's own setting stands
