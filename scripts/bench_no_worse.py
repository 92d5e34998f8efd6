"""The "no worse" gate mode (``gate.no_worse``) on scripted 0/1 samples; prints JSON.

For each samples-per-task count: how often a removal that really costs exactly the margin (0.8 ->
0.7 on every task) is accepted — the false-retire rate, to be about ``alpha`` — and how often one
that changes nothing (0.8 -> 0.8) is accepted with the 3 looks a night's gate takes (the power).

    python scripts/bench_no_worse.py --seeds 1000
"""

from __future__ import annotations

import argparse
import json
import random

from skillopt_sleep.gate import no_worse as gate


def draws(rng: random.Random, p: float, n: int) -> list[float]:
    return [1.0 if rng.random() < p else 0.0 for _ in range(n)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--margin", type=float, default=0.1)
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args(argv)
    rows = []
    for n in (12, 24, 48):
        at_margin = unchanged = 0
        for seed in range(args.seeds):
            rng = random.Random(seed)
            base = {f"t{i}": draws(rng, 0.8, n) for i in range(args.tasks)}
            costly = {f"t{i}": draws(rng, 0.8 - args.margin, n) for i in range(args.tasks)}
            at_margin += gate.no_worse(base, costly, margin=args.margin, alpha=args.alpha).accepted
            same = {f"t{i}": draws(rng, 0.8, n) for i in range(args.tasks)}
            unchanged += gate.no_worse(base, same, margin=args.margin, alpha=args.alpha, looks=3).accepted
        rows.append(
            {
                "samples_per_task": n,
                "retired_at_the_margin": round(at_margin / args.seeds, 4),
                "retired_when_nothing_changes_3_looks": round(unchanged / args.seeds, 4),
            }
        )
    print(
        json.dumps(
            {
                "benchmark": "no_worse",
                "seeds": args.seeds,
                "tasks": args.tasks,
                "margin": args.margin,
                "alpha": args.alpha,
                "base_score": 0.8,
                "rows": rows,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
