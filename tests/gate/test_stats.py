"""Student's t quantile of the gate (``gate.stats.t_quantile``) against the exact tail: the
distribution's density integrated numerically, and the closed forms at one and two degrees."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from skillopt_sleep.gate.stats import t_quantile


def density(x: float, df: float) -> float:
    return (
        math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2))
        / math.sqrt(df * math.pi)
        * (1 + x * x / df) ** (-(df + 1) / 2)
    )


def upper_tail(t: float, df: float, steps: int = 4000) -> float:
    """P(T > t): the midpoint rule over u in (0, 1), x = t + u / (1 - u)."""
    h = 1.0 / steps
    total = 0.0
    for i in range(steps):
        u = (i + 0.5) * h
        total += density(t + u / (1 - u), df) / (1 - u) ** 2
    return total * h


@pytest.mark.parametrize("df", [2, 3, 4, 6, 8, 2.5, 7.3, 12, 20, 40, 120])
@pytest.mark.parametrize("p", [0.7, 0.95, 0.99, 0.999, 0.9998, 0.99999])
def test_the_tail_it_claims_is_the_tail(df: float, p: float):
    tail = upper_tail(t_quantile(p, df), df, steps=5000)
    assert tail == pytest.approx(1 - p, rel=2e-3)


@pytest.mark.parametrize("p", [0.7, 0.95, 0.99, 0.999, 0.9998, 0.99999, 0.9999999])
def test_closed_forms_at_one_and_two_degrees(p: float):
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)


def test_lower_quantiles_mirror_the_upper_ones():
    assert t_quantile(0.5, 5) == 0.0
    assert t_quantile(0.05, 7) == pytest.approx(-t_quantile(0.95, 7))


def test_tables_and_the_normal_limit():
    assert t_quantile(0.975, 10) == pytest.approx(2.228139, abs=1e-6)
    assert t_quantile(0.99, 20) == pytest.approx(2.527977, abs=1e-6)
    assert t_quantile(0.975, 1) == pytest.approx(12.706205, abs=1e-5)
    assert t_quantile(0.999, 1) == pytest.approx(318.30884, abs=1e-4)
    assert t_quantile(0.995, 2) == pytest.approx(9.924843, abs=1e-6)
    assert t_quantile(0.975, math.inf) == pytest.approx(NormalDist().inv_cdf(0.975))
    assert t_quantile(0.9, 4) > t_quantile(0.9, 40) > NormalDist().inv_cdf(0.9)
