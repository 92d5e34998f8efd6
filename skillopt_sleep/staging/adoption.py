"""Adoption: write a staged proposal back to the live documents, and revert it; the adoption
ledger and the views over it.

Adoption writes nothing unless every proposal is intact, names only documents a night of this
project may target (resolved afresh here, never taken from the manifest), and every live file is
still the bytes the night read. It splices the staged change into those bytes, backs up the reverse
change first, and logs each file in the project's adoption ledger, which ``revert`` replays
backwards to restore the exact previous bytes (checked by sha-256).

Adopt, revert and a night all hold the project lock (``locks.ProjectLock``), and a multi-file adopt
or revert is journaled (``staging/adoption_journal.py``): whoever takes the lock next finishes or rolls back what a
killed process left half done, and removes its debris (``debris.py``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt_sleep.staging import adoption_journal as journal
from skillopt_sleep.config import Config, load_config
from skillopt_sleep.documents.containment import check_state_dir, checked_document, read_live
from skillopt_sleep.store.debris import clean_debris
from skillopt_sleep.documents.agents import AGENT_DOCUMENTS
from skillopt_sleep.documents.managed_block import document_paths, is_read_only
from skillopt_sleep.errors import EXIT_CONFLICT, UserError
from skillopt_sleep.files import atomic_write_text, parse_json, read_bytes_or_none, sha256_bytes
from skillopt_sleep.store.locks import ProjectLock
from skillopt_sleep.store.notices import refresh_project_notice
from skillopt_sleep.paths import project_dirs
from skillopt_sleep.store.proposals import adoptions, list_proposals
from skillopt_sleep.staging.stage import ROLES, ensure_project_dir, now


@dataclass
class AdoptResult:
    night_id: str
    staging_dir: Path
    backup_dir: Path
    files: list[dict[str, Any]] = field(default_factory=list)  # ledger entries written
    recovered: str | None = None  # what finishing an interrupted adopt/revert did first

    def to_dict(self) -> dict[str, Any]:
        return {
            "night_id": self.night_id,
            "staging_dir": str(self.staging_dir),
            "backup_dir": str(self.backup_dir),
            "files": self.files,
            "recovered": self.recovered,
        }


@dataclass
class RevertResult:
    night_id: str
    files: list[dict[str, Any]] = field(default_factory=list)  # ledger entries written
    recovered: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"night_id": self.night_id, "files": self.files, "recovered": self.recovered}


# --------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Targets:
    """The live documents a night of this project may write, per role (resolved paths)."""

    skill: frozenset[Path]
    memory: frozenset[Path]

    def allows(self, role: str, path: Path) -> bool:
        return path in (self.skill if role == "skill" else self.memory if role == "memory" else ())

    def all(self) -> list[Path]:
        return sorted(self.skill | self.memory)


def allowed_targets(project: Path, config: Config | None = None, skill_path: Path | None = None) -> Targets:
    """Every agent's documents for this project (DESIGN §5), from its config, never a manifest."""
    config = config or load_config(project)
    skills, memories = set(), set()
    for agent in AGENT_DOCUMENTS:
        skill, memory = document_paths(
            project,
            agent,
            config.documents.skill_name,
            Path(skill_path).expanduser() if skill_path else None,
            config.documents.user_level_skill,
        )
        skills.add(checked_document(project, skill))  # refused when it resolves outside
        memories.add(checked_document(project, memory))
    return Targets(frozenset(skills), frozenset(memories))


def _target(targets: Targets, role: Any, named: Any, night: str, where: str) -> Path:
    path = Path(str(named))
    if role not in ROLES or not path.is_absolute() or not targets.allows(role, path):
        raise UserError(
            f"the {where} of night {night} names {named!r} as its {role} document, which is not a "
            "document a night of this project may target; refusing (a proposal copied or planted "
            "from elsewhere? with --target-skill-path, pass the same path here)",
            EXIT_CONFLICT,
        )
    return path


# --------------------------------------------------------------------------- the project lock


@contextlib.contextmanager
def hold_project(project: Path, purpose: str, targets: Targets, night_id: str | None = None) -> Iterator[str | None]:
    """Hold the project lock; first finish any interrupted adopt/revert and remove debris.

    Yields the one-line account of a recovery (None when there was nothing to recover).
    """
    check_state_dir(project)  # before the lock file is made in it
    with ProjectLock(project_dirs(project).lock, purpose, night_id):
        try:
            ensure_project_dir(project)  # under the lock: its temp file must not look like debris
            clean_debris(project, targets.all())
            yield journal.recover(project, targets.allows)
        finally:
            refresh_project_notice(project)  # whatever changed under the lock, the notice says


