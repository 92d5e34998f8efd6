"""Proposals: stage a night's documents for review, and read staged proposals back (adoption,
and the adoption state of each proposal, are ``adoption.py``).

A proposal is ``<project>/.skillopt-sleep/staging/<night-id>/`` holding the proposed documents,
the report and a manifest with the sha-256 of every proposal and of every live baseline the night
read.

No copy of a user's document ever lands on disk with its secrets: the proposal kept for review is
redacted, and what adoption applies is only the *change* — the bytes between the common prefix
and suffix of the baseline and the proposal (the managed block, written by the engine from
redacted inputs) — spliced into the live file, whose sha-256 must still be the baseline's. The
backup is the reverse change, so ``revert`` restores the exact previous bytes (checked against
their sha-256) without a full copy of them.

The manifest names what ``adopt`` writes, and it lives in the project, where a cloned repository
could plant one; so it is sealed (``seal_manifest``: an HMAC under the per-user key of
``state_key`` over the project's resolved path and the manifest), and a manifest that does not
verify is no proposal: not listed, not reviewed, not adopted.
"""

from __future__ import annotations

import base64
import difflib
import json
import os
import secrets
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skillopt_sleep.documents.containment import check_state_dir
from skillopt_sleep.documents.managed_block import END, START
from skillopt_sleep.errors import EXIT_CONFLICT, EXIT_USAGE, UserError
from skillopt_sleep.paths import project_dirs
from skillopt_sleep.redact import redact
from skillopt_sleep.report.proposal import build_view, managed_block_diff
from skillopt_sleep.report.markdown import render_markdown
from skillopt_sleep.files import atomic_write_bytes, atomic_write_text, sha256_bytes
from skillopt_sleep.report.html import render_html
from skillopt_sleep.store.proposals import adoption_states
from skillopt_sleep.report.trend_chart import trend_points
from skillopt_sleep.store.proposals import MANIFEST_FORMAT, SAFE_ID, seal_manifest
from skillopt_sleep.types import NightReport, format_time

ROLES = ("skill", "memory")


@dataclass
class StagedFile:
    role: str  # "skill" | "memory"
    live_path: Path
    baseline: bytes | None  # the live bytes the night read; None = the file did not exist
    proposed: bytes


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


def _redacted(data: bytes) -> bytes:
    text = data.decode("utf-8", "surrogateescape")
    return redact(text).encode("utf-8", "surrogateescape")


def _label(live: Path, project: Path) -> str:
    """A document's name in a diff: relative to the project when inside it."""
    try:
        return live.relative_to(project.resolve()).as_posix()
    except ValueError:
        return str(live)


def _outside_block(text: str) -> str:
    start = text.find(START)
    end = text.find(END, start + len(START)) if start >= 0 else -1
    return text if start < 0 or end < 0 else text[:start] + text[end + len(END) :]


def document_diff(label: str, baseline: bytes | None, proposed: bytes) -> str:
    """The diff a reviewer reads: the managed block's, or — when the night also changed
    hand-written lines (whole-skill editing) — the whole document's (redacted either way)."""
    before = (baseline or b"").decode("utf-8", "replace")
    after = proposed.decode("utf-8", "replace")
    if baseline is None or _outside_block(before) == _outside_block(after):
        return managed_block_diff(label, baseline, proposed)
    full = f"{label} (whole document: hand-written lines changed)"
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=f"a/{full}", tofile=f"b/{full}"
    )
    return redact("".join(line if line.endswith(("\n", "\r")) else line + "\n" for line in lines))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def now() -> str:
    return format_time(datetime.now(timezone.utc)) or ""


def ensure_project_dir(project: str | os.PathLike[str]) -> Path:
    """Create ``<project>/.skillopt-sleep/`` with a ``.gitignore`` that keeps it out of git."""
    check_state_dir(Path(project))  # a link out of the project is refused, never written through
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
    past_nights: list[dict[str, Any]] | None = None,
) -> Path:
    """Write the proposal directory and return it; sets ``report.staging_dir``.

    ``past_nights`` (the project's history, oldest first) feed the score trend in report.html.

    The directory is assembled under a temporary name and renamed into place, so a crash never
    leaves a half-written proposal that ``adopt`` could pick up.
    """
    dirs = project_dirs(project)
    if not SAFE_ID.match(report.night_id or ""):
        raise ValueError(f"night id {report.night_id!r} is not a safe directory name")
    ensure_project_dir(dirs.project)
    final = dirs.staging / report.night_id
    if final.exists():
        raise UserError(f"a proposal for night {report.night_id} is already staged at {final}", EXIT_CONFLICT)
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
            insert = staged.proposed[prefix : len(staged.proposed) - suffix]
            removed = baseline[prefix : len(baseline) - suffix]
            if _redacted(insert) != insert or _redacted(removed) != removed:
                raise UserError(
                    f"the change to {live} would carry what looks like a secret; refusing "
                    "to stage it (remove the secret from the managed block by hand)",
                    EXIT_CONFLICT,
                )
            review = _redacted(staged.proposed)
            atomic_write_bytes(work / rel, review)
            baseline_sha = None if staged.baseline is None else sha256_bytes(staged.baseline)
            entries.append(
                {
                    "role": staged.role,
                    "live_path": str(live),
                    "proposal": rel,  # for review; secrets redacted
                    "proposal_sha256": sha256_bytes(review),
                    "proposed_sha256": sha256_bytes(staged.proposed),  # what adoption will write
                    "baseline_sha256": baseline_sha,
                    "baseline_existed": staged.baseline is not None,
                    "change": {"prefix": prefix, "suffix": suffix, "insert": _b64(insert), "removed": _b64(removed)},
                    "diff": document_diff(
                        _label(live, dirs.project), staged.baseline, staged.proposed
                    ),  # for review only
                }
            )
        report.staging_dir = str(final)
        manifest = {
            "format": MANIFEST_FORMAT,
            "night_id": report.night_id,
            "project": str(dirs.project),
            "created": now(),
            "status": report.status,
            "simulated": report.simulated,
            "files": entries,
        }
        manifest = seal_manifest(dirs.project, manifest)
        atomic_write_text(work / "manifest.json", json.dumps(manifest, indent=2) + "\n")
        atomic_write_text(work / "report.json", json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
        shown = report.redacted()  # whatever the night's parts put in it, written without secrets
        atomic_write_text(work / "report.md", render_markdown(shown))
        view = build_view(shown, manifest, "staged", str(final))
        atomic_write_text(
            work / "report.html",
            render_html(view, trend_points(past_nights or [], report, adoption_states(dirs.project))),
        )
        if evidence is not None and Path(evidence).is_file():
            shutil.copyfile(evidence, work / "evidence.jsonl")
        os.replace(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        report.staging_dir = None
        raise
    from skillopt_sleep.store.notices import refresh_project_notice

    refresh_project_notice(dirs.project)
    return final


def resolve_project(path: str | os.PathLike[str] | None) -> Path:
    """The ``--project`` argument (default: the current directory) as an existing directory."""
    project = Path(path if path is not None else os.getcwd()).expanduser().resolve()
    if not project.is_dir():
        raise UserError(f"project {project} is not a directory", EXIT_USAGE)
    check_state_dir(project)  # every verb: its state is this project's own, not a link elsewhere
    return project
