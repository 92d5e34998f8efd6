"""Task files: round trip and validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillopt_sleep.errors import EXIT_CONFIG, UserError
from skillopt_sleep.mining import load_tasks, mine, save_tasks, tasks_document
from skillopt_sleep.types import TASKS_FORMAT, TaskRecord
from tests.mining.builders import commit_sessions


def sample_tasks() -> list[TaskRecord]:
    tasks = mine(commit_sessions()).tasks
    tasks.append(
        TaskRecord(
            id="release-notes",
            intent="write release notes for v2",
            reference_kind="exact",
            reference="v2.0.0",
            judge={"kind": "exact"},
            split="val",
        )
    )
    tasks.append(
        TaskRecord(
            id="dream-1",
            intent="a variation",
            origin="dream",
            derived_from=tasks[0].id,
            judge={"kind": "rule", "checks": [{"op": "contains", "arg": "x"}]},
        )
    )
    return tasks


def write_doc(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_tasks_round_trip(tmp_path: Path):
    tasks = sample_tasks()
    path = tmp_path / "tasks.json"
    save_tasks(path, tasks, reviewed=True)
    loaded, reviewed = load_tasks(path)
    assert reviewed is True
    assert [t.to_dict() for t in loaded] == [t.to_dict() for t in tasks]
    save_tasks(path, loaded)
    again, reviewed = load_tasks(path)
    assert reviewed is False
    assert [t.to_dict() for t in again] == [t.to_dict() for t in tasks]


def test_tasks_document_shape():
    doc = tasks_document(sample_tasks()[:1])
    assert doc["format"] == TASKS_FORMAT and doc["reviewed"] is False and len(doc["tasks"]) == 1
    json.dumps(doc)  # serialisable


def test_reviewed_must_be_true_literally(tmp_path: Path):
    doc = tasks_document(sample_tasks()[:1])
    doc["reviewed"] = "yes"
    assert load_tasks(write_doc(tmp_path / "t.json", doc))[1] is False


def test_load_normalises_compact_checks(tmp_path: Path):
    doc = {
        "format": TASKS_FORMAT,
        "tasks": [
            {
                "id": "a",
                "intent": "x",
                "judge": {"kind": "rule", "checks": [{"op": "section_contains", "arg": "Testing::pytest"}]},
            }
        ],
    }
    (task,), _ = load_tasks(write_doc(tmp_path / "t.json", doc))
    assert task.judge["checks"] == [{"op": "section_contains", "arg": {"section": "Testing", "text": "pytest"}}]


def good_item(**over) -> dict:
    item = {
        "id": "commit-1",
        "intent": "write the commit message",
        "judge": {"kind": "rule", "checks": [{"op": "contains", "arg": "Signed-off-by:"}]},
    }
    item.update(over)
    return item


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ({"tasks": [good_item()]}, "format"),
        ({"format": "something.else", "tasks": [good_item()]}, "format"),
        ([good_item()], "format"),
        ({"format": TASKS_FORMAT}, "tasks"),
        ({"format": TASKS_FORMAT, "tasks": {"id": "x"}}, "tasks"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(), good_item()]}, "duplicate task id 'commit-1'"),
        (
            {"format": TASKS_FORMAT, "tasks": [good_item(judge={"kind": "rule", "checks": [{"op": "nope"}]})]},
            "commit-1",
        ),
        (
            {
                "format": TASKS_FORMAT,
                "tasks": [good_item(judge={"kind": "rule", "checks": [{"op": "regex", "arg": "(unclosed"}]})],
            },
            "commit-1",
        ),
        ({"format": TASKS_FORMAT, "tasks": [good_item(judge={"kind": "rule", "checks": []})]}, "commit-1"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(judge={})]}, "commit-1"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(origin="dream", split="val")]}, "commit-1"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(split="holdout")]}, "commit-1"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(intent="  ")]}, "commit-1"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(), "not a task"]}, "#1"),
        (
            {
                "format": TASKS_FORMAT,
                "tasks": [good_item(), {"intent": "no id", "judge": {"checks": [{"op": "contains", "arg": "x"}]}}],
            },
            "#1",
        ),
    ],
)
def test_invalid_task_files_are_config_errors(tmp_path: Path, content, needle):
    path = write_doc(tmp_path / "tasks.json", content)
    with pytest.raises(UserError) as info:
        load_tasks(path)
    assert info.value.code == EXIT_CONFIG
    assert needle in info.value.message
    assert str(path) in info.value.message


def test_dream_task_in_val_names_the_task_and_reason(tmp_path: Path):
    path = write_doc(
        tmp_path / "tasks.json",
        {"format": TASKS_FORMAT, "tasks": [good_item(), good_item(id="dreamy", origin="dream", split="val")]},
    )
    with pytest.raises(UserError, match="dreamy.*dream tasks may only be in the train split") as info:
        load_tasks(path)
    assert info.value.code == EXIT_CONFIG


def test_bad_json_and_missing_file(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "skillopt_sleep.tasks.v1", "tasks": [', encoding="utf-8")
    with pytest.raises(UserError, match="not valid JSON") as info:
        load_tasks(bad)
    assert info.value.code == EXIT_CONFIG
    with pytest.raises(UserError, match="does not exist") as info:
        load_tasks(tmp_path / "missing.json")
    assert info.value.code == EXIT_CONFIG
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(UserError) as info:
        load_tasks(binary)
    assert info.value.code == EXIT_CONFIG
