"""Target answers kept across nights, so unchanged documents are not measured again (DESIGN §6).

A night replays tasks under documents; when neither the documents, the task, the target model nor
the task's judge changed, sample ``i`` of that replay is the same draw it was last night. The cache
keeps each successful attempt call keyed by (the request — documents in the system prompt, the task
in the user prompt, the backend and model, the sample index — and the task's judge and reference),
and a later night reuses it instead of paying for a new draw. The answer is scored again by the
current judge, so a score is never stale; a changed judge changes the key anyway, because what a
target writes can depend on the checks it is told about (the simulator's does).

Bounded: entries expire after ``max_age_days`` (counted from the draw, not the last reuse) and
the file is trimmed to ``max_bytes``, newest kept. Written atomically, redacted (see
``backends.stores``). A malformed file is set aside as empty, never an error: the cost is calls.

The file lives in the project and its answers decide gate scores, so it is never taken on faith:
each entry carries an HMAC (``state_key.seal``, a per-user key kept outside the project) over the
cache file's resolved path, the entry's key, its draw time and the completion record. An entry
whose MAC is missing or wrong is dropped on load (the draw is made again) and counted
(``untrusted``); a cache copied from another project does not verify. Without a trusted key nothing
is read back and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.stores import completion_from, completion_record, keepable
from skillopt_sleep.files import atomic_write_text, read_jsonl
from skillopt_sleep.store.state_key import seal, state_key, verifies

FORMAT = "skillopt_sleep.scores.v1"
DAY = 86400.0
DEFAULT_MAX_BYTES = 16 * 1024 * 1024


def _sealed(path: Path, key: str, at: float, record: Any) -> list[Any]:
    """What an entry's MAC covers."""
    return ["skillopt-sleep score cache v1", str(path.resolve()), key, at, record]


def judge_fingerprint(request: Request) -> str:
    task = (request.payload or {}).get("task") or {}
    return json.dumps([task.get("judge"), task.get("reference")], sort_keys=True, default=str)


class ScoreCache:
    """Attempt completions by (request, judge), persisted in one JSONL file."""

    REDONE = "score cache records did not verify and were drawn again"

    def __init__(
        self,
        path: Path,
        *,
        max_age_days: float = 14.0,
        max_bytes: int = DEFAULT_MAX_BYTES,
        now: Callable[[], float] = time.time,
    ):
        self.path = Path(path)
        self.max_age = max_age_days * DAY
        self.max_bytes = max_bytes
        self.now = now
        self.hits = 0
        self.added = 0
        self.untrusted = 0  # entries whose MAC was missing or wrong: dropped, drawn again
        self.key_problem: str | None = None
        self._secret: bytes | None = None
        self._secret_read = False  # the key is looked up when first needed: a dry run makes none
        self._entries: dict[str, dict[str, Any]] = {}  # key -> {"at": draw time, "c": record}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path, **kwargs: Any) -> ScoreCache:
        cache = cls(path, **kwargs)
        try:
            if path.stat().st_size > 2 * cache.max_bytes:
                return cache  # not one we wrote (we trim to max_bytes): start afresh
            records = read_jsonl(path)
        except OSError:
            return cache  # absent or unreadable: the cost is calls, never the night
        if not records or records[0].get("format") != FORMAT:
            return cache  # empty or foreign: start empty, rewrite on save
        oldest = cache.now() - cache.max_age
        secret, _ = state_key(create=False)  # reading makes no key: a dry run writes nothing
        for record in records[1:]:
            key, at = record.get("k"), record.get("at")
            if (
                isinstance(key, str)
                and isinstance(at, (int, float))
                and not isinstance(at, bool)
                and oldest <= at
                and completion_from(record.get("c")) is not None
            ):
                if not verifies(secret, _sealed(path, key, at, record["c"]), record.get("m")):
                    cache.untrusted += 1
                    continue
                cache._entries[key] = {"at": float(at), "c": record["c"]}
        return cache

    def _seal_key(self) -> bytes | None:
        if not self._secret_read:
            self._secret, self.key_problem = state_key()
            self._secret_read = True
        return self._secret

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def _key(key: str, request: Request) -> str | None:
        if request.purpose != "attempt":
            return None
        blob = json.dumps([key, judge_fingerprint(request)])
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def get(self, key: str, request: Request) -> Completion | None:
        own = self._key(key, request)
        if own is None:
            return None
        with self._lock:
            entry = self._entries.get(own)
            if entry is None or entry["at"] < self.now() - self.max_age:
                return None
            self.hits += 1
        return completion_from(entry["c"])

    def has(self, key: str, request: Request) -> bool:
        """Whether ``get`` would answer this request (not counted as a hit: a plan, not a use)."""
        own = self._key(key, request)
        if own is None:
            return False
        with self._lock:
            entry = self._entries.get(own)
            return entry is not None and entry["at"] >= self.now() - self.max_age

    def put(self, key: str, request: Request, completion: Completion) -> None:
        own = self._key(key, request)
        if own is None or not keepable(completion):
            return
        with self._lock:
            if own not in self._entries:
                self.added += 1
            self._entries[own] = {"at": self.now(), "c": completion_record(completion)}

    def save(self) -> None:
        """Write what has not expired, newest first up to ``max_bytes`` (nothing without a key)."""
        secret = self._seal_key()
        if secret is None:
            return
        oldest = self.now() - self.max_age
        with self._lock:
            fresh = sorted(
                ((e["at"], k, e) for k, e in self._entries.items() if e["at"] >= oldest),
                key=lambda item: item[0],
                reverse=True,
            )
        lines = [json.dumps({"format": FORMAT})]
        size = len(lines[0]) + 1
        for at, key, entry in fresh:
            mac = seal(secret, _sealed(self.path, key, at, entry["c"]))
            line = json.dumps({"k": key, "at": at, "c": entry["c"], "m": mac})
            size += len(line.encode("utf-8")) + 1
            if size > self.max_bytes:
                break
            lines.append(line)
        atomic_write_text(self.path, "\n".join(lines) + "\n")
