"""The real Claude Code and Codex CLIs, for tests that drive them (installed by
``scripts/install_real_clis.sh``; ``.ci/run`` exports ``SKILLOPT_REAL_CLIS``).

``scripts/real_clis.versions`` names the releases (``oldest``: the oldest the plugins support;
``newest``: the newest published) and their versions; ``RELEASES`` lists them in that order, so a
test parametrized over it runs against each. ``real_cli("claude")`` returns the executable's path
(``release="newest"`` for the other one). When the CLIs are not installed the test skips with the
reason — unless ``SKILLOPT_REQUIRE_REAL_CLIS=1`` (set by ``.ci/run`` whenever npm is
present), which turns the skip into a failure. ``client_env(tmp_path)`` is a throwaway environment:
its own HOME / CODEX_HOME / XDG dirs, no provider keys, nothing of the developer's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INSTALLER = REPO / "scripts" / "install_real_clis.sh"
VERSIONS_FILE = REPO / "scripts" / "real_clis.versions"


def _versions() -> dict[str, dict[str, str]]:
    """release name -> {"claude": version, "codex": version}, in the file's order."""
    releases: dict[str, dict[str, str]] = {}
    for line in VERSIONS_FILE.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) == 3 and not fields[0].startswith("#"):
            releases[fields[0]] = {"claude": fields[1], "codex": fields[2]}
    return releases


VERSIONS = _versions()
RELEASES = tuple(VERSIONS)


def _bin_dirs() -> list[Path]:
    configured = os.environ.get("SKILLOPT_REAL_CLIS")
    if not configured:
        try:
            out = subprocess.run(["bash", str(INSTALLER), "--check"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return []
        configured = out.stdout.strip() if out.returncode == 0 else ""
    return [Path(part) for part in configured.split(os.pathsep) if part]


def version_of(name: str, release: str = "oldest") -> str:
    """The pinned version of ``name`` ("claude" or "codex") in ``release``."""
    return VERSIONS[release][name]


def real_cli(name: str, release: str = "oldest") -> str:
    """Path of the real ``claude`` or ``codex`` CLI of ``release`` (a name in
    ``scripts/real_clis.versions``), or skip (fail under SKILLOPT_REQUIRE_REAL_CLIS=1)."""
    dirs = _bin_dirs()
    index = RELEASES.index(release)
    path = dirs[index] / name if index < len(dirs) else None
    if path and path.exists() and os.access(path, os.X_OK):
        return str(path)
    reason = (
        f"the real {name} CLI is not installed (bash scripts/install_real_clis.sh, "
        "then SKILLOPT_REAL_CLIS=<the directory it prints>)"
    )
    if os.environ.get("SKILLOPT_REQUIRE_REAL_CLIS") == "1":
        pytest.fail(reason + "; SKILLOPT_REQUIRE_REAL_CLIS=1 makes this a failure")
    pytest.skip(reason)


def client_env(root: Path, **extra: str) -> dict[str, str]:
    """A bare environment for a real client: a throwaway HOME and CODEX_HOME under ``root``."""
    home = root / "home"
    codex_home = home / ".codex"
    for directory in (home, codex_home, home / ".config", home / ".cache", home / ".local" / "share"):
        directory.mkdir(parents=True, exist_ok=True)
    node_dir = Path(shutil.which("node") or "/usr/bin/node").parent
    env = {
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "PATH": os.pathsep.join([str(node_dir), "/usr/local/bin", "/usr/bin", "/bin"]),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
    }
    env.update(extra)
    return env
