from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from skillopt_sleep.store.archive import TaskArchive
from skillopt_sleep.store.rule_evidence import task_content_key
from skillopt_sleep.learning.recall import recall
from skillopt_sleep.types import TaskRecord

CHECKS = {"kind": "rule", "checks": [{"op": "contains", "arg": "Refs:"}]}


def task(tid: str, intent: str, split: str = "train") -> TaskRecord:
    return TaskRecord(id=tid, intent=intent, split=split, judge=CHECKS)


def archived(tmp_path: Path, tasks: list[TaskRecord]) -> list:
    archive = TaskArchive(tmp_path / "archive.jsonl")
    archive.add(tmp_path, tasks, "n0")
    return archive.entries(tmp_path)


TONIGHT = [
    task("c1", "Write the commit message for the parser fix"),
    task("c2", "Write the commit message for the lexer change", split="val"),
]


def test_recalls_the_most_similar_past_train_tasks(tmp_path: Path) -> None:
    past = archived(
        tmp_path,
        [
            task("old-commit", "Write the commit message for the cache fix"),
            task("old-notes", "Draft release notes for version 2"),
            task("old-commit-2", "Write the commit message for the parser refactor"),
        ],
    )
    got = recall(past, TONIGHT, k=1)
    assert [t.id for t in got] == ["recalled-old-commit-2"]
    assert got[0].split == "train" and "recalled" in got[0].tags and got[0].origin == "real"
    assert [t.id for t in recall(past, TONIGHT, k=5)] == ["recalled-old-commit-2", "recalled-old-commit"], (
        "an unrelated task is not recalled"
    )


def test_past_val_and_test_tasks_stay_held_out(tmp_path: Path) -> None:
    past = archived(
        tmp_path,
        [
            task("v", "Write the commit message for the parser fix again", split="val"),
            task("t", "Write the commit message for the parser tests", split="test"),
        ],
    )
    assert recall(past, TONIGHT, k=3) == []


def test_tonights_own_tasks_are_not_recalled(tmp_path: Path) -> None:
    """A past task with the content of one of tonight's (any split) is tonight's task, not a memory."""
    same_as_val = task("older-id", "Write the commit message for the lexer change")
    same_as_train = task("older-id-2", "Write the commit message for the parser fix")
    past = archived(tmp_path, [same_as_val, same_as_train])
    assert recall(past, TONIGHT, k=3) == []


def test_nothing_without_train_tasks_or_with_k_zero(tmp_path: Path) -> None:
    past = archived(tmp_path, [task("old", "Write the commit message for the cache fix")])
    assert recall(past, TONIGHT, k=0) == []
    assert recall(past, [t for t in TONIGHT if t.split == "val"], k=3) == []


@settings(deadline=None, max_examples=60)  # each example writes an archive file under a lock
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["commit message", "release notes", "pr description"]),
            st.integers(0, 30),
            st.sampled_from(["train", "val", "test"]),
        ),
        max_size=25,
    ),
    st.integers(0, 6),
)
def test_recalled_tasks_are_train_distinct_and_never_tonights(items, k) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        past = archived(
            Path(tmp),
            [task(f"p{i}", f"Write the {what} for item {n}", split) for i, (what, n, split) in enumerate(items)],
        )
    got = recall(past, TONIGHT, k)
    assert len(got) <= k
    assert all(t.split == "train" for t in got)
    keys = [task_content_key(t) for t in got]
    assert len(set(keys)) == len(keys)
    assert not set(keys) & {task_content_key(t) for t in TONIGHT}
    held_out = {e.key for e in past if e.split != "train"}
    assert not set(keys) & held_out


def test_recall_is_spread_over_tonights_kinds(tmp_path: Path) -> None:
    tonight = [task("c", "Write the commit message for the parser fix"), task("n", "Draft release notes for version 3")]
    past = archived(
        tmp_path,
        [task(f"old-c{i}", f"Write the commit message for the fix {i}x") for i in range(4)]
        + [task("old-n", "Draft release notes for version 2 beta")],
    )
    got = [t.id for t in recall(past, tonight, k=2)]
    assert "recalled-old-n" in got and len(got) == 2
