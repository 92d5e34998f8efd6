"""What killed processes leave behind, removed by the next one that takes the project lock.

Only names the engine itself makes are removed: assembled-but-unrenamed proposals
(``staging/.tmp-*``), the scratch dir (a night's evidence log), and the temp files of interrupted
atomic writes — everywhere under ``.skillopt-sleep/``, and beside the live documents only those
named after a document (``.CLAUDE.md.<hex>.tmp``). Every writer of these places holds the project
lock, so while we hold it none of this can be a write in progress.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from skillopt_sleep.files import remove_temp_files
from skillopt_sleep.paths import project_dirs


def clean_debris(project: str | os.PathLike[str], documents: Iterable[Path] = ()) -> int:
    """Remove the debris of killed processes; returns how many entries were removed.

    Call only with the project lock held. ``documents``: the live documents a night may write
    (their directories are shared with the user's own files, so only their temp files go).
    """
    dirs = project_dirs(project)
    removed = 0
    if dirs.staging.is_dir():
        for entry in dirs.staging.iterdir():
            if entry.name.startswith(".tmp-") and entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
                removed += 1
    if dirs.tmp.is_dir() and not dirs.tmp.is_symlink():
        removed += sum(1 for _ in dirs.tmp.iterdir())
        shutil.rmtree(dirs.tmp, ignore_errors=True)
    if dirs.root.is_dir():
        for folder, subdirs, _files in os.walk(dirs.root):
            subdirs[:] = [d for d in subdirs if not d.startswith(".tmp-")]
            removed += len(remove_temp_files(Path(folder)))
    by_dir: dict[Path, set[str]] = {}
    for document in documents:
        by_dir.setdefault(Path(document).parent, set()).add(Path(document).name)
    for directory, names in by_dir.items():
        removed += len(remove_temp_files(directory, names))
    return removed
