"""The evidence log: every model call of a night, redacted, one JSON line each.

A ``Client`` hands it each call as it settles (``EvidenceSink``); the night copies the file into
the staged proposal, so a reviewer can see what the models were asked and answered.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.redact import redact
from skillopt_sleep.sanitize import clean_text


class EvidenceLog:
    """Thread-safe; the file is written as calls come and closed by the night."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "w", encoding="utf-8")

    def __call__(self, role: str, request: Request, completion: Completion) -> None:
        self._write(role, request, completion, reused=False)

    def reused(self, role: str, request: Request, completion: Completion) -> None:
        """An answer kept from an earlier or an interrupted night, used instead of a call: listed
        too (``"reused": true``), so a resumed night's evidence still holds every answer it used."""
        self._write(role, request, completion, reused=True)

    def _write(self, role: str, request: Request, completion: Completion, *, reused: bool) -> None:
        line = {
            "role": role,
            "purpose": request.purpose,
            "sample": request.sample,
            "system_sha256": hashlib.sha256(request.system.encode("utf-8")).hexdigest(),
            # the client redacted the request before sending it
            "user": clean_text(request.user[:4000]),
            "text": clean_text(redact(completion.text[:4000])),
            "model": completion.model,
            "usage": completion.usage.to_dict(),
            "latency": round(completion.latency, 4),
            "error": completion.error,
            "truncated": completion.truncated,
            "error_message": clean_text(redact(completion.error_message[:500])),
            "reused": reused,
        }
        with self._lock:
            self._fh.write(json.dumps(line) + "\n")

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()
