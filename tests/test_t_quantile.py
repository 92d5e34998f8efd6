"""Student's t quantile of the gate (``gate.decide.t_quantile``) against the exact tail: the
distribution's density integrated numerically, in the range the gate's tests use."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from skillopt_sleep.gate.decide import t_quantile


def density(x: float, df: float) -> float:
    return math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi) \
        * (1 + x * x / df) ** (-(df + 1) / 2)


def upper_tail(t: float, df: float, steps: int = 4000) -> float:
    """P(T > t): the midpoint rule over u in (0, 1), x = t + u / (1 - u)."""
    h = 1.0 / steps
    total = 0.0
    for i in range(steps):
        u = (i + 0.5) * h
        total += density(t + u / (1 - u), df) / (1 - u) ** 2
    return total * h


@pytest.mark.parametrize("df", [8, 12, 20, 40, 120])
@pytest.mark.parametrize("p", [0.95, 0.99, 0.999, 0.9998])
def test_the_tail_it_claims_is_the_tail_within_five_percent(df: int, p: float):
    tail = upper_tail(t_quantile(p, df), df)
    assert tail == pytest.approx(1 - p, rel=0.05)


def test_tables_and_the_normal_limit():
    assert t_quantile(0.975, 10) == pytest.approx(2.228, abs=0.001)
    assert t_quantile(0.99, 20) == pytest.approx(2.528, abs=0.001)
    assert t_quantile(0.975, math.inf) == pytest.approx(NormalDist().inv_cdf(0.975))
    assert t_quantile(0.9, 4) > t_quantile(0.9, 40) > NormalDist().inv_cdf(0.9)
