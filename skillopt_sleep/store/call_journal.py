"""Each finished call of a night, kept as it finishes, so an interrupted night can be continued.

A stateful night writes ``<project>/.skillopt-sleep/nights/<night-id>/calls.jsonl``: one line per
successful call (request key + redacted completion), appended and fsynced as the call returns. A
night that ends well removes its directory (and any older interrupted ones); a crash, a kill, a
budget stop or a provider failure leaves it behind. ``run --resume`` (and a scheduled night) takes
the newest one it finds and continues that night under its id (or, if it was killed after staging
its proposal, starts a new night that reads its journal): a request it already paid for is
answered from the journal, so only calls that had not finished are made again. A torn last line
(a kill mid-write) is skipped.

Keys are the requests' content hashes, so a journal cannot answer a request it did not see: if the
tasks or documents changed in between, the changed calls are simply made.

The journal lives in the project, so it is never taken on faith: each line carries an HMAC
(``state_key.seal``, a per-user key kept outside the project) over the night id, the project's
resolved path, the request key and the completion record. A line whose MAC is missing or wrong is
not used — that call is made again — and counted (``untrusted``; the night says how many); a
journal copied from another project or another night does not verify. Without a trusted key
nothing is read back and nothing is kept. What is read back, verified or not, enters the engine
through the client's one boundary for model replies (``backends.client.redact_completion``).
"""

from __future__ import annotations

import re
import shutil
import threading
from pathlib import Path
from typing import Any

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.stores import completion_from, completion_record, keepable
from skillopt_sleep.files import append_jsonl, read_jsonl
from skillopt_sleep.paths import project_dirs
from skillopt_sleep.store.state_key import seal, state_key, verifies

JOURNAL = "calls.jsonl"
NIGHT_ID = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{4}$")


def nights_dir(project: Path) -> Path:
    return project_dirs(project).root / "nights"


def _sealed(night_id: str, project: str, key: str, record: Any) -> list[Any]:
    """What a journal line's MAC covers."""
    return ["skillopt-sleep call journal v1", night_id, project, key, record]


class CallJournal:
    """The finished calls of one night (see the module docstring)."""

    REDONE = "journal records did not verify and were made again"

    def __init__(self, directory: Path, *, read_only: bool = False):
        self.directory = directory
        self.read_only = read_only  # answers only (an earlier night's journal read by a new night)
        self.path = directory / JOURNAL
        self.night_id = directory.name
        self.project = str(directory.parent.parent.parent)  # <project>/.skillopt-sleep/nights/<id>
        self.reused = 0
        self.untrusted = 0  # lines whose MAC was missing or wrong: not used, made again
        self._key, self.key_problem = state_key()
        self._kept: dict[str, dict] = {}
        self._lock = threading.Lock()
        try:
            records = read_jsonl(self.path)
        except OSError:
            records = []  # unreadable: those calls are made again
        for record in records:
            if not isinstance(record.get("k"), str) or completion_from(record.get("c")) is None:
                continue
            if not verifies(self._key, _sealed(self.night_id, self.project, record["k"], record["c"]), record.get("m")):
                self.untrusted += 1
                continue
            self._kept[record["k"]] = record["c"]
        self.loaded = len(self._kept)

    def get(self, key: str, request: Request) -> Completion | None:
        with self._lock:
            record = self._kept.get(key)
            if record is None:
                return None
            self.reused += 1
        return completion_from(record)

    def has(self, key: str, request: Request) -> bool:
        """Whether ``get`` would answer this request (not counted as reused)."""
        with self._lock:
            return key in self._kept

    def put(self, key: str, request: Request, completion: Completion) -> None:
        if self.read_only or self._key is None or not keepable(completion):
            return
        record = completion_record(completion)
        mac = seal(self._key, _sealed(self.night_id, self.project, key, record))
        with self._lock:
            if key in self._kept:
                return
            self._kept[key] = record
            append_jsonl(self.path, {"k": key, "purpose": request.purpose, "c": record, "m": mac})


def interrupted_nights(project: Path) -> list[str]:
    """Ids of nights that started here and never finished, oldest first."""
    root = nights_dir(project)
    try:
        names = [p.name for p in root.iterdir() if p.is_dir() and NIGHT_ID.match(p.name)]
    except OSError:
        return []
    return sorted(names)


def open_journal(project: Path, night_id: str, *, read_only: bool = False) -> CallJournal:
    directory = nights_dir(project) / night_id
    if not read_only:
        directory.mkdir(parents=True, exist_ok=True)
    return CallJournal(directory, read_only=read_only)


def close_nights(project: Path) -> None:
    """A night finished: its journal and every older interrupted one are done with."""
    for night_id in interrupted_nights(project):
        shutil.rmtree(nights_dir(project) / night_id, ignore_errors=True)
