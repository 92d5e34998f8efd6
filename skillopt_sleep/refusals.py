"""The refused-edit ledger: rules the gate refused, so the optimizer is not offered the same rule
night after night."""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skillopt_sleep.files import append_jsonl, read_jsonl, sha256_bytes
from skillopt_sleep.history import project_key
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.types import Edit, format_time


_BULLET = re.compile(r"^(?:[-*+]|\d+[.)])\s+")


def edit_key(edit: Edit) -> str:
    """Identity of a rule for "was this refused before": target + op + normalised text.

    Case, spacing, a leading list bullet and trailing punctuation do not make a rule new.
    """
    text = edit.anchor if edit.op == "delete" and not edit.content else edit.content
    norm = " ".join(text.casefold().split())
    norm = _BULLET.sub("", norm).rstrip(" .;:!")
    return sha256_bytes(f"{edit.target}\0{edit.op}\0{norm}".encode())


class RejectedLedger:
    """Edits the gate refused, so the optimizer is not offered the same rule night after night."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else user_dirs().rejected_ledger
        self._keys: set[tuple[str, str]] | None = None
        self._stamp: tuple[int, int] | None = None

    def _current_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_size, st.st_mtime_ns)

    def _load(self) -> set[tuple[str, str]]:
        stamp = self._current_stamp()
        if self._keys is None or stamp != self._stamp:
            self._keys = {
                (str(e.get("project")), str(e.get("key")))
                for e in read_jsonl(self.path)
                if e.get("key")
            }
            self._stamp = stamp
        return self._keys

    def add(
        self, project: str | os.PathLike[str], edit: Edit, reasons: list[str], night_id: str
    ) -> None:
        entry = {
            "project": project_key(project),
            "key": edit_key(edit),
            "night_id": night_id,
            "at": format_time(datetime.now(timezone.utc)),
            "edit": edit.to_dict(),
            "reasons": list(reasons),
        }
        append_jsonl(self.path, entry)
        self._load().add((entry["project"], entry["key"]))
        self._stamp = self._current_stamp()

    def contains(self, project: str | os.PathLike[str], edit: Edit) -> bool:
        return (project_key(project), edit_key(edit)) in self._load()

    def entries(self, project: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
        entries = read_jsonl(self.path)
        if project is None:
            return entries
        key = project_key(project)
        return [e for e in entries if e.get("project") == key]
