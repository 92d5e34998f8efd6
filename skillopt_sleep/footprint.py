"""A night refused before it did any work leaves the project as it found it.

``run`` takes the project lock (and so creates ``<project>/.skillopt-sleep/`` with its lock file,
``.gitignore``, a call journal folder, a scratch folder…) before it can know that no backend is
available, that the preflight call fails, or that a tasks file is not reviewed. When such a
refusal ends the night, the files and folders it created there are removed — the folder itself
when it was not there before — while the night still holds the lock, so no other process is
using them. Files that were there before are left as they are. The lock file goes too: a process
waiting for the lock makes the folder and the file again and takes it (tested).

A night that did work is not undone: once its call journal holds an answer (``run --resume``
continues from it) or it staged a proposal, everything it wrote stays.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from skillopt_sleep.store.call_journal import JOURNAL, nights_dir
from skillopt_sleep.paths import project_dirs


class Footprint:
    """What ``<project>/.skillopt-sleep/`` held before a night (take it before the lock)."""

    def __init__(self, project: str | os.PathLike[str]):
        self.project = Path(project)
        self.root = project_dirs(project).root
        self.existed = os.path.lexists(self.root)
        self.before = self._paths()

    def _paths(self) -> set[Path]:
        if not self.root.is_dir() or self.root.is_symlink():
            return set()
        paths: set[Path] = set()
        for folder, dirs, files in os.walk(self.root):
            base = Path(folder)
            paths.update(base / name for name in dirs + files)
        return paths

    def worked(self, night_id: str) -> bool:
        """Did the night keep anything worth keeping: an answered call, or a staged proposal?"""
        journal = nights_dir(self.project) / night_id / JOURNAL
        with contextlib.suppress(OSError):
            if journal.stat().st_size > 0:
                return True
        return os.path.lexists(project_dirs(self.project).staging / night_id)

    def undo(self, night_id: str) -> list[Path]:
        """Remove what appeared since the footprint was taken, unless the night did work; the
        paths removed. Call it while holding the project lock."""
        if self.worked(night_id) or (self.existed and self.root.is_symlink()):
            return []
        created = sorted(self._paths() - self.before, key=lambda p: len(p.parts), reverse=True)
        if not self.existed:
            created.append(self.root)
        removed = []
        for path in created:
            with contextlib.suppress(OSError):  # e.g. a lock file Windows keeps open: left
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()  # only when empty: never a folder holding what was there before
                else:
                    path.unlink()
                removed.append(path)
        return removed
