"""A private Claude Code configuration directory for one headless call, on the user's own login.

Claude Code writes into its configuration directory on every start, ``--safe-mode`` or not: the
state file (``.claude.json``: start counts, tips, per-plugin usage) and its backups, the built-in
plugin store (rewritten each start, sometimes leaving ``*.json.tmp.*`` files), session entries.
A replay night runs the CLI hundreds of times, so each call gets its own ``CLAUDE_CONFIG_DIR``
inside the call's ``ReplaySandbox``, removed with it, holding only what login needs:

- ``.claude.json`` with the user's ``LOGIN_STATE_KEYS`` (the ``/login`` managed API key, the
  account, approved keys, finished onboarding);
- ``settings.json`` with the user's ``LOGIN_SETTINGS_KEYS`` (environment, key helpers, forced
  login method).

The login itself stays where the user's own CLI keeps it: ``CLAUDE_SECURESTORAGE_CONFIG_DIR``
points Claude Code's credential store (``.credentials.json``, or the macOS keychain entry named
after that directory) at the user's own configuration directory. A subscription token the CLI
refreshes during a call is therefore written where the user's own CLI reads it, never into a copy
that would leave theirs stale (an OAuth refresh replaces the refresh token, so a stale copy would be
a lost login). Claude Code takes its refresh lock in that same directory, so a night's parallel
calls and the user's own sessions refresh once between them. The empty value means Claude Code's default
location (``~/.claude`` and the unsuffixed keychain entry).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from skillopt_sleep.backends.cli_common import ReplaySandbox
from skillopt_sleep.files import open_regular

STATE_FILE = ".claude.json"
SETTINGS_FILE = "settings.json"
# The configuration files a login needs are small; a bigger one is read no further than this.
MAX_CONFIG_BYTES = 8 * 1024 * 1024
LOGIN_STATE_KEYS = ("primaryApiKey", "oauthAccount", "customApiKeyResponses", "hasCompletedOnboarding")
LOGIN_SETTINGS_KEYS = (
    "env",
    "apiKeyHelper",
    "awsAuthRefresh",
    "awsCredentialExport",
    "forceLoginMethod",
    "forceLoginOrgUUID",
)


def user_config_dir(environ: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """The user's Claude Code configuration directory (``CLAUDE_CONFIG_DIR`` or ``~/.claude``)."""
    configured = environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


def user_state_file(environ: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """The user's ``.claude.json``: inside ``CLAUDE_CONFIG_DIR`` when set, else in the home."""
    configured = environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() / STATE_FILE if configured else Path.home() / STATE_FILE


def credential_store(environ: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """The ``CLAUDE_SECURESTORAGE_CONFIG_DIR`` value that names the user's own credential store."""
    if "CLAUDE_SECURESTORAGE_CONFIG_DIR" in environ:  # the user chose one: keep it
        return environ["CLAUDE_SECURESTORAGE_CONFIG_DIR"]
    return environ.get("CLAUDE_CONFIG_DIR", "")


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON object from a regular file read with a bound; ``{}`` when missing or unreadable."""
    try:
        with open_regular(path) as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
        parsed = json.loads(data) if len(data) <= MAX_CONFIG_BYTES else None
    except (OSError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _subset(source: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: source[key] for key in keys if key in source}


class PrivateClaudeConfig:
    """``<sandbox>/claude-config``: the call's ``CLAUDE_CONFIG_DIR`` (see the module docstring)."""

    def __init__(self, sandbox: ReplaySandbox, environ: dict[str, str] | os._Environ[str] = os.environ):
        self.path = sandbox.root / "claude-config"
        self.path.mkdir(mode=0o700)
        self.store = credential_store(environ)
        state = _subset(read_json_object(user_state_file(environ)), LOGIN_STATE_KEYS)
        settings = _subset(read_json_object(user_config_dir(environ) / SETTINGS_FILE), LOGIN_SETTINGS_KEYS)
        _write_private(self.path / STATE_FILE, state)
        if settings:
            _write_private(self.path / SETTINGS_FILE, settings)

    def env(self) -> dict[str, str]:
        return {"CLAUDE_CONFIG_DIR": str(self.path), "CLAUDE_SECURESTORAGE_CONFIG_DIR": self.store}


def _write_private(path: Path, value: dict[str, Any]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(value, handle)
