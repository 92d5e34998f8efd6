"""The archive of past real tasks (``state/tasks-archive.jsonl``): what recall draws from.

Every stateful night that succeeds adds its real tasks (never dream variants, never recalled
copies): redacted, one line each, deduplicated by content (``edit_evidence.task_content_key``) per
project, each with the split it had on the night it was first seen. Lines are only appended; when a
project holds more than ``MAX_PER_PROJECT`` tasks its oldest are dropped in one atomic rewrite
(under a short OS lock, since nights of different projects share the file).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from skillopt_sleep.store.rule_evidence import task_content_key
from skillopt_sleep.files import append_jsonl, atomic_write_text, read_jsonl
from skillopt_sleep.store.history import project_key
from skillopt_sleep.store.locks import exclusive
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.redact import redact_obj
from skillopt_sleep.types import TaskRecord

MAX_PER_PROJECT = 400  # archived tasks kept per project, newest first
MAX_ENTRY_BYTES = 32 * 1024  # a task bigger than this is not archived (a pasted log is no recurring task)


@dataclass
class ArchivedTask:
    project: str
    key: str  # task_content_key: what it asks and how it is judged
    night_id: str
    split: str  # its split on the night it was first seen
    task: TaskRecord


class TaskArchive:
    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else user_dirs().archive

    def entries(self, project: str | os.PathLike[str]) -> list[ArchivedTask]:
        """``project``'s archived tasks, oldest first; malformed lines are skipped."""
        key = project_key(project)
        out = []
        for line in read_jsonl(self.path):
            if line.get("project") != key or not isinstance(line.get("key"), str):
                continue
            data = line.get("task")
            if not isinstance(data, dict):
                continue  # from_dict would refuse it too
            try:
                task = TaskRecord.from_dict(data)
            except ValueError:
                continue
            out.append(ArchivedTask(key, line["key"], str(line.get("night_id") or ""), task.split, task))
        return out

    def add(self, project: str | os.PathLike[str], tasks: list[TaskRecord], night_id: str) -> int:
        """Archive ``tasks``' real ones not archived before (by content); returns how many."""
        key = project_key(project)
        with exclusive(self.path.with_name(self.path.name + ".lock"), wait=30.0):
            known = {e.key for e in self.entries(key)}
            lines = []
            for task in tasks:
                if task.origin != "real" or "recalled" in task.tags:
                    continue
                content = task_content_key(task)
                if content in known:
                    continue
                line = {"project": key, "key": content, "night_id": night_id, "task": redact_obj(task.to_dict())}
                if len(json.dumps(line, ensure_ascii=False)) > MAX_ENTRY_BYTES:
                    continue
                known.add(content)
                lines.append(line)
            if lines:
                append_jsonl(self.path, *lines)
                self._bound(key)
        return len(lines)

    def _bound(self, project: str) -> None:
        """Drop ``project``'s oldest tasks beyond ``MAX_PER_PROJECT`` (the caller holds the lock)."""
        lines = read_jsonl(self.path)
        mine = [i for i, line in enumerate(lines) if line.get("project") == project]
        if len(mine) <= MAX_PER_PROJECT:
            return
        dropped = set(mine[: len(mine) - MAX_PER_PROJECT])
        kept = [line for i, line in enumerate(lines) if i not in dropped]
        atomic_write_text(self.path, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in kept))