# --------------------------------------------------------------------------- adopt


def _unb64(value: Any) -> bytes:
    return base64.b64decode(str(value), validate=True)


def _splice(data: bytes, prefix: int, suffix: int, middle: bytes) -> bytes:
    return data[:prefix] + middle + data[len(data) - suffix :]


def _pick_proposal(project: Path, night_id: str | None) -> dict[str, Any]:
    proposals = list_proposals(project)
    if night_id is not None:
        for proposal in proposals:
            if proposal.get("night_id") == night_id:
                return proposal
        raise UserError(f"no staged proposal for night {night_id} in {project}", EXIT_CONFLICT)
    with_files = [p for p in proposals if p["files"]]
    if not with_files:
        raise UserError(f"nothing to adopt: no staged proposal with changes in {project}", EXIT_CONFLICT)
    return with_files[0]


def _proposal_path(staging_dir: Path, rel: str) -> Path:
    path = (staging_dir / rel).resolve()
    if staging_dir.resolve() not in path.parents:
        raise UserError(f"manifest in {staging_dir} points outside the proposal: {rel}", EXIT_CONFLICT)
    return path


def _missing_parents(path: Path) -> list[str]:
    missing = []
    for parent in path.parents:
        if parent.exists():
            break
        missing.append(str(parent))
    return missing


def _apply_change(item: dict[str, Any], current: bytes, night: str) -> bytes:
    """The bytes adoption writes: the staged change spliced into the live (baseline) bytes."""
    try:
        change = item["change"]
        data = _splice(current, int(change["prefix"]), int(change["suffix"]), _unb64(change["insert"]))
    except (KeyError, TypeError, ValueError):
        raise UserError(
            f"the manifest of night {night} has no valid change for {item.get('live_path')}; refusing to adopt",
            EXIT_CONFLICT,
        ) from None
    if sha256_bytes(data) != item.get("proposed_sha256"):
        raise UserError(
            f"the change staged by night {night} for {item.get('live_path')} does not "
            "reproduce the proposal; refusing to adopt",
            EXIT_CONFLICT,
        )
    return data


def refuse_simulated(proposal: dict[str, Any], allow_simulated: bool) -> None:
    """A proposal the offline simulator made for real transcripts is not adopted unasked."""
    if proposal.get("simulated") and not allow_simulated:
        night = proposal.get("night_id")
        raise UserError(
            f"night {night} was made by the offline simulator (sim backend), so its rules "
            "were never tried on a real model; nothing was written. Run a night with a real "
            "backend, or adopt it anyway with --allow-simulated",
            EXIT_CONFLICT,
        )


def adopt(
    project: str | os.PathLike[str],
    night_id: str | None = None,
    *,
    allow_simulated: bool = False,
    config: Config | None = None,
    skill_path: Path | None = None,
) -> AdoptResult:
    """Write a staged proposal back to the live documents, all or nothing, under the project lock.

    Default: the newest proposal that has changes. Refuses (``EXIT_CONFLICT``, nothing written)
    when the proposal was tampered with or names a document this project's nights cannot target,
    when a live file changed since the night read it, when the night is already adopted, or when
    it is simulated and ``allow_simulated`` is not set.
    """
    root = project_dirs(project).project
    targets = allowed_targets(root, config, skill_path)
    with hold_project(root, "adopt", targets, night_id) as recovered:
        result = adopt_locked(root, night_id, targets, allow_simulated=allow_simulated)
        _refresh_page(root, result.night_id)
    result.recovered = recovered
    return result


