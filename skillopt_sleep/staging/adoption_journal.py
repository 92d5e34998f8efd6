"""The adoption journal: a multi-file adopt or revert is all or nothing, even across kill -9.

Before the first live write, the operation's intent is written to
``<project>/.skillopt-sleep/journal.json``: for every file, the bytes it has before and after (as
one changed middle between a common prefix and suffix, both ways, with the sha-256 of each side;
no file is copied whole) and the ledger records that make the operation official. The ledger
append is the commit point. Whoever next takes the project lock (``adopt``, ``revert``, a night)
finishes the job: a committed operation is rolled forward, anything else is rolled back, and each
file is only ever written when it is exactly one of its two known states.

The journal lives in the project, where a cloned repository could plant one naming the project's
own documents, so it is sealed like the call journal: an HMAC (``state_key``, a per-user key kept
outside the project) over the project's resolved path and the journal's content. One that does
not verify is refused, touching nothing. The ledger's adopt entries are sealed the same way
(``seal_entry``), since ``revert`` restores what they name.
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from skillopt_sleep.documents.containment import read_live, remove_file, replace_file
from skillopt_sleep.errors import EXIT_CONFLICT, UserError
from skillopt_sleep.files import (
    append_jsonl,
    atomic_write_text,
    parse_json,
    read_bytes_or_none,
    read_jsonl,
    sha256_bytes,
)
from skillopt_sleep.paths import project_dirs
from skillopt_sleep.store.state_key import mac_verifies, with_mac

JOURNAL_FORMAT = "skillopt_sleep.journal.v1"
# A test hook that widens the window between two live writes, so crash tests can kill a process
# there on purpose (seconds; unset in normal use).
PAUSE_ENV = "SKILLOPT_TEST_ADOPT_PAUSE"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(value: Any) -> bytes:
    return base64.b64decode(str(value), validate=True)


@dataclass
class FileStep:
    """One file going from ``before`` to ``after`` (a sha of None: the file does not exist)."""

    role: str
    path: str
    prefix: int
    suffix: int
    before_middle: str  # base64
    after_middle: str  # base64
    before_sha256: str | None
    after_sha256: str | None
    created_dirs: list[str] = field(default_factory=list)  # made for `after`; removed with it

    @classmethod
    def between(
        cls, role: str, path: Path, before: bytes | None, after: bytes | None, created_dirs: list[str] | None = None
    ) -> FileStep:
        old, new = before or b"", after or b""
        prefix = suffix = 0
        if before is not None and after is not None:
            limit = min(len(old), len(new))
            while prefix < limit and old[prefix] == new[prefix]:
                prefix += 1
            while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
                suffix += 1
        return cls(
            role=role,
            path=str(path),
            prefix=prefix,
            suffix=suffix,
            before_middle=_b64(old[prefix : len(old) - suffix]),
            after_middle=_b64(new[prefix : len(new) - suffix]),
            before_sha256=None if before is None else sha256_bytes(before),
            after_sha256=None if after is None else sha256_bytes(after),
            created_dirs=list(created_dirs or []),
        )

    def is_state(self, data: bytes | None, side: str) -> bool:
        want = self.before_sha256 if side == "before" else self.after_sha256
        return data is None if want is None else data is not None and sha256_bytes(data) == want

    def bytes_of(self, side: str, other: bytes | None) -> bytes | None:
        """The bytes of ``side``, rebuilt from the file as it is on the other side."""
        if (self.before_sha256 if side == "before" else self.after_sha256) is None:
            return None
        middle = _unb64(self.before_middle if side == "before" else self.after_middle)
        base = other or b""
        data = base[: self.prefix] + middle + base[len(base) - self.suffix :]
        if sha256_bytes(data) != (self.before_sha256 if side == "before" else self.after_sha256):
            raise ValueError(f"the journal cannot rebuild {self.path}")
        return data


@dataclass
class Journal:
    op: str  # "adopt" | "revert"
    op_id: str
    night_id: str
    started: str
    files: list[FileStep]
    ledger: list[dict[str, Any]]  # appended, all in one write, to commit

    def to_dict(self) -> dict[str, Any]:
        return {"format": JOURNAL_FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Journal:
        if data.get("format") != JOURNAL_FORMAT:
            raise ValueError("not a journal")
        files = [FileStep(**step) for step in data["files"]]
        return cls(
            op=str(data["op"]),
            op_id=str(data["op_id"]),
            night_id=str(data["night_id"]),
            started=str(data["started"]),
            files=files,
            ledger=list(data["ledger"]),
        )


def journal_path(project: str | os.PathLike[str]) -> Path:
    return project_dirs(project).root / "journal.json"


def pending(project: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The interrupted operation waiting to be finished, as ``{op, night_id, started, files}``."""
    path = journal_path(project)
    raw = read_bytes_or_none(path)
    if raw is None:
        return None
    try:
        journal = Journal.from_dict(parse_json(raw.decode("utf-8")))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return {"op": "?", "night_id": "?", "started": "?", "files": [], "damaged": True}
    return {
        "op": journal.op,
        "night_id": journal.night_id,
        "started": journal.started,
        "files": [s.path for s in journal.files],
    }


