"""The model's answers other than attempts (reflection, rewrites, rankings, mining, rubric grades)
from a project's last night, kept for the next estimate only (``estimate.py``).

A night whose inputs did not change since the last one asks the optimizer the same questions; a
rehearsal that answered them with the simulator would propose other rules, and test what the real
night will not test again (an edit refused on the same val tasks is not re-drawn). So the rehearsal
answers a request it finds here as the model did last night, and only the rest with the simulator.
The night itself never reads these answers (``get`` is always empty): they only make the estimate
follow the path the night will take. Attempts are not kept here; the score cache keeps them.
``<project>/.skillopt-sleep/estimate-answers.jsonl``, replaced by each finished ``run``.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from skillopt_sleep.backends.base import Completion
from skillopt_sleep.backends.stores import completion_from, completion_record, keepable
from skillopt_sleep.files import atomic_write_text, read_jsonl
from skillopt_sleep.paths import project_dirs

NAME = "estimate-answers.jsonl"
FORMAT = "skillopt_sleep.estimate_answers.v1"
MAX_BYTES = 4 * 1024 * 1024
NOT_KEPT = ("attempt", "preflight")


def answers_path(project: Path) -> Path:
    return project_dirs(project).root / NAME


class AnswerLog:
    """A call store for a night: records its answers, answers nothing."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str, request: Any) -> Completion | None:
        return None

    def put(self, key: str, request: Any, completion: Completion) -> None:
        if request.purpose in NOT_KEPT or not keepable(completion):
            return
        with self._lock:
            self._entries[key] = completion_record(completion)

    def save(self, project: Path) -> None:
        lines, size = [json.dumps({"format": FORMAT})], 0
        with self._lock:
            entries = list(self._entries.items())
        for key, record in entries:
            line = json.dumps({"k": key, "c": record})
            size += len(line.encode("utf-8")) + 1
            if size > MAX_BYTES:
                break
            lines.append(line)
        path = answers_path(project)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, "\n".join(lines) + "\n")


def load(project: Path) -> dict[str, Completion]:
    """The last night's answers by request key; empty when there are none or the file is not one
    of ours (not a regular file, too big, another format)."""
    path = answers_path(project)
    try:
        if not path.is_file() or path.stat().st_size > 2 * MAX_BYTES:
            return {}
    except OSError:
        return {}
    records = read_jsonl(path)
    if not records or records[0].get("format") != FORMAT:
        return {}
    out = {}
    for record in records[1:]:
        completion = completion_from(record.get("c"))
        if isinstance(record.get("k"), str) and completion is not None:
            out[record["k"]] = completion
    return out
