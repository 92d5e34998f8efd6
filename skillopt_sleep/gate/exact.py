"""The exact test of a rule's gain (``exact_p``): under "nothing changed" a task's samples are
exchangeable between the two document sets, so given the pooled samples every split between them
is as likely, and the mean gain's distribution is the tasks' split distributions convolved."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence


EXACT_WORK = 400_000  # the most steps ``exact_p`` takes before it leaves a test to Student's t
_GRID = 10**6  # scores are counted in millionths: equal scores are one integer


def exact_p(
    baseline: Mapping[str, Sequence[float]], candidate: Mapping[str, Sequence[float]], task_ids: Iterable[str]
) -> float | None:
    """The one-sided p-value of the mean per-task gain under "nothing changed", exact: within each
    task the samples of the two document sets are then exchangeable, so every way of splitting a
    task's pooled samples into the two sets is as likely, and the mean gain's distribution is the
    tasks' distributions convolved. Scores take few values (a share of a task's checks), so each
    task's distribution is counted by the values' multiplicities, not by listing the splits, in
    integers (a gain ``a/nc - b/nb`` over the tasks' common denominator), so that equal sums are one
    value however they were reached. Student's t on a handful of 0/1 samples is far from exact at
    the tails: three failures against three passes on each of three tasks is a 1-in-8,000 event
    under the null, which the t bound puts near 1 in 600. ``None`` where a task lacks samples or the
    count would take more than ``EXACT_WORK`` steps (many tasks with many distinct scores: the
    caller keeps Student's t)."""
    ids = [tid for tid in task_ids if baseline.get(tid) and candidate.get(tid)]
    if not ids:
        return None
    common = math.lcm(*(len(baseline[tid]) * len(candidate[tid]) for tid in ids))
    dist: dict[int, float] = {0: 1.0}  # the sum of the tasks' gains (x common x _GRID) -> its chance
    observed, work = 0, 0
    for tid in ids:
        split = _split_gains(list(baseline[tid]), list(candidate[tid]), common, EXACT_WORK - work)
        if split is None:
            return None
        seen, terms, steps = split
        work += steps + len(dist) * len(terms)
        if work > EXACT_WORK:
            return None
        observed += seen
        grown: dict[int, float] = {}
        for value, chance in dist.items():
            for step, q in terms:
                grown[value + step] = grown.get(value + step, 0.0) + chance * q
        dist = grown
    return min(1.0, sum(chance for value, chance in dist.items() if value >= observed))


def _split_gains(
    b: Sequence[float], c: Sequence[float], common: int, budget: int
) -> tuple[int, list[tuple[int, float]], int] | None:
    """One task's observed gain (candidate mean - baseline mean) and every gain its pooled samples
    can show when split at random into sets of ``len(c)`` and ``len(b)``, with its chance — gains
    as integers, times ``common`` (a multiple of ``len(b) * len(c)``) and ``_GRID`` — and the steps
    counting them took (``None``: more than ``budget``)."""
    nb, nc = len(b), len(c)
    pooled = [round(x * _GRID) for x in (*b, *c)]
    total, scale = sum(pooled), common // (nb * nc)

    def gain(taken_sum: int) -> int:
        return (taken_sum * nb - (total - taken_sum) * nc) * scale

    counts: dict[int, int] = {}
    for x in pooled:
        counts[x] = counts.get(x, 0) + 1
    # ways[(taken, their sum)]: how many splits give the candidate ``taken`` samples summing so
    ways: dict[tuple[int, int], int] = {(0, 0): 1}
    steps = 0
    for value, count in counts.items():
        steps += len(ways) * (count + 1)
        if steps > budget:
            return None
        grown: dict[tuple[int, int], int] = {}
        for (taken, subtotal), n in ways.items():
            for k in range(min(count, nc - taken) + 1):
                key = (taken + k, subtotal + k * value)
                grown[key] = grown.get(key, 0) + n * math.comb(count, k)
        ways = grown
    splits = math.comb(nb + nc, nc)
    terms: dict[int, float] = {}
    for (taken, sub), n in ways.items():
        if taken == nc:
            terms[gain(sub)] = terms.get(gain(sub), 0.0) + n / splits
    return gain(sum(pooled[nb:])), list(terms.items()), steps
