"""bench_gate's scripted world: what a rule's stated effect does to each check of a task."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.support.scripts import script_module


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from script_module("bench_gate")


def test_a_rule_may_name_one_check_of_a_kind(bench: ModuleType) -> None:
    docs = f"- {bench.BASE_RULE}\n- {bench.BASE_RULE_2}\n"
    assert bench.probability("a", docs, 1) == 0.3 and bench.probability("a", docs, 2) == 0.9
    assert bench.probability("b", docs, 1) == 0.9, "a plain kind names its first check"
    swapped = docs + f"- {bench.SWAP}\n"
    assert (bench.probability("a", swapped, 1), bench.probability("a", swapped, 2)) == (0.9, 0.3)
    assert bench.probability("b", swapped, 2) == 0.9
    assert bench.probability("a", swapped + f"- {bench.HARMFUL}\n", 2) == 0.15


def test_two_check_tasks_are_judged_on_both_tokens(bench: ModuleType) -> None:
    one, two = bench.make_tasks(4), bench.make_tasks(4, checks=2)
    assert [len(t.judge["checks"]) for t in one] == [1] * len(one)
    assert [c["arg"] for c in two[0].judge["checks"]] == [bench.PASS, bench.PASS2]