def _plan_adoption(
    proposal: dict[str, Any], targets: Targets, night: str
) -> list[tuple[dict[str, Any], Path, bytes | None, bytes]]:
    staging_dir = Path(proposal["staging_dir"])
    plan, conflicts, roles = [], [], set()
    for item in proposal["files"]:
        live = _target(targets, item.get("role"), item.get("live_path"), night, "proposal")
        if item["role"] in roles:
            raise UserError(
                f"the proposal of night {night} names two {item['role']} documents; refusing to adopt", EXIT_CONFLICT
            )
        roles.add(item["role"])
        source = _proposal_path(staging_dir, str(item.get("proposal", "")))
        review = read_bytes_or_none(source)
        if review is None or sha256_bytes(review) != item.get("proposal_sha256"):
            raise UserError(
                f"proposal file {source} does not match its manifest: it was modified or removed "
                f"after night {night} staged it; refusing to adopt",
                EXIT_CONFLICT,
            )
        current = read_live(live)
        if item.get("baseline_existed"):
            if current is None:
                conflicts.append(f"{live} was deleted")
            elif sha256_bytes(current) != item.get("baseline_sha256"):
                conflicts.append(f"{live} was edited")
        elif current is not None:
            conflicts.append(f"{live} was created")
        if current is not None and is_read_only(live):
            conflicts.append(f"{live} is read-only (its owner froze it; it is kept as it is)")
        if not conflicts:
            plan.append((item, live, current, _apply_change(item, current or b"", night)))
    if conflicts:
        raise UserError(
            f"live files changed since the night read them ({'; '.join(conflicts)}); nothing was "
            f"written. Run a new night to get a proposal against the current files.",
            EXIT_CONFLICT,
        )
    return plan


def adopt_locked(
    project: Path, night_id: str | None, targets: Targets, *, allow_simulated: bool = False
) -> AdoptResult:
    """``adopt`` for a caller that already holds the project lock (a night's ``--auto-adopt``)."""
    dirs = project_dirs(project)
    proposal = _pick_proposal(dirs.project, night_id)
    night = str(proposal["night_id"])
    if proposal["state"] == "adopted":
        raise UserError(f"night {night} is already adopted (revert it first to adopt it again)", EXIT_CONFLICT)
    if not proposal["files"]:
        raise UserError(f"night {night} proposed no changes; nothing to adopt", EXIT_CONFLICT)
    refuse_simulated(proposal, allow_simulated)
    plan = _plan_adoption(proposal, targets, night)

    backup_dir = dirs.backups / night
    adoption_id = f"{night}-{secrets.token_hex(4)}"
    adopted_at = now()
    steps, entries = [], []
    for item, live, current, data in plan:
        backup = None
        if current is not None:
            backup = backup_dir / item["role"] / f"{live.name}.undo.json"
            change = item["change"]
            undo = {
                "format": "skillopt_sleep.undo.v1",
                "path": str(live),
                "prefix": change["prefix"],
                "suffix": change["suffix"],
                "restore": change["removed"],
                "previous_sha256": sha256_bytes(current),
                "new_sha256": sha256_bytes(data),
            }
            try:
                atomic_write_text(backup, json.dumps(undo, indent=2) + "\n")
            except OSError as exc:
                raise UserError(
                    f"could not back up {live} to {backup} ({exc.strerror or exc}); nothing was adopted", EXIT_CONFLICT
                ) from None
        step = journal.FileStep.between(item["role"], live, current, data, _missing_parents(live))
        steps.append(step)
        entries.append(
            journal.seal_entry(
                project,
                {
                    "event": "adopt",
                    "op_id": adoption_id,
                    "adoption_id": adoption_id,
                    "night_id": night,
                    "role": item["role"],
                    "path": str(live),
                    "previous_existed": current is not None,
                    "previous_sha256": step.before_sha256,
                    "backup": None if backup is None else str(backup),
                    "new_sha256": step.after_sha256,
                    "created_dirs": step.created_dirs,
                    "adopted_at": adopted_at,
                },
            )
        )
    record = journal.Journal("adopt", adoption_id, night, adopted_at, steps, entries)
    _carry_out(
        project,
        record,
        [data for _item, _live, _current, data in plan],
        "the files already written were restored, nothing was adopted",
    )
    return AdoptResult(night_id=night, staging_dir=Path(proposal["staging_dir"]), backup_dir=backup_dir, files=entries)


def _refresh_page(project: Path, night_id: str) -> None:
    """report.html says what became of the night (best effort: the files are already written)."""
    from skillopt_sleep.report.html import refresh_report_html

    with contextlib.suppress(OSError, ValueError, UserError):
        refresh_report_html(project, night_id)


def _carry_out(project: Path, record: journal.Journal, contents: list[bytes | None], undone: str) -> None:
    """Journal, write every file, commit; on a write error put back what was written."""
    try:
        journal.begin(project, record)
    except OSError as exc:
        raise UserError(
            f"could not write the adoption journal ({exc.strerror or exc}); nothing was written", EXIT_CONFLICT
        ) from None
    for index, (step, data) in enumerate(zip(record.files, contents, strict=True)):
        if index:
            journal.pause_between_writes()
        try:
            journal.write_side(step, data)
        except OSError as exc:
            with contextlib.suppress(OSError, UserError):  # else the next lock holder rolls back
                journal.abandon(project, record)
            raise UserError(f"could not write {step.path} ({exc.strerror or exc}); {undone}", EXIT_CONFLICT) from None
    journal.commit(project, record)


