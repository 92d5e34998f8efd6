"""Where a kill -9 of ``adopt`` landed, read from the project's files right after the kill.

``adopt``'s own writes start with the undo backups (``.skillopt-sleep/backups/<night>/``, made
before the journal) and end when the ledger holds the adoption and the journal is dropped. So:

- ``before-write``: no backup directory yet (interpreter start-up, imports, the lock, the checks);
- ``inside-write``: the backup directory exists, and the ledger append plus the journal's removal
  have not both happened (backups, journal, live writes, commit);
- ``after-write``: the adoption is committed and the journal gone (report page, notice, exit);
- ``finished``: the process had exited before the kill.

Used by ``bench_crash.py`` both to aim its kills (wait for the backups, then kill within the write
window) and to count where they landed; nothing here is the product's.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from skillopt_sleep.staging import adoption_journal as journal
from skillopt_sleep.staging.adoption import adoptions
from skillopt_sleep.paths import project_dirs

LANDINGS = ("before-write", "inside-write", "after-write", "finished")


def began_writing(project: str | os.PathLike[str]) -> bool:
    """``adopt`` has started its own writes (the first is a backup of a document it changes)."""
    return project_dirs(project).backups.is_dir()


def done_writing(project: str | os.PathLike[str]) -> bool:
    """The adoption is in the ledger and its journal is gone: every write of it is made."""
    return journal.pending(project) is None and bool(adoptions(project))


def landing(project: Path, finished: bool) -> str:
    """Where a kill landed (one of ``LANDINGS``); call before anything else touches the project."""
    if finished:
        return "finished"
    if not began_writing(project):
        return "before-write"
    return "after-write" if done_writing(project) else "inside-write"


def write_window(proc: subprocess.Popen, project: Path, timeout: float) -> float:
    """Seconds from an unkilled ``adopt`` (``proc``) beginning its writes to their end, watched
    from outside every millisecond."""
    ends = time.monotonic() + timeout
    began = None
    while time.monotonic() < ends:
        exited = proc.poll() is not None  # looked at first: its writes are all seen below if so
        if began is None and began_writing(project):
            began = time.monotonic()
        if began is not None and done_writing(project):
            return time.monotonic() - began
        if exited:
            break
        time.sleep(0.001)
    raise RuntimeError("an unkilled adopt did not finish its writes")
