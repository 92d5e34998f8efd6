"""The fewest calls one night's verdicts can cost: the gate's own test, at its own error rates,
given every sample it could want at once.

Prints one JSON object. A verdict on a rule needs its kind's val tasks measured under the current
and the edited documents. This bench asks the gate's test (``gate.decide.decide``, the settings'
``gain_alpha`` shared by the night's rules) how many samples per val task it takes before a rule
of a known effect passes, with the kindest plan there is: one look, every sample drawn at once (no
error rate spent on earlier looks), samples independent (a real model's correlated answers only
make it worse). From that it gives the val calls of a night that tests ``--rules`` rules, one a
kind, each with ``--own`` val tasks of its own among ``--val`` in all:

- ``bundle only``: the current and the edited documents (all rules in one) on every val task;
- ``with per-rule guards``: as the gate does it: each rule alone on its own tasks too, so a
  rule that lowers another kind cannot hide behind that kind's own rule.

It also gives the task-level floor: when answers to one task agree (within-task correlation), the
task is the unit of evidence, and a test that counts tasks cannot reach the error rate with fewer
tasks of a kind than ``log2(1 / alpha)`` (the smallest one-sided p-value of a sign test on T tasks
that all improve is 2^-T).

    python scripts/bench_verdict_floor.py
    python scripts/bench_verdict_floor.py --base 0.05 --follow 0.98 --own 3 --val 10
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from skillopt_sleep.gate.decide import GateConfig, decide  # noqa: E402


def accept_rate(
    n: int, p_own: float, base: float, own: int, val: int, share: float, trials: int, rng: random.Random
) -> float:
    """How often the gate's test accepts, at ``n`` samples a task under each document set, a rule
    that moves its own tasks' pass rate from ``base`` to ``p_own`` and leaves the others at ``base``."""
    cfg = GateConfig(looks=1)
    own_ids = [f"own-{i}" for i in range(own)]
    ids = own_ids + [f"other-{i}" for i in range(val - own)]
    passed = 0
    for _ in range(trials):
        b = {t: [float(rng.random() < base) for _ in range(n)] for t in ids}
        c = {t: [float(rng.random() < (p_own if t in own_ids else base)) for _ in range(n)] for t in ids}
        passed += decide(b, c, cfg, focus=own_ids, share=share).accepted
    return passed / trials


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    ap.add_argument("--follow", type=float, default=0.9, help="chance the model follows a rule (default 0.9)")
    ap.add_argument("--base", type=float, default=0.3, help="the check's pass rate without the rule (default 0.3)")
    ap.add_argument("--own", type=int, default=2, help="val tasks of the rule's kind (default 2)")
    ap.add_argument("--val", type=int, default=8, help="val tasks in all (default 8)")
    ap.add_argument("--rules", type=int, default=4, help="rules the night tests, one a kind (default 4)")
    ap.add_argument("--max-n", type=int, default=12, help="largest samples per task tried (default 12)")
    ap.add_argument("--trials", type=int, default=2000, help="draws per sample count (default 2000)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if not (0 < args.own < args.val and args.rules >= 1 and args.trials >= 1):
        ap.error("need 0 < --own < --val, --rules >= 1 and --trials >= 1")
    rng = random.Random(args.seed)
    p_own = args.follow + (1 - args.follow) * args.base
    share = 1 / args.rules
    alpha = GateConfig().alpha_for(share)
    rows = []
    for n in range(1, args.max_n + 1):
        useful = accept_rate(n, p_own, args.base, args.own, args.val, share, args.trials, rng)
        neutral = accept_rate(n, args.base, args.base, args.own, args.val, share, args.trials, rng)
        rows.append(
            {
                "samples_per_task": n,
                "useful_accepted": round(useful, 4),
                "neutral_accepted": round(neutral, 4),
                "val_calls_bundle_only": 2 * args.val * n,
                "val_calls_with_per_rule_guards": (2 * args.val + args.rules * args.own) * n,
            }
        )

    def first(power: float) -> dict | None:
        return next((r for r in rows if r["useful_accepted"] >= power), None)

    tasks_needed = math.ceil(math.log2(1 / alpha))
    print(
        json.dumps(
            {
                "benchmark": "verdict_floor",
                "command": "python scripts/bench_verdict_floor.py "
                + " ".join(argv if argv is not None else sys.argv[1:]),
                "world": {
                    "follow": args.follow,
                    "base": args.base,
                    "own_pass_rate_with_rule": round(p_own, 4),
                    "own_val_tasks": args.own,
                    "val_tasks": args.val,
                    "rules": args.rules,
                },
                "test": {
                    "gain_alpha": GateConfig().gain_alpha,
                    "share_per_rule": round(share, 4),
                    "alpha_per_rule": alpha,
                    "looks": 1,
                    "samples": "independent",
                },
                "by_samples": rows,
                "fewest_for_power_0.5": first(0.5),
                "fewest_for_power_0.8": first(0.8),
                "task_level": {
                    "tasks_of_a_kind_needed": tasks_needed,
                    "own_val_tasks": args.own,
                    "smallest_p_with_own_tasks": 2.0**-args.own,
                    "can_accept": args.own >= tasks_needed,
                },
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
