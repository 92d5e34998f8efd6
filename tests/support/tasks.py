"""Builders shared by tests: tasks files and sim configs."""

from __future__ import annotations

import json
from pathlib import Path

from skillopt_sleep.mining import assign_splits, tasks_document
from skillopt_sleep.types import TaskRecord

COMMIT_CHECKS = [{"op": "contains", "arg": "Refs: ACME-"}, {"op": "no_refusal", "arg": None}]
PR_CHECKS = [
    {"op": "section_present", "arg": "Testing"},
    {"op": "not_contains", "arg": "TODO"},
    {"op": "no_refusal", "arg": None},
]
NOTES_CHECKS = [
    {"op": "section_present", "arg": "Fixes"},
    {"op": "section_present", "arg": "Breaking changes"},
    {"op": "no_refusal", "arg": None},
]


def make_tasks(per_kind: int = 4, test: bool = False) -> list[TaskRecord]:
    tasks = []
    for kind, checks, verb in (
        ("commit", COMMIT_CHECKS, "Write the commit message for change"),
        ("pr", PR_CHECKS, "Write the PR description for branch"),
        ("notes", NOTES_CHECKS, "Draft release notes for version"),
    ):
        for i in range(per_kind):
            tasks.append(
                TaskRecord(
                    id=f"{kind}-{i}",
                    intent=f"{verb} {i}",
                    project="/p",
                    judge={"kind": "rule", "checks": checks},
                    skill_hint=kind,
                    tags=[kind],
                    recurrence=per_kind,
                )
            )
    assign_splits(tasks, seed=0, test_fraction=0.25 if test else 0.0)
    return tasks


def write_tasks_file(path: Path, tasks: list[TaskRecord], reviewed: bool = True) -> Path:
    path.write_text(json.dumps(tasks_document(tasks, reviewed)), encoding="utf-8")
    return path
