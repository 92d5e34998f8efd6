"""The "no worse" test of a removal (``gate/no_worse.py``): a needed rule is never retired, one whose
removal changes nothing is once samples narrow the bound, and the false-retire rate at the margin
stays near ``alpha``."""

from __future__ import annotations

import random

import pytest

from skillopt_sleep.gate import no_worse as gate


def draws(rng: random.Random, p: float, n: int) -> list[float]:
    return [1.0 if rng.random() < p else 0.0 for _ in range(n)]


@pytest.mark.parametrize("n", [4, 8, 12, 24, 48, pytest.param(200, marks=pytest.mark.slow)])
def test_a_needed_rule_is_never_retired(n: int) -> None:
    """Removing it drops its kind from 0.9 to 0.3: refused at every sample count, every seed."""
    for seed in range(100):
        rng = random.Random(seed)
        base = {f"t{i}": draws(rng, 0.9, n) for i in range(3)}
        without = {f"t{i}": draws(rng, 0.3, n) for i in range(3)}
        assert not gate.no_worse(base, without, margin=0.1, looks=3).accepted


def test_a_rule_whose_removal_changes_nothing_is_retired_with_enough_samples() -> None:
    same = {f"t{i}": [1.0, 1.0, 0.5, 1.0, 1.0, 0.5] * 4 for i in range(3)}  # 24 samples, mean 0.83
    decision = gate.no_worse(same, {k: list(v) for k, v in same.items()}, margin=0.1, looks=3)
    assert decision.accepted, decision.reasons
    assert decision.statistic["drop"] == 0 and decision.statistic["upper_bound"] < 0.1


def test_too_few_samples_are_no_evidence_that_a_removal_is_harmless() -> None:
    same = {"t1": [1.0, 1.0, 1.0, 1.0]}
    decision = gate.no_worse(same, {"t1": [1.0, 1.0, 1.0, 1.0]}, margin=0.1)
    assert not decision.accepted and "not shown to be no worse" in decision.reasons[0]


@pytest.mark.slow  # a rate over 400 seeds
def test_the_false_retire_rate_at_the_margin_stays_below_alpha() -> None:
    """A removal that really costs exactly the margin (0.8 -> 0.7) is retired at most ~alpha of
    the time (0.05; 400 seeds at 48 samples per task)."""
    retired = 0
    for seed in range(400):
        rng = random.Random(seed)
        base = {f"t{i}": draws(rng, 0.8, 48) for i in range(3)}
        without = {f"t{i}": draws(rng, 0.7, 48) for i in range(3)}
        retired += gate.no_worse(base, without, margin=0.1, alpha=0.05).accepted
    assert retired / 400 <= 0.07


def test_one_task_that_regressed_refuses_the_removal_even_when_the_mean_holds() -> None:
    base = {f"t{i}": [1.0] * 40 for i in range(12)}
    without = {k: list(v) for k, v in base.items()} | {"t0": [0.0] * 40}
    decision = gate.no_worse(base, without, margin=0.1)
    assert decision.statistic["upper_bound"] < 0.1, "the mean alone would pass"
    assert not decision.accepted and "t0 regressed" in decision.reasons[0]


def test_val_that_overlaps_train_cannot_validate_a_removal() -> None:
    same = {"t1": [1.0] * 40}
    decision = gate.no_worse(same, same, margin=0.1, train_ids=["t1"])
    assert decision.action == "skip" and not decision.accepted
