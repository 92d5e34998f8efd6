"""The refused-edit ledger: rules the gate found harmful, so the optimizer is not offered the same
rule night after night — and what makes two proposed rules "the same rule" (``same_rule``)."""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skillopt_sleep.files import append_jsonl, read_jsonl, sha256_bytes
from skillopt_sleep.redact import redact_obj
from skillopt_sleep.store.history import project_key
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.types import Edit, format_time


_BULLET = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_WORD = re.compile(r"[^\W_]+")
# words whose change turns a rule into a different rule, however similar the rest
_DECISIVE = re.compile(r"^(?:\d+|not|no|never|don|t|avoid|without|always|must|only|except)$")
SIMILARITY = 0.8  # token-set overlap (Jaccard) at or above which two rules are one rewording apart


def rule_text(edit: Edit) -> str:
    """The text that identifies an edit's rule, normalised: case, spacing, a leading list bullet
    and trailing punctuation do not make a rule new."""
    text = edit.anchor if edit.op in ("delete", "delete_line") and not edit.content else edit.content
    if edit.supersedes:  # overriding a hand-written line is another rule than the plain one
        text += f" (supersedes: {edit.supersedes.strip()})"
    norm = " ".join(text.casefold().split())
    return _BULLET.sub("", norm).rstrip(" .;:!")


def edit_key(edit: Edit) -> str:
    """Identity of a rule for "was this refused before": target + op + normalised text."""
    return sha256_bytes(f"{edit.target}\0{edit.op}\0{rule_text(edit)}".encode())


def rule_tokens(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.casefold()))


def similar_text(a: str, b: str) -> bool:
    """Two rule texts one simple rewording apart: the same words in another order, case or
    punctuation, or a few words added or dropped (token-set overlap >= ``SIMILARITY``) — but never
    two rules that differ in a number or a negation ("at most 50" is not "at most 72")."""
    ta, tb = rule_tokens(a), rule_tokens(b)
    if not ta or not tb:
        return ta == tb
    if any(_DECISIVE.match(t) for t in ta ^ tb):
        return False
    return len(ta & tb) / len(ta | tb) >= SIMILARITY


def same_rule(a: Edit, b: Edit) -> bool:
    """``a`` and ``b`` propose the same rule (same target and op, text one rewording apart)."""
    return a.target == b.target and a.op == b.op and similar_text(rule_text(a), rule_text(b))


class RejectedLedger:
    """Edits the gate refused, so the optimizer is not offered the same rule night after night."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else user_dirs().rejected_ledger
        self._keys: set[tuple[str, str]] | None = None
        self._rules: dict[str, list[Edit]] = {}  # project -> refused edits, for rewordings
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
            entries = [e for e in read_jsonl(self.path) if e.get("key")]
            self._keys = {(str(e.get("project")), str(e.get("key"))) for e in entries}
            self._rules = {}
            for e in entries:
                edit = e.get("edit")
                if isinstance(edit, dict):
                    try:
                        self._rules.setdefault(str(e.get("project")), []).append(Edit.from_dict(edit))
                    except (TypeError, ValueError):
                        continue  # a hand-edited entry still bans its exact key
            self._stamp = stamp
        return self._keys

    def add(self, project: str | os.PathLike[str], edit: Edit, reasons: list[str], night_id: str) -> None:
        entry = {
            "project": project_key(project),
            "key": edit_key(edit),
            "night_id": night_id,
            "at": format_time(datetime.now(timezone.utc)),
            "edit": redact_obj(edit.to_dict()),  # written like every record: without secrets
            "reasons": redact_obj(list(reasons)),
        }
        append_jsonl(self.path, entry)
        self._load().add((entry["project"], entry["key"]))
        self._rules.setdefault(entry["project"], []).append(edit)
        self._stamp = self._current_stamp()

    def contains(self, project: str | os.PathLike[str], edit: Edit) -> bool:
        """The rule, or a simple rewording of it, was banned for this project."""
        key = project_key(project)
        if (key, edit_key(edit)) in self._load():
            return True
        return any(same_rule(edit, old) for old in self._rules.get(key, ()))

    def entries(self, project: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
        entries = read_jsonl(self.path)
        if project is None:
            return entries
        key = project_key(project)
        return [e for e in entries if e.get("project") == key]
