"""Harvest state under ``state_dir``: per-file checkpoints and the digest cache.

Layout::

    state_dir/harvest-checkpoints.json   {"version": 1, "files": {path: checkpoint}}
    state_dir/digests/index.json         {"version": 1, "shards": {shard: project},
                                          "sessions": {"source:session_id": shard}}
    state_dir/digests/<shard>.jsonl      one SessionDigest per line

A checkpoint is ``{source, identity: [dev, inode], size, offset, state}``: ``offset`` is the end of
the last complete line consumed, ``size`` the file size when it was read, ``state`` the parser's
resumable memory. The digest cache is sharded by (source, project) so a night loads only its own
project's sessions, not every session ever harvested; it keeps sessions whose transcripts Claude
Code has since deleted.

Nothing is written until ``commit``. Commit takes a lock, re-reads what is on disk and applies
only the files whose checkpoint nobody else advanced meanwhile (two projects' nights may harvest
at once), so a byte range is never merged into a digest twice. Every write is atomic.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from collections.abc import Iterator

from ..files import atomic_write_text, parse_json, read_json, read_regular_text, remove_temp_files
from ..store.locks import exclusive
from ..types import SessionDigest

CHECKPOINTS_FILE = "harvest-checkpoints.json"
DIGESTS_DIR = "digests"
INDEX_FILE = "index.json"
LOCK_FILE = "harvest.lock"
VERSION = 1
SHARD_READ_LIMIT = 256 * 1024 * 1024  # a shard larger than this is re-harvested


def _read_json(path: Path) -> dict[str, Any]:
    """A state file, or {} when it is missing or damaged (the next harvest then re-reads)."""
    try:
        data = read_json(path)
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) and data.get("version") == VERSION else {}


def shard_name(source: str, project: str) -> str:
    return f"{source}-{hashlib.sha256(project.encode('utf-8', 'replace')).hexdigest()[:16]}"


def session_key(source: str, session_id: str) -> str:
    return f"{source}:{session_id}"


class HarvestStore:
    """In-memory view of the state plus the changes one harvest wants to persist.

    With ``state_dir=None`` it starts empty and ``commit`` does nothing (a stateless full read).
    """

    def __init__(self, state_dir: Path | None) -> None:
        self.state_dir = state_dir
        self.checkpoints: dict[str, dict[str, Any]] = {}
        self.shards: dict[str, str] = {}  # shard -> project
        self.sessions: dict[str, str] = {}  # session key -> shard
        self._loaded: dict[str, dict[str, SessionDigest]] = {}
        # what commit applies: file checkpoints (with the checkpoint they were based on) and
        # per-session results (digest or None = drop), tagged with the file they came from
        self.new_checkpoints: dict[str, tuple[dict[str, Any] | None, dict[str, Any]]] = {}
        self.changes: dict[str, tuple[str, SessionDigest | None]] = {}
        self.vanished: set[str] = set()
        if state_dir is not None:
            files = _read_json(state_dir / CHECKPOINTS_FILE).get("files")
            self.checkpoints = files if isinstance(files, dict) else {}
            index = _read_json(state_dir / DIGESTS_DIR / INDEX_FILE)
            shards, sessions = index.get("shards"), index.get("sessions")
            self.shards = shards if isinstance(shards, dict) else {}
            self.sessions = sessions if isinstance(sessions, dict) else {}

    # -- digests -------------------------------------------------------------------------
    def _shard(self, name: str) -> dict[str, SessionDigest]:
        if name not in self._loaded:
            self._loaded[name] = self._read_shard(name)
        return self._loaded[name]

    def _read_shard(self, name: str) -> dict[str, SessionDigest]:
        digests: dict[str, SessionDigest] = {}
        if self.state_dir is None:
            return digests
        try:
            text = read_regular_text(self.state_dir / DIGESTS_DIR / f"{name}.jsonl", SHARD_READ_LIMIT, "replace")
        except OSError:
            return digests
        for line in text.split("\n"):
            try:
                digest = SessionDigest.from_dict(parse_json(line))
            except (ValueError, TypeError, AttributeError):
                continue  # a damaged cache line costs one session, not the cache
            digests[session_key(digest.source, digest.session_id)] = digest
        return digests

    def get(self, source: str, session_id: str) -> SessionDigest | None:
        key = session_key(source, session_id)
        if key in self.changes:
            return self.changes[key][1]
        shard = self.sessions.get(key)
        return self._shard(shard).get(key) if shard else None

    def put(self, digest: SessionDigest, path: str) -> None:
        self.changes[session_key(digest.source, digest.session_id)] = (path, digest)

    def drop(self, source: str, session_id: str, path: str) -> None:
        self.changes[session_key(source, session_id)] = (path, None)

    def digests(self, wanted_project: Any) -> Iterator[SessionDigest]:
        """Every known digest (cached or new) whose project satisfies ``wanted_project(project)``."""
        for _key, (_path, digest) in self.changes.items():
            if digest is not None and wanted_project(digest.project):
                yield digest
        for shard, project in self.shards.items():
            if not isinstance(project, str) or not wanted_project(project):
                continue
            for key, digest in self._shard(shard).items():
                if key not in self.changes and wanted_project(digest.project):
                    yield digest

    # -- commit --------------------------------------------------------------------------
    def commit(self) -> None:
        if self.state_dir is None:
            return
        with exclusive(self.state_dir / LOCK_FILE):
            self._commit_locked(self.state_dir)
        self.new_checkpoints.clear()
        self.changes.clear()
        self.vanished.clear()

    def _commit_locked(self, state_dir: Path) -> None:
        # Every writer of these files holds this lock, so temp files here are a killed commit's.
        remove_temp_files(state_dir, {CHECKPOINTS_FILE})
        remove_temp_files(state_dir / DIGESTS_DIR)
        on_disk = _read_json(state_dir / CHECKPOINTS_FILE).get("files")
        files: dict[str, Any] = on_disk if isinstance(on_disk, dict) else {}
        conflicted = {path for path, (base, _new) in self.new_checkpoints.items() if files.get(path) != base}
        for path, (_base, new) in self.new_checkpoints.items():
            if path not in conflicted:
                files[path] = new
        for path in self.vanished:
            if path not in self.new_checkpoints:
                files.pop(path, None)

        index = _read_json(state_dir / DIGESTS_DIR / INDEX_FILE)
        shards = index.get("shards")
        if not isinstance(shards, dict):
            shards = {}
        sessions = index.get("sessions")
        if not isinstance(sessions, dict):
            sessions = {}
        touched: dict[str, dict[str, SessionDigest]] = {}

        def shard_for_update(name: str) -> dict[str, SessionDigest]:
            if name not in touched:
                touched[name] = self._read_shard(name)
            return touched[name]

        for key, (path, digest) in self.changes.items():
            if path in conflicted:
                continue  # another harvest committed this file first; it is re-read next time
            old = sessions.pop(key, None)
            if old:
                shard_for_update(old).pop(key, None)
            if digest is not None:
                name = shard_name(digest.source, digest.project)
                shards[name] = digest.project
                sessions[key] = name
                shard_for_update(name)[key] = digest
        for name, digests in touched.items():
            body = "".join(json.dumps(d.to_dict(), ensure_ascii=False) + "\n" for d in digests.values())
            atomic_write_text(state_dir / DIGESTS_DIR / f"{name}.jsonl", body)
        index = {"version": VERSION, "shards": shards, "sessions": sessions}
        atomic_write_text(state_dir / DIGESTS_DIR / INDEX_FILE, json.dumps(index, sort_keys=True))
        atomic_write_text(
            state_dir / CHECKPOINTS_FILE,
            json.dumps({"version": VERSION, "files": files}, sort_keys=True),
        )
        self.checkpoints, self.shards, self.sessions = files, shards, sessions
        self._loaded = {name: d for name, d in touched.items()}
