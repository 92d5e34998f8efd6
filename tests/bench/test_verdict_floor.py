"""bench_verdict_floor asks the gate's own test how many samples a verdict needs: nothing passes
on one sample a task, power grows with samples while a neutral rule stays near the error rate, and
the task-level floor says when a kind has too few tasks for any test that counts tasks."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.support.scripts import script_module


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from script_module("bench_verdict_floor")


def test_power_grows_with_samples_and_a_neutral_rule_stays_out(bench: ModuleType) -> None:
    rng = random.Random(7)
    one = bench.accept_rate(1, 0.93, 0.3, 2, 8, 0.25, 300, rng)
    few = bench.accept_rate(4, 0.93, 0.3, 2, 8, 0.25, 300, rng)
    many = bench.accept_rate(12, 0.93, 0.3, 2, 8, 0.25, 300, rng)
    neutral = bench.accept_rate(12, 0.3, 0.3, 2, 8, 0.25, 600, rng)
    assert one == 0.0, "one sample of two tasks proves nothing at the gate's error rate"
    assert few < many and many > 0.8
    assert neutral <= 0.02


def test_task_level_floor(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--trials", "20", "--max-n", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    # 0.025 / 4 rules: a sign test needs 8 tasks of a kind, the world has 2
    assert out["task_level"] == {
        "tasks_of_a_kind_needed": 8,
        "own_val_tasks": 2,
        "smallest_p_with_own_tasks": 0.25,
        "can_accept": False,
    }
    assert [r["val_calls_with_per_rule_guards"] for r in out["by_samples"]] == [24, 48]
    assert bench.main(["--trials", "20", "--max-n", "1", "--own", "6", "--val", "8", "--rules", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["task_level"]["can_accept"] is True


def test_refuses_a_world_without_other_tasks(bench: ModuleType) -> None:
    with pytest.raises(SystemExit):
        bench.main(["--own", "8", "--val", "8"])
