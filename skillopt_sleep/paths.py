"""Every on-disk location the engine uses.

User-level directories come from platformdirs; ``SKILLOPT_SLEEP_HOME`` relocates all of them
under one directory (tests, the demo). Project-level state lives in ``<project>/.skillopt-sleep/``.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP = "skillopt-sleep"
PROJECT_DIR = ".skillopt-sleep"
# Our own headless replays (claude-cli / codex-cli backends) run in temp dirs with this prefix, so
# the harvester can recognise and skip any session they might leave behind.
REPLAY_DIR_PREFIX = "skillopt-sleep-replay-"


@dataclass(frozen=True)
class UserDirs:
    config: Path
    state: Path
    cache: Path

    @property
    def config_file(self) -> Path:
        return self.config / "config.toml"

    @property
    def checkpoints(self) -> Path:
        return self.state / "checkpoints"

    @property
    def digests(self) -> Path:
        return self.state / "digests"

    @property
    def history(self) -> Path:
        return self.state / "history.jsonl"

    @property
    def archive(self) -> Path:
        return self.state / "tasks-archive.jsonl"

    @property
    def rejected_ledger(self) -> Path:
        return self.state / "rejected-edits.jsonl"

    @property
    def edit_evidence(self) -> Path:
        return self.state / "edit-evidence.json"  # val samples pooled across nights (edit_evidence)

    @property
    def sessions_seen(self) -> Path:
        return self.state / "sessions-seen.jsonl"  # written by the agents' session-end hooks

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    @property
    def notices(self) -> Path:
        """The precomputed session-start notices (``notices.py``) the agents' hooks read."""
        return self.state / "notices"

    def project_notice(self, project: str | os.PathLike[str]) -> Path:
        """One project's notice file, kept here rather than in the project, where a cloned
        repository could plant one."""
        return self.notices / f"project-{notice_key(project)}.json"

    @property
    def schedule_notice(self) -> Path:
        """The scheduled nights' notice (a missed night), shown in every project."""
        return self.notices / "schedule.json"

    @property
    def schedule_file(self) -> Path:
        """The nightly schedule: registered projects and each one's recorded configuration."""
        return self.config / "schedule.json"

    @property
    def scheduled_runs(self) -> Path:
        """Logs and the last result of scheduled nights."""
        return self.state / "scheduled"


def user_dirs() -> UserDirs:
    home = os.environ.get("SKILLOPT_SLEEP_HOME")
    if home:
        root = Path(home).expanduser().resolve()
        return UserDirs(root / "config", root / "state", root / "cache")
    return UserDirs(
        Path(platformdirs.user_config_dir(APP)),
        Path(platformdirs.user_state_dir(APP)),
        Path(platformdirs.user_cache_dir(APP)),
    )


def project_fingerprint(project: str | os.PathLike[str]) -> str:
    """The sha-256 (hex) of the project's resolved path, case-folded where the file system is.
    The plugins' hook script computes the same without the engine."""
    resolved = os.path.normcase(str(Path(project).expanduser().resolve()))
    return hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()


def notice_key(project: str | os.PathLike[str]) -> str:
    """The name a project's notice file goes by: the start of its fingerprint."""
    return project_fingerprint(project)[:16]


# The agents whose sessions a night can read, by the name ``--source``, ``--<name>-home`` and the
# transcripts' ``source`` field use: how a person calls the agent, and where its data dir is unless
# one is given. ``sources.SOURCES`` has one reader for each (a test keeps the two equal); the table is
# low in the package so that the config and the command line know the names without the readers.
TRANSCRIPT_SOURCES: dict[str, tuple[str, str]] = {
    "claude": ("Claude Code", "$CLAUDE_CONFIG_DIR or ~/.claude"),
    "codex": ("Codex", "$CODEX_HOME or ~/.codex"),
    "copilot": ("GitHub Copilot CLI", "$COPILOT_HOME or ~/.copilot"),
    "cursor": ("Cursor", "Cursor's User dir, e.g. ~/.config/Cursor/User"),
    "cursor-cli": ("Cursor CLI", "$CURSOR_CONFIG_DIR or ~/.cursor"),
    "gemini": ("Gemini CLI", "$GEMINI_CLI_HOME/.gemini or ~/.gemini"),
    "opencode": ("OpenCode", "$XDG_DATA_HOME/opencode or ~/.local/share/opencode"),
    "pi": ("Pi", "$PI_CODING_AGENT_DIR or ~/.pi/agent"),
    "vscode-copilot": ("VS Code Copilot Chat", "VS Code's User dir, e.g. ~/.config/Code/User"),
}