# --------------------------------------------------------------------------- revert


def _undo(current: bytes, backup: str) -> bytes | None:
    """The previous bytes, from the adopted bytes and the undo record (None if unreadable)."""
    raw = read_bytes_or_none(backup) if backup else None
    if raw is None:
        return None
    try:
        undo = parse_json(raw.decode("utf-8"))
        return _splice(current, int(undo["prefix"]), int(undo["suffix"]), _unb64(undo["restore"]))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def revert(
    project: str | os.PathLike[str],
    night_id: str | None = None,
    *,
    config: Config | None = None,
    skill_path: Path | None = None,
) -> RevertResult:
    """Undo an adoption under the project lock: restore the exact previous bytes, or remove
    files it created.

    Default: the latest adoption still in effect. Refuses (``EXIT_CONFLICT``, nothing written)
    when a live file was edited after adoption or the backup is missing or damaged.
    """
    root = project_dirs(project).project
    targets = allowed_targets(root, config, skill_path)
    with hold_project(root, "revert", targets, night_id) as recovered:
        result = _revert_locked(root, night_id, targets)
        _refresh_page(root, result.night_id)
    result.recovered = recovered
    return result


def _pick_adoption(project: Path, night_id: str | None) -> dict[str, Any]:
    groups = adoptions(project)
    if night_id is not None:
        mine = [g for g in groups if g["night_id"] == night_id]
        if not mine:
            raise UserError(f"night {night_id} was never adopted in {project}", EXIT_CONFLICT)
        if mine[-1]["reverted"]:
            raise UserError(f"night {night_id} is already reverted", EXIT_CONFLICT)
        return mine[-1]
    live_groups = [g for g in groups if not g["reverted"]]
    if not live_groups:
        raise UserError(f"nothing to revert: no adoption in effect in {project}", EXIT_CONFLICT)
    return live_groups[-1]


def _revert_locked(project: Path, night_id: str | None, targets: Targets) -> RevertResult:
    dirs = project_dirs(project)
    group = _pick_adoption(dirs.project, night_id)
    night = str(group["night_id"])
    plan = []
    conflicts = []
    for entry in group["files"]:
        live = _target(targets, entry.get("role"), entry.get("path"), night, "adoption ledger")
        if not journal.entry_verifies(project, entry):
            raise UserError(
                f"the adoption ledger's entry for {live} was not written by this user's "
                "skillopt-sleep (its seal does not verify); nothing was reverted",
                EXIT_CONFLICT,
            )
        current = read_live(live)
        if current is None or sha256_bytes(current) != entry.get("new_sha256"):
            state = "was deleted" if current is None else "was edited"
            conflicts.append(f"{live} {state} after adoption")
            continue
        previous: bytes | None = None
        if entry.get("previous_existed"):
            previous = _undo(current, str(entry.get("backup") or ""))
            if previous is None or sha256_bytes(previous) != entry.get("previous_sha256"):
                raise UserError(
                    f"the backup of {live} ({entry.get('backup')}) is missing or damaged; nothing was reverted",
                    EXIT_CONFLICT,
                )
        plan.append((entry, live, current, previous))
    if conflicts:
        raise UserError(
            f"cannot revert night {night}: {'; '.join(conflicts)}. Nothing was "
            "written; undo those edits by hand or keep the current files.",
            EXIT_CONFLICT,
        )

    revert_id = f"revert-{secrets.token_hex(6)}"
    reverted_at = now()
    steps, records = [], []
    for entry, live, current, previous in plan:
        created = [str(d) for d in entry.get("created_dirs") or [] if previous is None]
        steps.append(journal.FileStep.between(entry["role"], live, current, previous, created))
        records.append(
            {
                "event": "revert",
                "op_id": revert_id,
                "adoption_id": group["adoption_id"],
                "night_id": night,
                "role": entry["role"],
                "path": str(live),
                "action": "deleted" if previous is None else "restored",
                "restored_sha256": None if previous is None else sha256_bytes(previous),
                "reverted_at": reverted_at,
            }
        )
    record = journal.Journal("revert", revert_id, night, reverted_at, steps, records)
    _carry_out(
        project,
        record,
        [previous for _e, _l, _c, previous in plan],
        "the files already restored were put back, nothing was reverted",
    )
    return RevertResult(night_id=night, files=records)
