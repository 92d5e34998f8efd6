"""A copy of this repository as a person's clone holds it: the files git tracks (and new ones not
ignored), symlinks kept as symlinks, in a fresh git repository — what a marketplace is added from."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def clone_of_repo(destination: Path) -> Path:
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
            timeout=60,
        )
        .stdout.decode("utf-8")
        .split("\0")
    )
    for rel in filter(None, listed):
        source = REPO / rel
        if not (source.exists() or source.is_symlink()):
            continue  # deleted in the work tree
        target = destination / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    subprocess.run(["git", "init", "-q", str(destination)], check=True, timeout=60)
    return destination
