"""Proposals: stage a night's documents for review, adopt them back, revert an adoption.

A proposal is ``<project>/.skillopt-sleep/staging/<night-id>/`` holding the proposed documents,
the report and a manifest with the sha-256 of every proposal and of every live baseline the night
read. Adoption writes nothing unless every proposal is intact and every live file is still the
bytes the night read; it backs up first and logs each file in the project's adoption ledger,
which is what ``revert`` replays backwards.

No copy of a user's document ever lands on disk with its secrets: the proposal kept for review is
redacted, and what adoption applies is only the *change* — the bytes between the common prefix
and suffix of the baseline and the proposal (the managed block, written by the engine from
redacted inputs) — spliced into the live file, whose sha-256 must still be the baseline's. The
backup is the reverse change, so ``revert`` restores the exact previous bytes (checked against
their sha-256) without a full copy of them.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skillopt_sleep.errors import EXIT_CONFLICT, EXIT_USAGE, UserError
from skillopt_sleep.paths import project_dirs
from skillopt_sleep.redact import redact
from skillopt_sleep.report import render_markdown
from skillopt_sleep.state import (
    append_jsonl,
    atomic_write_bytes,
    atomic_write_text,
    read_bytes_or_none,
    read_jsonl,
    sha256_bytes,
)
from skillopt_sleep.types import NightReport, format_time

MANIFEST_FORMAT = "skillopt_sleep.manifest.v1"
ROLES = ("skill", "memory")
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass
class StagedFile:
    role: str  # "skill" | "memory"
    live_path: Path
    baseline: bytes | None  # the live bytes the night read; None = the file did not exist
    proposed: bytes


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


def _change(baseline: bytes, proposed: bytes) -> tuple[int, int]:
    """(common prefix length, common suffix length) of two byte strings, not overlapping."""
    limit = min(len(baseline), len(proposed))
    prefix = 0
    while prefix < limit and baseline[prefix] == proposed[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and baseline[-1 - suffix] == proposed[-1 - suffix]:
        suffix += 1
    return prefix, suffix


def _splice(data: bytes, prefix: int, suffix: int, middle: bytes) -> bytes:
    return data[:prefix] + middle + data[len(data) - suffix:]


def _redacted(data: bytes) -> bytes:
    text = data.decode("utf-8", "surrogateescape")
    return redact(text).encode("utf-8", "surrogateescape")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(value: Any) -> bytes:
    return base64.b64decode(str(value), validate=True)


def _now() -> str:
    return format_time(datetime.now(timezone.utc)) or ""


def ensure_project_dir(project: str | os.PathLike[str]) -> Path:
    """Create ``<project>/.skillopt-sleep/`` with a ``.gitignore`` that keeps it out of git."""
    root = project_dirs(project).root
    root.mkdir(parents=True, exist_ok=True)
    gitignore = root / ".gitignore"
    if not gitignore.exists():
        atomic_write_text(gitignore, "*\n")
    return root


# --------------------------------------------------------------------------- stage


def stage(
    project: str | os.PathLike[str],
    report: NightReport,
    files: list[StagedFile],
    evidence: str | os.PathLike[str] | None = None,
) -> Path:
    """Write the proposal directory and return it; sets ``report.staging_dir``.

    The directory is assembled under a temporary name and renamed into place, so a crash never
    leaves a half-written proposal that ``adopt`` could pick up.
    """
    dirs = project_dirs(project)
    if not _SAFE_ID.match(report.night_id or ""):
        raise ValueError(f"night id {report.night_id!r} is not a safe directory name")
    ensure_project_dir(dirs.project)
    final = dirs.staging / report.night_id
    if final.exists():
        raise UserError(f"a proposal for night {report.night_id} is already staged at {final}",
                        EXIT_CONFLICT)
    dirs.staging.mkdir(parents=True, exist_ok=True)
    work = dirs.staging / f".tmp-{report.night_id}-{secrets.token_hex(4)}"
    work.mkdir()
    try:
        entries = []
        used: set[str] = set()
        for staged in files:
            if staged.role not in ROLES:
                raise ValueError(f"unknown document role {staged.role!r}")
            if staged.baseline is not None and staged.proposed == staged.baseline:
                continue  # nothing to adopt
            live = Path(staged.live_path).expanduser().resolve()
            folder, n = staged.role, 1
            while f"{folder}/{live.name}" in used:
                n += 1
                folder = f"{staged.role}-{n}"
            rel = f"proposed/{folder}/{live.name}"
            used.add(f"{folder}/{live.name}")
            baseline = staged.baseline or b""
            prefix, suffix = _change(baseline, staged.proposed)
            insert = staged.proposed[prefix:len(staged.proposed) - suffix]
            removed = baseline[prefix:len(baseline) - suffix]
            if _redacted(insert) != insert or _redacted(removed) != removed:
                raise UserError(f"the change to {live} would carry what looks like a secret; refusing "
                                "to stage it (remove the secret from the managed block by hand)",
                                EXIT_CONFLICT)
            review = _redacted(staged.proposed)
            atomic_write_bytes(work / rel, review)
            baseline_sha = None if staged.baseline is None else sha256_bytes(staged.baseline)
            entries.append({
                "role": staged.role,
                "live_path": str(live),
                "proposal": rel,  # for review; secrets redacted
                "proposal_sha256": sha256_bytes(review),
                "proposed_sha256": sha256_bytes(staged.proposed),  # what adoption will write
                "baseline_sha256": baseline_sha,
                "baseline_existed": staged.baseline is not None,
                "change": {"prefix": prefix, "suffix": suffix, "insert": _b64(insert),
                           "removed": _b64(removed)},
            })
        report.staging_dir = str(final)
        manifest = {
            "format": MANIFEST_FORMAT,
            "night_id": report.night_id,
            "project": str(dirs.project),
            "created": _now(),
            "status": report.status,
            "files": entries,
        }
        atomic_write_text(work / "manifest.json", json.dumps(manifest, indent=2) + "\n")
        atomic_write_text(work / "report.json",
                          json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
        atomic_write_text(work / "report.md", render_markdown(report))
        if evidence is not None and Path(evidence).is_file():
            shutil.copyfile(evidence, work / "evidence.jsonl")
        os.replace(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        report.staging_dir = None
        raise
    return final


# --------------------------------------------------------------------------- ledger views


def _ledger(project: Path) -> list[dict[str, Any]]:
    return read_jsonl(project_dirs(project).ledger)


def _night_states(ledger: list[dict[str, Any]]) -> dict[str, str]:
    """night id -> "adopted" | "reverted", from the last event recorded for it."""
    states: dict[str, str] = {}
    for entry in ledger:
        night = entry.get("night_id")
        if isinstance(night, str):
            states[night] = "reverted" if entry.get("event") == "revert" else "adopted"
    return states


def _read_manifest(directory: Path) -> dict[str, Any] | None:
    try:
        manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        return None
    if not isinstance(manifest.get("files"), list):
        return None
    return manifest


def list_proposals(project: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Staged proposals, newest first: the manifest plus ``staging_dir``, ``state``, ``adopted``."""
    dirs = project_dirs(project)
    if not dirs.staging.is_dir():
        return []
    states = _night_states(_ledger(dirs.project))
    proposals = []
    for directory in dirs.staging.iterdir():
        if directory.name.startswith(".") or not directory.is_dir():
            continue
        manifest = _read_manifest(directory)
        if manifest is None:
            continue
        state = states.get(str(manifest.get("night_id")), "staged")
        proposals.append({**manifest, "staging_dir": str(directory), "state": state,
                          "adopted": state == "adopted"})
    proposals.sort(key=lambda p: (str(p.get("created") or ""), p["staging_dir"]), reverse=True)
    return proposals


