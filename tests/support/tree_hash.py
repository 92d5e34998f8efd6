"""A fingerprint of a person's CLI directories: every path under them (files, directories, links),
each with its mode and, for a file, the sha-256 of its bytes; a path that does not exist is
recorded as missing. Two fingerprints are equal when the trees are byte-identical."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def fingerprint(*roots: Path) -> dict[str, tuple[int, str]]:
    found: dict[str, tuple[int, str]] = {}
    for root in roots:
        _add(found, root)
        if root.is_dir() and not root.is_symlink():
            for dirpath, dirnames, filenames in os.walk(root):
                for name in dirnames + filenames:
                    _add(found, Path(dirpath) / name)
    return found


def _add(found: dict[str, tuple[int, str]], path: Path) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        found[str(path)] = (0, "missing")
        return
    if stat.S_ISREG(info.st_mode):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    elif stat.S_ISLNK(info.st_mode):
        digest = "link:" + os.readlink(path)
    else:
        digest = ""
    found[str(path)] = (info.st_mode, digest)


def differences(before: dict[str, tuple[int, str]], after: dict[str, tuple[int, str]]) -> list[str]:
    """What changed, one line a path: added, removed, or changed (mode or bytes)."""
    lines = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if old is None or old[1] == "missing":
            lines.append(f"added   {path}")
        elif new is None or new[1] == "missing":
            lines.append(f"removed {path}")
        else:
            lines.append(f"changed {path}")
    return lines
