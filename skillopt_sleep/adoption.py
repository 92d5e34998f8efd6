"""Adoption: write a staged proposal back to the live documents, and revert it.

Adoption writes nothing unless every proposal is intact and every live file is still the bytes the
night read; it splices the staged change into those bytes, backs up the reverse change first, and
logs each file in the project's adoption ledger, which ``revert`` replays backwards to restore the
exact previous bytes (checked by sha-256).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt_sleep.errors import EXIT_CONFLICT, UserError
from skillopt_sleep.paths import project_dirs
from skillopt_sleep.staging import adoptions, ensure_project_dir, list_proposals, now
from skillopt_sleep.state import append_jsonl, atomic_write_bytes, atomic_write_text, read_bytes_or_none, sha256_bytes


@dataclass
class AdoptResult:
    night_id: str
    staging_dir: Path
    backup_dir: Path
    files: list[dict[str, Any]] = field(default_factory=list)  # ledger entries written

    def to_dict(self) -> dict[str, Any]:
        return {
            "night_id": self.night_id,
            "staging_dir": str(self.staging_dir),
            "backup_dir": str(self.backup_dir),
            "files": self.files,
        }


@dataclass
class RevertResult:
    night_id: str
    files: list[dict[str, Any]] = field(default_factory=list)  # ledger entries written

    def to_dict(self) -> dict[str, Any]:
        return {"night_id": self.night_id, "files": self.files}


def _splice(data: bytes, prefix: int, suffix: int, middle: bytes) -> bytes:
    return data[:prefix] + middle + data[len(data) - suffix:]


def _unb64(value: Any) -> bytes:
    return base64.b64decode(str(value), validate=True)



# --------------------------------------------------------------------------- adopt


def _pick_proposal(project: Path, night_id: str | None) -> dict[str, Any]:
    proposals = list_proposals(project)
    if night_id is not None:
        for proposal in proposals:
            if proposal.get("night_id") == night_id:
                return proposal
        raise UserError(f"no staged proposal for night {night_id} in {project}", EXIT_CONFLICT)
    with_files = [p for p in proposals if p["files"]]
    if not with_files:
        raise UserError(f"nothing to adopt: no staged proposal with changes in {project}",
                        EXIT_CONFLICT)
    return with_files[0]


def _proposal_path(staging_dir: Path, rel: str) -> Path:
    path = (staging_dir / rel).resolve()
    if staging_dir.resolve() not in path.parents:
        raise UserError(f"manifest in {staging_dir} points outside the proposal: {rel}",
                        EXIT_CONFLICT)
    return path


def _missing_parents(path: Path) -> list[str]:
    missing = []
    for parent in path.parents:
        if parent.exists():
            break
        missing.append(str(parent))
    return missing


def _rollback(done: list[tuple[Path, bytes | None, list[str]]]) -> None:
    """Put back files already written: restore old bytes or remove what did not exist."""
    for path, previous, created_dirs in reversed(done):
        try:
            if previous is None:
                path.unlink(missing_ok=True)
                _remove_empty_dirs(created_dirs)
            else:
                atomic_write_bytes(path, previous)
        except OSError:
            pass


def _remove_empty_dirs(dirs: list[str]) -> None:
    for directory in dirs:  # deepest first
        try:
            os.rmdir(directory)
        except OSError:
            return


def _apply_change(item: dict[str, Any], current: bytes, night: str) -> bytes:
    """The bytes adoption writes: the staged change spliced into the live (baseline) bytes."""
    try:
        change = item["change"]
        data = _splice(current, int(change["prefix"]), int(change["suffix"]), _unb64(change["insert"]))
    except (KeyError, TypeError, ValueError):
        raise UserError(f"the manifest of night {night} has no valid change for {item.get('live_path')}; "
                        "refusing to adopt", EXIT_CONFLICT) from None
    if sha256_bytes(data) != item.get("proposed_sha256"):
        raise UserError(f"the change staged by night {night} for {item.get('live_path')} does not "
                        "reproduce the proposal; refusing to adopt", EXIT_CONFLICT)
    return data


def refuse_simulated(proposal: dict[str, Any], allow_simulated: bool) -> None:
    """A proposal the offline simulator made for real transcripts is not adopted unasked."""
    if proposal.get("simulated") and not allow_simulated:
        night = proposal.get("night_id")
        raise UserError(f"night {night} was made by the offline simulator (sim backend), so its rules "
                        "were never tried on a real model; nothing was written. Run a night with a real "
                        "backend, or adopt it anyway with --allow-simulated", EXIT_CONFLICT)


def adopt(project: str | os.PathLike[str], night_id: str | None = None, *,
          allow_simulated: bool = False) -> AdoptResult:
    """Write a staged proposal back to the live documents, all or nothing.

    Default: the newest proposal that has changes. Refuses (``EXIT_CONFLICT``, nothing written)
    when the proposal was tampered with, when a live file changed since the night read it, when
    the night is already adopted, or when it is simulated and ``allow_simulated`` is not set.
    """
    dirs = project_dirs(project)
    proposal = _pick_proposal(dirs.project, night_id)
    night = str(proposal["night_id"])
    staging_dir = Path(proposal["staging_dir"])
    if proposal["state"] == "adopted":
        raise UserError(f"night {night} is already adopted (revert it first to adopt it again)",
                        EXIT_CONFLICT)
    if not proposal["files"]:
        raise UserError(f"night {night} proposed no changes; nothing to adopt", EXIT_CONFLICT)
    refuse_simulated(proposal, allow_simulated)

    plan = []
    conflicts = []
    for item in proposal["files"]:
        source = _proposal_path(staging_dir, str(item.get("proposal", "")))
        review = read_bytes_or_none(source)
        if review is None or sha256_bytes(review) != item.get("proposal_sha256"):
            raise UserError(
                f"proposal file {source} does not match its manifest: it was modified or removed "
                f"after night {night} staged it; refusing to adopt", EXIT_CONFLICT)
        live = Path(str(item["live_path"]))
        current = read_bytes_or_none(live)
        if item.get("baseline_existed"):
            if current is None:
                conflicts.append(f"{live} was deleted")
            elif sha256_bytes(current) != item.get("baseline_sha256"):
                conflicts.append(f"{live} was edited")
        elif current is not None:
            conflicts.append(f"{live} was created")
        data = None
        if not conflicts:
            data = _apply_change(item, current or b"", night)
        plan.append((item, live, current, data))
    if conflicts:
        raise UserError(
            f"live files changed since the night read them ({'; '.join(conflicts)}); nothing was "
            f"written. Run a new night to get a proposal against the current files.",
            EXIT_CONFLICT)

    backup_dir = dirs.backups / night
    adoption_id = f"{night}-{secrets.token_hex(4)}"
    ensure_project_dir(dirs.project)
    backups: dict[int, str | None] = {}
    for index, (item, live, current, data) in enumerate(plan):
        if current is None:
            backups[index] = None
            continue
        backup = backup_dir / (str(item["proposal"]).removeprefix("proposed/") + ".undo.json")
        change = item["change"]
        undo = {"format": "skillopt_sleep.undo.v1", "path": str(live), "prefix": change["prefix"],
                "suffix": change["suffix"], "restore": change["removed"],
                "previous_sha256": sha256_bytes(current), "new_sha256": sha256_bytes(data)}
        try:
            atomic_write_text(backup, json.dumps(undo, indent=2) + "\n")
        except OSError as exc:
            raise UserError(f"could not back up {live} to {backup} ({exc.strerror or exc}); "
                            "nothing was adopted", EXIT_CONFLICT) from None
        backups[index] = str(backup)

    done: list[tuple[Path, bytes | None, list[str]]] = []
    for _item, live, current, data in plan:
        created_dirs = _missing_parents(live)
        try:
            atomic_write_bytes(live, data)
        except OSError as exc:
            _rollback(done)
            _remove_empty_dirs(created_dirs)
            raise UserError(f"could not write {live} ({exc.strerror or exc}); the files already "
                            "written were restored, nothing was adopted", EXIT_CONFLICT) from None
        done.append((live, current, created_dirs))

    adopted_at = now()
    entries = []
    for index, (item, live, current, data) in enumerate(plan):
        entry = {
            "event": "adopt",
            "adoption_id": adoption_id,
            "night_id": night,
            "role": item.get("role"),
            "path": str(live),
            "previous_existed": current is not None,
            "previous_sha256": None if current is None else sha256_bytes(current),
            "backup": backups[index],
            "new_sha256": sha256_bytes(data),
            "created_dirs": done[index][2],
            "adopted_at": adopted_at,
        }
        append_jsonl(dirs.ledger, entry)
        entries.append(entry)
    return AdoptResult(night_id=night, staging_dir=staging_dir, backup_dir=backup_dir,
                       files=entries)


# --------------------------------------------------------------------------- revert


def _undo(current: bytes, backup: str) -> bytes | None:
    """The previous bytes, from the adopted bytes and the undo record (None if unreadable)."""
    raw = read_bytes_or_none(backup) if backup else None
    if raw is None:
        return None
    try:
        undo = json.loads(raw.decode("utf-8"))
        return _splice(current, int(undo["prefix"]), int(undo["suffix"]), _unb64(undo["restore"]))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def revert(project: str | os.PathLike[str], night_id: str | None = None) -> RevertResult:
    """Undo an adoption: restore the exact previous bytes, or remove files it created.

    Default: the latest adoption still in effect. Refuses (``EXIT_CONFLICT``, nothing written)
    when a live file was edited after adoption or the backup is missing or damaged.
    """
    dirs = project_dirs(project)
    groups = adoptions(dirs.project)
    if night_id is not None:
        mine = [g for g in groups if g["night_id"] == night_id]
        if not mine:
            raise UserError(f"night {night_id} was never adopted in {dirs.project}", EXIT_CONFLICT)
        group = mine[-1]
        if group["reverted"]:
            raise UserError(f"night {night_id} is already reverted", EXIT_CONFLICT)
    else:
        live_groups = [g for g in groups if not g["reverted"]]
        if not live_groups:
            raise UserError(f"nothing to revert: no adoption in effect in {dirs.project}",
                            EXIT_CONFLICT)
        group = live_groups[-1]
    night = str(group["night_id"])

    plan = []
    conflicts = []
    for entry in group["files"]:
        live = Path(str(entry["path"]))
        current = read_bytes_or_none(live)
        if current is None or sha256_bytes(current) != entry.get("new_sha256"):
            state = "was deleted" if current is None else "was edited"
            conflicts.append(f"{live} {state} after adoption")
            continue
        previous: bytes | None = None
        if entry.get("previous_existed"):
            previous = _undo(current, str(entry.get("backup") or ""))
            if previous is None or sha256_bytes(previous) != entry.get("previous_sha256"):
                raise UserError(f"the backup of {live} ({entry.get('backup')}) is missing or "
                                "damaged; nothing was reverted", EXIT_CONFLICT)
        plan.append((entry, live, current, previous))
    if conflicts:
        raise UserError(f"cannot revert night {night}: {'; '.join(conflicts)}. Nothing was "
                        "written; undo those edits by hand or keep the current files.",
                        EXIT_CONFLICT)

    done: list[tuple[Path, bytes | None, list[str]]] = []
    for entry, live, current, previous in plan:
        try:
            if previous is None:
                live.unlink()
                _remove_empty_dirs(list(entry.get("created_dirs") or []))
            else:
                atomic_write_bytes(live, previous)
        except OSError as exc:
            _rollback(done)
            raise UserError(f"could not restore {live} ({exc.strerror or exc}); the files already "
                            "restored were put back, nothing was reverted", EXIT_CONFLICT) from None
        done.append((live, current, []))

    reverted_at = now()
    entries = []
    for entry, live, _current, previous in plan:
        record = {
            "event": "revert",
            "adoption_id": group["adoption_id"],
            "night_id": night,
            "role": entry.get("role"),
            "path": str(live),
            "action": "deleted" if previous is None else "restored",
            "restored_sha256": None if previous is None else sha256_bytes(previous),
            "reverted_at": reverted_at,
        }
        append_jsonl(dirs.ledger, record)
        entries.append(record)
    return RevertResult(night_id=night, files=entries)