def _remove_empty_dirs(dirs: list[str], path: str) -> None:
    parents = {str(p) for p in Path(path).parents}
    for directory in dirs:  # deepest first; only ever this file's own parents
        if directory not in parents:
            return
        try:
            os.rmdir(directory)
        except OSError:
            return


def _move(project: str | os.PathLike[str], journal: Journal, to: str) -> None:
    """Bring every file to side ``to`` ("before" or "after"); each must be on one of its sides."""
    frm = "before" if to == "after" else "after"
    plan = []
    for step in journal.files:
        current = read_live(step.path)
        if step.is_state(current, to):
            continue
        if not step.is_state(current, frm):
            raise UserError(
                f"an interrupted {journal.op} of night {journal.night_id} cannot be finished: "
                f"{step.path} was changed by something else meanwhile. Nothing was written; check "
                f"that file, then delete {journal_path(project)} to give up the {journal.op}",
                EXIT_CONFLICT,
            )
        plan.append((step, step.bytes_of(to, current)))
    for step, data in plan:
        write_side(step, data)


def write_side(step: FileStep, data: bytes | None) -> None:
    """Write one file's bytes (None: remove it, and the empty dirs that were made for it)."""
    if data is None:
        remove_file(step.path)
        _remove_empty_dirs(step.created_dirs, step.path)
    else:
        replace_file(step.path, data)  # never through a link planted on the way


JOURNAL_SEAL = "skillopt-sleep adoption journal v1"
LEDGER_SEAL = "skillopt-sleep adoption ledger v1"


def _place(project: str | os.PathLike[str]) -> str:
    return str(project_dirs(project).project)


def seal_entry(project: str | os.PathLike[str], entry: dict[str, Any]) -> dict[str, Any]:
    """A ledger entry with its MAC (as is, without a trusted key): ``revert`` acts only on
    entries that verify, so a ledger planted in the project cannot say what to restore."""
    return with_mac(LEDGER_SEAL, _place(project), entry)


def entry_verifies(project: str | os.PathLike[str], entry: dict[str, Any]) -> bool:
    return mac_verifies(LEDGER_SEAL, _place(project), entry)


def begin(project: str | os.PathLike[str], journal: Journal) -> None:
    """Record the intent (durably, sealed) before the first live write."""
    data = with_mac(JOURNAL_SEAL, _place(project), journal.to_dict())
    atomic_write_text(journal_path(project), json.dumps(data, indent=1) + "\n")


def pause_between_writes() -> None:
    delay = os.environ.get(PAUSE_ENV)
    if delay:
        try:
            time.sleep(max(0.0, min(float(delay), 60.0)))
        except ValueError:
            pass


def commit(project: str | os.PathLike[str], journal: Journal) -> None:
    """Make the operation official (one ledger append), then drop the journal."""
    append_jsonl(project_dirs(project).ledger, *journal.ledger)
    _drop(project)


def abandon(project: str | os.PathLike[str], journal: Journal) -> None:
    """Undo whatever of ``journal`` was written (after a handled write error) and drop it."""
    _move(project, journal, "before")
    _drop(project)


def _drop(project: str | os.PathLike[str]) -> None:
    try:
        journal_path(project).unlink()
    except FileNotFoundError:
        pass


def _committed(project: str | os.PathLike[str], journal: Journal) -> list[dict[str, Any]]:
    return [e for e in read_jsonl(project_dirs(project).ledger) if e.get("op_id") == journal.op_id]


def recover(project: str | os.PathLike[str], allows: Callable[[str, Path], bool]) -> str | None:
    """Finish an operation a killed process left half done (call with the project lock held).

    ``allows(role, path)``: whether a night of this project may write that document; a journal
    naming any other file was not written by us (planted) and is refused, touching nothing.
    Returns a one-line account of what was done, or None when nothing was pending.
    """
    path = journal_path(project)
    raw = read_bytes_or_none(path)
    if raw is None:
        return None
    try:
        data = parse_json(raw.decode("utf-8"))
        journal = Journal.from_dict(data)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, AttributeError):
        raise UserError(
            f"the adoption journal {path} is damaged; check the live documents against "
            "the adoption ledger, then delete it",
            EXIT_CONFLICT,
        ) from None
    if not mac_verifies(JOURNAL_SEAL, _place(project), data, create=True):
        raise UserError(
            f"the adoption journal {path} was not written by this user's skillopt-sleep "
            "(its seal does not verify); nothing was written (check the live documents "
            "against the adoption ledger, then delete it)",
            EXIT_CONFLICT,
        )
    strangers = [s.path for s in journal.files if not allows(s.role, Path(s.path))]
    if strangers:
        raise UserError(
            f"the adoption journal {path} names {strangers[0]!r}, not a document a night "
            "of this project may target; nothing was written (delete the journal if you "
            "did not expect it)",
            EXIT_CONFLICT,
        )
    done = {e.get("path") for e in _committed(project, journal)}
    if done:
        _move(project, journal, "after")
        missing = [e for e in journal.ledger if e.get("path") not in done]
        if missing:
            append_jsonl(project_dirs(project).ledger, *missing)
        _drop(project)
        return f"finished the interrupted {journal.op} of night {journal.night_id}"
    _move(project, journal, "before")
    _drop(project)
    return f"rolled back the interrupted {journal.op} of night {journal.night_id} (nothing of it was kept)"
