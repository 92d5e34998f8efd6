"""A private COPILOT_HOME for one replay of the GitHub Copilot CLI (``copilot_cli``): only what the
user's login needs, copied from their own ``config.json``, and the environment the call runs in.

The CLI writes ``//`` comment lines above the JSON of its config.json; they are read past and kept
when a token the CLI refreshed during the call is written back to the user's file.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from skillopt_sleep.backends.cli_common import ReplaySandbox
from skillopt_sleep.files import read_regular_text
from skillopt_sleep.paths import copilot_home

INSTRUCTIONS_FILE = "copilot-instructions.md"  # the user-level instruction file the CLI reads
CONFIG_FILE = "config.json"

# The config.json keys a replay keeps: which account is signed in, and its token when the CLI
# had to store it in plaintext (no system keychain). Everything else there is UI state and trust.
LOGIN_KEYS = ("lastLoggedInUser", "loggedInUsers", "copilotTokens")

# The user's variables that would bring their own context, tools or logging into a replay.
DROPPED_ENV = (
    "COPILOT_CUSTOM_INSTRUCTIONS_DIRS",
    "COPILOT_SKILLS_DIRS",
    "COPILOT_ALLOW_ALL",
    "COPILOT_PROMPT_MODE_REPO_HOOKS",
    "COPILOT_PROMPT_MODE_WORKSPACE_MCP",
    "COPILOT_PROMPT_MODE_EXTENSIONS",
    "COPILOT_ENABLE_BUILTIN_GITHUB_MCP",
    "COPILOT_EVENTS_LOG_DIRECTORY",
    "COPILOT_EVENTS_LOG_INCLUDE_SUBAGENTS",
    "COPILOT_PROCESS_LOG_FILE",
    "COPILOT_OTEL_ENABLED",
    "COPILOT_OTEL_FILE_EXPORTER_PATH",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)


def package_cache() -> str | None:
    """Where the user's CLI has unpacked its package (the loader's own search order), so a private
    home and cache do not make it unpack 200 MB again; None when the user set it themselves or
    nothing is unpacked yet."""
    if os.environ.get("COPILOT_PKG_CACHE_HOME") or os.environ.get("COPILOT_CACHE_HOME"):
        return None
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    candidates = [cache / "copilot", copilot_home()]
    if sys.platform == "darwin":
        candidates.insert(0, Path.home() / "Library" / "Caches" / "copilot")
    return next((str(c) for c in candidates if (c / "pkg").is_dir()), None)


def read_config(path: Path) -> tuple[dict[str, Any], str]:
    """A config.json and the ``//`` comment lines the CLI writes above its JSON ("This file is
    managed automatically"); an empty dict when it is missing or unreadable."""
    try:
        text = read_regular_text(path, 4 * 1024 * 1024)
    except (OSError, UnicodeDecodeError):
        return {}, ""
    lines = text.splitlines(keepends=True)
    header = "".join(line for line in lines if line.lstrip().startswith("//"))
    try:
        config = json.loads("".join(line for line in lines if not line.lstrip().startswith("//")))
    except json.JSONDecodeError:
        return {}, header
    return (config, header) if isinstance(config, dict) else ({}, header)


def login_config(user_home: Path) -> dict[str, Any]:
    """The ``LOGIN_KEYS`` of the user's config.json (nothing when it is missing or unreadable)."""
    config, _ = read_config(user_home / CONFIG_FILE)
    return {key: config[key] for key in LOGIN_KEYS if key in config}


class PrivateCopilotHome:
    """A COPILOT_HOME inside the sandbox with only what login needs, and the documents as its
    instruction file (see the module docstring)."""

    def __init__(self, sandbox: ReplaySandbox, user_home: Path, instructions: str | None):
        self.user_home = user_home
        self.path = sandbox.root / "copilot-home"
        self.path.mkdir(mode=0o700)
        self.login = login_config(user_home)
        _write_private(self.path / CONFIG_FILE, json.dumps(self.login))
        if instructions is not None:
            _write_private(self.path / INSTRUCTIONS_FILE, instructions)

    def sync_refreshed_login(self) -> None:
        """Keep a token the CLI rewrote during the call, unless the user's own login changed
        meanwhile (then theirs is newer). Only the login keys of their config.json change."""
        if not self.login:
            return
        refreshed = login_config(self.path)
        if not refreshed or refreshed == self.login:
            return
        target = self.user_home / CONFIG_FILE
        current, header = read_config(target)
        if {k: current[k] for k in LOGIN_KEYS if k in current} != self.login:
            return
        current.update(refreshed)
        staging = self.user_home / f".{CONFIG_FILE}.skillopt-sleep.tmp"
        try:
            _write_private(staging, header + json.dumps(current, indent=2) + "\n", sync=True)
            os.replace(staging, target)
        except OSError:
            return


def _write_private(path: Path, text: str, *, sync: bool = False) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
        if sync:
            handle.flush()
            os.fsync(handle.fileno())


def replay_env(sandbox: ReplaySandbox, home: PrivateCopilotHome) -> dict[str, str]:
    env = sandbox.env(
        {
            "COPILOT_HOME": str(home.path),
            "XDG_CACHE_HOME": str(sandbox.root / "cache"),
            "COPILOT_AUTO_UPDATE": "false",
        }
    )
    cache = package_cache()
    if cache:
        env["COPILOT_PKG_CACHE_HOME"] = cache
    for name in DROPPED_ENV:
        env.pop(name, None)
    return env
