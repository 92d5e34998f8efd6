"""The sample statistics the gate's tests are built from: Student's t quantile (exact for any
degrees of freedom, also Welch's fractional ones), and the means, variances and standard errors of
per-task samples of a 0..1 score, with variances shrunk so that a few unanimous samples are never
taken for certainty."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist


def t_quantile(p: float, df: float) -> float:
    """Upper quantile of Student's t, exact to about 1e-9 for any positive (also fractional, as
    Welch's) degrees of freedom: the tail is the regularized incomplete beta function, inverted by
    bisection. A test on very few samples is exactly as strict as its rate says."""
    z = NormalDist().inv_cdf(p)
    if df <= 0 or math.isinf(df):
        return z
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1 - p, df)
    tail = 1 - p
    lo, hi = 0.0, max(1.0, 2 * z)
    while t_upper_tail(hi, df) > tail:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_upper_tail(mid, df) > tail:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return (lo + hi) / 2


def t_upper_tail(t: float, df: float) -> float:
    """P(T > t) for t >= 0: half the regularized incomplete beta I_x(df/2, 1/2), x = df/(df+t²)."""
    return 0.5 * betainc(df / 2, 0.5, df / (df + t * t))


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction (evaluated
    with the modified Lentz method), on whichever side of the mean it converges fast."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - betainc(b, a, 1.0 - x)
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return math.exp(log_front) * fraction / a


def welch_df(b: Sequence[float], c: Sequence[float]) -> float:
    vb, vc = var_shrunk(b) / len(b), var_shrunk(c) / len(c)
    num = (vb + vc) ** 2
    den = (vb**2 / (len(b) - 1) if len(b) > 1 else 0) + (vc**2 / (len(c) - 1) if len(c) > 1 else 0)
    return num / den if den > 0 else float("inf")


def mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def var(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return 0.0
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def var_shrunk(xs: Sequence[float]) -> float:
    """Sample variance pooled with one pseudo-observation of variance 1/4 (the most a 0..1 score
    can have): a few unanimous samples, or a single one, do not prove the variance is zero."""
    n = len(xs)
    return ((n - 1) * var(xs) + 0.25) / n


def se(b: Sequence[float], c: Sequence[float]) -> float:
    return math.sqrt(var_shrunk(b) / len(b) + var_shrunk(c) / len(c))


def se_null(b: Sequence[float], c: Sequence[float]) -> float:
    """Standard error of the difference if the edit changed nothing (both sides one
    distribution): the variance of all samples pooled, as a two-proportion test does. A
    unanimous side — four failures on the baseline — does not make a lucky candidate look
    certain."""
    return math.sqrt(var_shrunk(list(b) + list(c)) * (1 / len(b) + 1 / len(c)))
