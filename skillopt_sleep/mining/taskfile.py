"""Task files (``skillopt_sleep.tasks.v1``): load with validation, save atomically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skillopt_sleep.errors import EXIT_CONFIG, UserError
from skillopt_sleep.files import parse_json, read_regular_text
from skillopt_sleep.checks.judges import JudgeError, validate_judge
from skillopt_sleep.types import SPLITS, TASKS_FORMAT, TaskRecord


def validate_task(task: TaskRecord) -> TaskRecord:
    if not task.id or not isinstance(task.id, str):
        raise JudgeError("task has no id")
    if not isinstance(task.intent, str) or not task.intent.strip():
        raise JudgeError("task has no intent")
    if task.split not in SPLITS:
        raise JudgeError(f"split {task.split!r} is not one of {', '.join(SPLITS)}")
    if task.origin == "dream" and task.split != "train":
        raise JudgeError("dream tasks may only be in the train split")
    task.judge = validate_judge(task.judge, task.reference_kind, task.reference)
    return task


def load_tasks(path: Path) -> tuple[list[TaskRecord], bool]:
    """Read a ``skillopt_sleep.tasks.v1`` file -> (tasks, reviewed). Invalid input raises
    UserError naming the file, the task and the problem."""
    try:
        raw = read_regular_text(path)
    except FileNotFoundError:
        raise UserError(f"tasks file {path} does not exist", EXIT_CONFIG) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read tasks file {path}: {exc}", EXIT_CONFIG) from None
    try:
        data = parse_json(raw)
    except ValueError as exc:
        raise UserError(f"tasks file {path} is not valid JSON: {exc}", EXIT_CONFIG) from None
    if not isinstance(data, dict):
        raise UserError(
            f"tasks file {path} is not a {TASKS_FORMAT} file (expected a JSON object with "
            f'"format" and "tasks", got {type(data).__name__})',
            EXIT_CONFIG,
        )
    if "format" not in data:
        raise UserError(f'tasks file {path} is not a {TASKS_FORMAT} file (missing "format")', EXIT_CONFIG)
    if data["format"] != TASKS_FORMAT:
        shown = repr(data["format"])[:80]  # cli.main sanitizes the whole line
        raise UserError(f'tasks file {path} has "format": {shown}; this version reads only {TASKS_FORMAT}', EXIT_CONFIG)
    items = data.get("tasks")
    if not isinstance(items, list):
        raise UserError(f'tasks file {path} has no "tasks" list', EXIT_CONFIG)
    tasks: list[TaskRecord] = []
    ids: set[str] = set()
    for n, item in enumerate(items):
        label = item.get("id", f"#{n}") if isinstance(item, dict) else f"#{n}"
        try:
            task = validate_task(TaskRecord.from_dict(item))
        except (JudgeError, ValueError) as exc:
            raise UserError(f"tasks file {path}: task {label}: {exc}", EXIT_CONFIG) from None
        if task.id in ids:
            raise UserError(f"tasks file {path}: duplicate task id {task.id!r}", EXIT_CONFIG)
        ids.add(task.id)
        tasks.append(task)
    return tasks, data.get("reviewed") is True


def tasks_document(tasks: list[TaskRecord], reviewed: bool = False) -> dict[str, Any]:
    return {"format": TASKS_FORMAT, "reviewed": reviewed, "tasks": [t.to_dict() for t in tasks]}


def save_tasks(path: Path, tasks: list[TaskRecord], reviewed: bool = False) -> None:
    from skillopt_sleep.files import atomic_write_text

    atomic_write_text(Path(path), json.dumps(tasks_document(tasks, reviewed), indent=2) + "\n")
