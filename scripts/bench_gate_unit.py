#!/usr/bin/env python3
"""The gate's test of one rule when answers to one task are correlated: false accepts and power of
the statistic the gate uses (samples pooled per task) beside a task-level one. Prints JSON.

Val tasks are drawn as the ``sim`` backend draws them under ``corr`` and ``drift``
(``skillopt_sleep/backends/sim/latent.py``): each task has a latent propensity, so its repeated
answers agree; ``drift`` is the share of it a document change redraws (a rule moves each task its own
way). One check per task, scored 0/1, marginal pass rate ``--base`` under the current documents.
A neutral rule leaves every marginal rate as it is; a useful one raises the rate of the tasks it
claims (``--focus`` of them) by ``--effect``; the other ``--others`` val tasks are untouched.

- ``gate``: ``gate.decide`` as the engine calls it (its ``min_gain`` and ``gain_alpha``), with the
  focus tasks, at a single look.
- ``task_level``: the gain over the focus tasks with a standard error that adds the tasks' spread
  beyond their samples' noise (read from the other tasks' differences; Student's t on their degrees
  of freedom) — the task, not the sample, as the unit the error rate counts.

    python scripts/bench_gate_unit.py --trials 2000
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skillopt_sleep.backends.sim.latent import propensity  # noqa: E402
from skillopt_sleep.config import Config  # noqa: E402
from skillopt_sleep.gate.decide import GateConfig, decide  # noqa: E402
from skillopt_sleep.gate.stats import mean, se_null, t_quantile  # noqa: E402


def draw_tasks(
    rng: random.Random, base: float, corr: float, drift: float, focus: int, others: int, samples: int, effect: float
) -> tuple[dict, dict, set[str]]:
    """Baseline and candidate samples per task, and the tasks the rule claims."""
    baseline, candidate = {}, {}
    for i in range(focus + others):
        z = rng.gauss(0.0, 1.0)
        z_after = math.sqrt(1.0 - drift) * z + math.sqrt(drift) * rng.gauss(0.0, 1.0)
        rate_after = min(0.999, base + effect) if i < focus else base
        p_before, p_after = propensity(base, corr, z), propensity(rate_after, corr, z_after)
        baseline[f"t{i}"] = [float(rng.random() < p_before) for _ in range(samples)]
        candidate[f"t{i}"] = [float(rng.random() < p_after) for _ in range(samples)]
    return baseline, candidate, {f"t{i}" for i in range(focus)}


def task_level(baseline: dict, candidate: dict, focus: set[str], alpha: float, min_gain: float) -> bool:
    delta = {t: mean(candidate[t]) - mean(baseline[t]) for t in baseline}
    noise = {t: se_null(baseline[t], candidate[t]) ** 2 for t in baseline}
    others = sorted(set(baseline) - focus)
    if len(others) < 2:
        return False
    mean_other = sum(delta[t] for t in others) / len(others)
    dof = len(others) - 1
    spread = max(
        0.0, sum((delta[t] - mean_other) ** 2 for t in others) / dof - sum(noise[t] for t in others) / len(others)
    )
    claimed = sorted(focus)
    n = len(claimed)
    gain = sum(delta[t] for t in claimed) / n
    se = math.sqrt(sum(noise[t] for t in claimed) / n**2 + spread / n)
    return gain >= min_gain and gain - t_quantile(1 - alpha, dof) * se > 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--base", type=float, default=0.3)
    parser.add_argument("--effect", type=float, default=0.6)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    config = Config()  # the engine's gain test, at a single look
    cfg = GateConfig(min_gain=config.gate.min_gain, gain_alpha=config.gate.gain_alpha)
    alpha = cfg.gain_alpha
    rows = []
    started = time.time()
    for corr, drift in ((0.0, 0.0), (0.5, 0.0), (0.5, 0.5), (0.8, 0.5), (0.8, 1.0)):
        for focus, others, samples in ((2, 6, 12), (2, 6, 4), (3, 9, 8), (5, 15, 4)):
            rng = random.Random(f"{args.seed}-{corr}-{drift}-{focus}-{samples}")
            counts = {"gate_false_accept": 0, "task_level_false_accept": 0, "gate_power": 0, "task_level_power": 0}
            for _ in range(args.trials):
                for effect, kind in ((0.0, "false_accept"), (args.effect, "power")):
                    b, c, f = draw_tasks(rng, args.base, corr, drift, focus, others, samples, effect)
                    counts[f"gate_{kind}"] += decide(b, c, cfg, focus=f).accepted
                    counts[f"task_level_{kind}"] += task_level(b, c, f, alpha, cfg.min_gain)
            rows.append(
                {
                    "corr": corr,
                    "drift": drift,
                    "focus_tasks": focus,
                    "other_tasks": others,
                    "samples_per_task": samples,
                    **{k: round(v / args.trials, 4) for k, v in counts.items()},
                }
            )
    print(
        json.dumps(
            {
                "benchmark": "gate_unit",
                "trials": args.trials,
                "base": args.base,
                "effect": args.effect,
                "gain_alpha": alpha,
                "rows": rows,
                "wall_s": round(time.time() - started, 1),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
