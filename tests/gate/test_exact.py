"""The exact gain test (``gate.exact.exact_p``) against listing every relabeling of the samples,
against an independent integer convolution, and its bound on the work."""

from __future__ import annotations

import pytest

from skillopt_sleep.gate.decide import decide
from skillopt_sleep.gate.exact import exact_p


def _all_relabelings(baseline: dict, candidate: dict) -> float:
    """P(mean gain >= observed) by listing every split of each task's samples into the two sets."""
    import itertools

    def gain(b: list, c: list) -> float:
        return sum(c) / len(c) - sum(b) / len(b)

    observed = sum(gain(baseline[t], candidate[t]) for t in baseline) / len(baseline)
    per_task = []
    for t in baseline:
        pooled, nc = baseline[t] + candidate[t], len(candidate[t])
        splits = []
        for chosen in itertools.combinations(range(len(pooled)), nc):
            c = [pooled[i] for i in chosen]
            b = [pooled[i] for i in range(len(pooled)) if i not in chosen]
            splits.append(gain(b, c))
        per_task.append(splits)
    hits = total = 0
    for combo in itertools.product(*per_task):
        total += 1
        hits += sum(combo) / len(combo) >= observed - 1e-9
    return hits / total


@pytest.mark.parametrize(
    "baseline, candidate",
    [
        ({"a": [0, 0, 0], "b": [0, 0, 0], "c": [0, 0, 0]}, {"a": [1, 1, 1], "b": [1, 1, 1], "c": [1, 1, 1]}),
        ({"a": [0, 1, 0], "b": [1, 0]}, {"a": [1, 1, 0, 1], "b": [1, 1, 0]}),
        ({"a": [1, 1, 1, 0], "b": [0, 0, 1]}, {"a": [0, 1, 0], "b": [0, 1, 1, 1]}),
        ({"a": [0, 0, 0, 0, 1]}, {"a": [1, 1, 0, 1, 1, 1]}),
        ({"a": [0, 0.5, 0], "b": [0.5, 0.5, 1]}, {"a": [1, 0.5, 1], "b": [1, 1, 0.5, 1]}),
        ({"a": [0.25, 0.75, 0, 1]}, {"a": [1, 0.75, 0.5]}),
    ],
)
def test_the_exact_gain_test_counts_every_relabeling(baseline: dict, candidate: dict):
    b = {t: [float(x) for x in xs] for t, xs in baseline.items()}
    c = {t: [float(x) for x in xs] for t, xs in candidate.items()}
    assert exact_p(b, c, list(b)) == pytest.approx(_all_relabelings(b, c), rel=1e-9)


def test_a_task_without_samples_on_both_sides_is_left_out_of_the_exact_test():
    assert exact_p({"a": [0.0]}, {"a": [1.0]}, ["a", "missing"]) == pytest.approx(0.5)
    assert exact_p({"a": [0.0]}, {"b": [1.0]}, ["a", "b"]) is None


def test_the_exact_test_counts_ties_whatever_path_reached_them():
    """Eight tasks of twelve 0/1 samples a side: the gain's distribution from each task's
    hypergeometric count, convolved in integers (passes the candidate took, twice, less the task's
    passes), against ``exact_p`` — sums that are equal must count as equal, however reached."""
    import math
    import random

    rng = random.Random(1)
    base = {f"t{i}": [float(rng.random() < 0.5) for _ in range(12)] for i in range(8)}
    cand = {f"t{i}": [float(rng.random() < 0.5) for _ in range(12)] for i in range(8)}
    dist = {0: 1.0}
    observed = 0
    for t in base:
        passes = int(sum(base[t]) + sum(cand[t]))
        observed += 2 * int(sum(cand[t])) - passes
        pmf = {
            2 * x - passes: math.comb(passes, x) * math.comb(24 - passes, 12 - x) / math.comb(24, 12)
            for x in range(max(0, passes - 12), min(passes, 12) + 1)
        }
        grown: dict[int, float] = {}
        for value, chance in dist.items():
            for step, q in pmf.items():
                grown[value + step] = grown.get(value + step, 0.0) + chance * q
        dist = grown
    expected = sum(chance for value, chance in dist.items() if value >= observed)
    assert exact_p(base, cand, list(base)) == pytest.approx(expected, rel=1e-9)


def test_a_count_too_large_to_make_leaves_the_test_to_students_t():
    import random

    rng = random.Random(2)
    levels = (0.0, 0.25, 0.5, 0.75, 1.0)
    base = {f"t{i}": [rng.choice(levels) for _ in range(12)] for i in range(60)}
    cand = {f"t{i}": [rng.choice(levels) for _ in range(12)] for i in range(60)}
    assert exact_p(base, cand, list(base)) is None
    decision = decide(base, cand)
    assert "p_value" not in decision.statistic and "lower_bound" in decision.statistic
