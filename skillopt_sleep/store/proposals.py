"""Staged proposals and adoptions read back: each proposal's sealed manifest with its adoption state,
and the adoptions in the project's ledger. Reading only; staging writes proposals
(``staging/stage.py``), adoption writes the ledger (``staging/adoption.py``)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from skillopt_sleep.files import read_json, read_jsonl
from skillopt_sleep.paths import project_dirs
from skillopt_sleep.store.state_key import mac_verifies, with_mac

MANIFEST_FORMAT = "skillopt_sleep.manifest.v1"
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # a night id that is a plain directory name


MANIFEST_SEAL = "skillopt-sleep manifest v1"


def adoption_states(project: str | os.PathLike[str]) -> dict[str, str]:
    """night id -> ``"adopted"`` or ``"reverted"``: the last event the adoption ledger holds for it."""
    states: dict[str, str] = {}
    for entry in read_jsonl(project_dirs(project).ledger):
        night = entry.get("night_id")
        if isinstance(night, str):
            states[night] = "reverted" if entry.get("event") == "revert" else "adopted"
    return states


def seal_manifest(project: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest with its MAC (as is, without a trusted key: then it will not verify)."""
    return with_mac(MANIFEST_SEAL, str(project), manifest)


def read_manifest(directory: Path) -> dict[str, Any] | None:
    """A proposal's manifest, or None when it is missing, damaged, or not this directory's own
    (its night id must be the directory's name)."""
    try:
        manifest = read_json(directory / "manifest.json")
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        return None
    if not isinstance(manifest.get("files"), list) or not all(isinstance(f, dict) for f in manifest["files"]):
        return None
    if manifest.get("night_id") != directory.name or not SAFE_ID.match(directory.name):
        return None
    project = directory.resolve().parent.parent.parent  # <project>/.skillopt-sleep/staging/<id>
    if not mac_verifies(MANIFEST_SEAL, str(project), manifest):
        return None  # not written with this user's key: planted or edited
    return manifest


def staged_proposals(project: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every readable proposal's manifest plus its ``staging_dir`` (unordered; ``adoption.
    list_proposals`` adds the adoption state and sorts)."""
    dirs = project_dirs(project)
    if not dirs.staging.is_dir():
        return []
    proposals = []
    for directory in dirs.staging.iterdir():
        if directory.name.startswith(".") or not directory.is_dir():
            continue
        manifest = read_manifest(directory)
        if manifest is not None:
            proposals.append({**manifest, "staging_dir": str(directory)})
    return proposals


def ledger(project: Path) -> list[dict[str, Any]]:
    return read_jsonl(project_dirs(project).ledger)


def list_proposals(project: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Staged proposals, newest first: the manifest plus ``staging_dir``, ``state``, ``adopted``."""
    dirs = project_dirs(project)
    states = adoption_states(dirs.project)
    proposals = []
    for proposal in staged_proposals(dirs.project):
        state = states.get(str(proposal.get("night_id")), "staged")
        proposals.append({**proposal, "state": state, "adopted": state == "adopted"})
    proposals.sort(key=lambda p: (str(p.get("created") or ""), p["staging_dir"]), reverse=True)
    return proposals


def adoptions(project: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Adoptions, oldest first: ``{adoption_id, night_id, adopted_at, files, reverted}``."""
    groups: dict[str, dict[str, Any]] = {}
    for entry in ledger(project_dirs(project).project):
        adoption_id = str(entry.get("adoption_id") or entry.get("night_id"))
        if entry.get("event", "adopt") == "adopt":
            group = groups.setdefault(
                adoption_id,
                {
                    "adoption_id": adoption_id,
                    "night_id": entry.get("night_id"),
                    "adopted_at": entry.get("adopted_at"),
                    "files": [],
                    "reverted": False,
                },
            )
            group["files"].append(entry)
        elif entry.get("event") == "revert" and adoption_id in groups:
            groups[adoption_id]["reverted"] = True
            groups[adoption_id]["reverted_at"] = entry.get("reverted_at")
    return list(groups.values())