def home_setting(name: str) -> str:
    """The setting (and ``--<name>-home`` flag's dest) naming an agent's data dir: ``<name>_home``."""
    return name.replace("-", "_") + "_home"


def claude_home() -> Path:
    """Claude Code's data directory (``CLAUDE_CONFIG_DIR`` overrides ``~/.claude``)."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def codex_home() -> Path:
    """Codex's data directory (``CODEX_HOME`` overrides ``~/.codex``)."""
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".codex"


def copilot_home() -> Path:
    """GitHub Copilot CLI's data directory (``COPILOT_HOME`` overrides ``~/.copilot``)."""
    env = os.environ.get("COPILOT_HOME")
    return Path(env).expanduser() if env else Path.home() / ".copilot"


def gemini_home() -> Path:
    """Gemini CLI's data directory: ``.gemini`` in ``GEMINI_CLI_HOME``, else in the home directory."""
    env = os.environ.get("GEMINI_CLI_HOME")
    return (Path(env).expanduser() if env else Path.home()) / ".gemini"


def opencode_home() -> Path:
    """OpenCode's data directory, where its database is (``$XDG_DATA_HOME/opencode``, else
    ``~/.local/share/opencode`` on every system)."""
    env = os.environ.get("XDG_DATA_HOME")
    return (Path(env).expanduser() if env else Path.home() / ".local" / "share") / "opencode"


def _editor_user_dir(app: str) -> Path:
    """The ``User`` dir of a VS Code-based editor: ``%APPDATA%\\<app>\\User`` on Windows,
    ``~/Library/Application Support/<app>/User`` on macOS, ``$XDG_CONFIG_HOME/<app>/User`` (else
    ``~/.config/<app>/User``) elsewhere."""
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        base = Path(appdata) if appdata else Path.home() / "AppData" / "Roaming"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        config = os.environ.get("XDG_CONFIG_HOME")
        base = Path(config).expanduser() if config else Path.home() / ".config"
    return base / app / "User"


def cursor_home() -> Path:
    """Cursor's ``User`` dir, where its chat databases are (``globalStorage/state.vscdb``)."""
    return _editor_user_dir("Cursor")


def cursor_cli_home() -> Path:
    """The Cursor CLI's config dir, where its chats are (``chats/``): ``CURSOR_CONFIG_DIR``, else
    ``$XDG_CONFIG_HOME/cursor`` when it holds chats, else ``~/.cursor``."""
    env = os.environ.get("CURSOR_CONFIG_DIR")
    if env:
        return Path(env).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME")
    if config and (Path(config).expanduser() / "cursor" / "chats").is_dir():
        return Path(config).expanduser() / "cursor"
    return Path.home() / ".cursor"


def vscode_home() -> Path:
    """VS Code's ``User`` dir, where Copilot Chat's sessions are (``workspaceStorage/*/chatSessions``);
    a portable install's is ``$VSCODE_PORTABLE/user-data/User``."""
    portable = os.environ.get("VSCODE_PORTABLE")
    if portable:
        return Path(portable).expanduser() / "user-data" / "User"
    return _editor_user_dir("Code")


def pi_home() -> Path:
    """Pi's agent directory (``PI_CODING_AGENT_DIR`` overrides ``~/.pi/agent``)."""
    env = os.environ.get("PI_CODING_AGENT_DIR")
    return Path(env).expanduser() if env else Path.home() / ".pi" / "agent"


@dataclass(frozen=True)
class ProjectDirs:
    project: Path

    @property
    def root(self) -> Path:
        return self.project / PROJECT_DIR

    @property
    def staging(self) -> Path:
        return self.root / "staging"

    @property
    def backups(self) -> Path:
        return self.root / "backups"

    @property
    def ledger(self) -> Path:
        return self.root / "adoptions.jsonl"

    @property
    def lock(self) -> Path:
        return self.root / "night.lock"

    @property
    def tmp(self) -> Path:
        """Scratch space of the process holding the lock (a night's evidence log); emptied by the
        next holder, so a killed night leaves nothing behind for long."""
        return self.root / "tmp"

    @property
    def config_file(self) -> Path:
        return self.root / "config.toml"


def project_dirs(project: str | os.PathLike[str]) -> ProjectDirs:
    return ProjectDirs(Path(project).expanduser().resolve())