def latest_proposal(project: str | os.PathLike[str]) -> Path | None:
    proposals = list_proposals(project)
    return Path(proposals[0]["staging_dir"]) if proposals else None


def adoptions(project: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Adoptions, oldest first: ``{adoption_id, night_id, adopted_at, files, reverted}``."""
    groups: dict[str, dict[str, Any]] = {}
    for entry in _ledger(project_dirs(project).project):
        adoption_id = str(entry.get("adoption_id") or entry.get("night_id"))
        if entry.get("event", "adopt") == "adopt":
            group = groups.setdefault(adoption_id, {
                "adoption_id": adoption_id, "night_id": entry.get("night_id"),
                "adopted_at": entry.get("adopted_at"), "files": [], "reverted": False,
            })
            group["files"].append(entry)
        elif entry.get("event") == "revert" and adoption_id in groups:
            groups[adoption_id]["reverted"] = True
            groups[adoption_id]["reverted_at"] = entry.get("reverted_at")
    return list(groups.values())


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


def adopt(project: str | os.PathLike[str], night_id: str | None = None) -> AdoptResult:
    """Write a staged proposal back to the live documents, all or nothing.

    Default: the newest proposal that has changes. Refuses (``EXIT_CONFLICT``, nothing written)
    when the proposal was tampered with, when a live file changed since the night read it, or when
    the night is already adopted.
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
    for item, live, current, data in plan:
        created_dirs = _missing_parents(live)
        try:
            atomic_write_bytes(live, data)
        except OSError as exc:
            _rollback(done)
            _remove_empty_dirs(created_dirs)
            raise UserError(f"could not write {live} ({exc.strerror or exc}); the files already "
                            "written were restored, nothing was adopted", EXIT_CONFLICT) from None
        done.append((live, current, created_dirs))

    adopted_at = _now()
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

    reverted_at = _now()
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


def resolve_project(path: str | os.PathLike[str] | None) -> Path:
    """The ``--project`` argument (default: the current directory) as an existing directory."""
    project = Path(path if path is not None else os.getcwd()).expanduser().resolve()
    if not project.is_dir():
        raise UserError(f"project {project} is not a directory", EXIT_USAGE)
    return project
