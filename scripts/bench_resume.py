#!/usr/bin/env python3
"""One rule's test resumed across capped nights: how often a neutral rule is accepted, and after how
many nights a useful one is, beside the same rule's test on one uncapped night. Prints JSON.

Each trial starts one rule on a night capped at ``--max-calls`` target calls; a night that runs out
of calls leaves it undecided and the next night resumes it (``pending_rules``, the gate's looks
numbered on, the pool's samples kept, the base documents' answers back from a score cache), for up
to ``--nights`` nights. The world: ``--focus`` val tasks of the rule's kind and ``--others`` of
another, one ``contains`` check each, passed at rate ``--base``; the rule raises its own kind's
rate by ``--effect`` (0: neutral) and changes nothing else. The ``uncapped`` row tests the same
rule on one night without a cap (the gate's nominal behaviour).

    python scripts/bench_resume.py --trials 400 --effect 0
    python scripts/bench_resume.py --trials 200 --effect 0.3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skillopt_sleep.backends.base import Completion, Request  # noqa: E402
from skillopt_sleep.backends.budget import Budget  # noqa: E402
from skillopt_sleep.backends.client import Client, Stats  # noqa: E402
from skillopt_sleep.backends.limits import Limiter  # noqa: E402
from skillopt_sleep.backends.pricing import Price  # noqa: E402
from skillopt_sleep.backends.models import Models  # noqa: E402
from skillopt_sleep.gate.call_cap import CallCap, out_of_calls  # noqa: E402
from skillopt_sleep.gate.phases import gate_each  # noqa: E402
from skillopt_sleep.gate.settings import LoopSettings  # noqa: E402
from skillopt_sleep.gate.outcome import Outcome  # noqa: E402
from skillopt_sleep.documents.managed_block import apply_edit, load_documents  # noqa: E402
from skillopt_sleep.store.rule_evidence import EvidencePool  # noqa: E402
from skillopt_sleep.gate.evaluator import Evaluator  # noqa: E402
from skillopt_sleep.gate.pending_rules import resumable  # noqa: E402
from skillopt_sleep.store.score_cache import ScoreCache  # noqa: E402
from skillopt_sleep.types import Edit, TaskRecord  # noqa: E402
from skillopt_sleep.gate.sampling import NightGate  # noqa: E402

RULE = 'When writing a commit message, always include "Refs:" in the response.'


class World:
    """Answers a task's check at ``base``, or ``base + effect`` for the rule's kind under the rule;
    every (prompt, sample) its own seeded draw, so a repeated request gets the same answer."""

    id = "bench-resume"
    price: Price | None = None  # no cost: the cap counts calls only
    offline = True  # a scripted world: no model answers

    def __init__(self, seed: int, base: float, effect: float):
        self.seed, self.base, self.effect = seed, base, effect

    def can_offer_tools(self, names: tuple[str, ...]) -> bool:
        return False

    def complete(self, request: Request) -> Completion:
        task = (request.payload or {}).get("task") or {}
        rate = self.base
        if task.get("skill_hint") == "commit" and "Refs:" in request.system:
            rate = min(1.0, self.base + self.effect)
        digest = hashlib.sha256(f"{self.seed}|{request.system}|{request.user}|{request.sample}".encode()).digest()
        return Completion(text="Refs: 1" if random.Random(digest).random() < rate else "no trailer")


def tasks_for(focus: int, others: int) -> list[TaskRecord]:
    judge = {"kind": "rule", "checks": [{"op": "contains", "arg": "Refs:"}]}
    out = [
        TaskRecord(
            id=f"c{i}", intent=f"write commit message {i}", project="/p", split="val", skill_hint="commit", judge=judge
        )
        for i in range(focus)
    ]
    out += [
        TaskRecord(
            id=f"n{i}", intent=f"write release note {i}", project="/p", split="val", skill_hint="notes", judge=judge
        )
        for i in range(others)
    ]
    out.append(
        TaskRecord(id="t0", intent="train commit", project="/p", split="train", skill_hint="commit", judge=judge)
    )
    return out


def one_trial(trial: int, args: argparse.Namespace, root: Path, cap: int | None) -> dict:
    tasks = tasks_for(args.focus, args.others)
    val = [t for t in tasks if t.split == "val"]
    docs = load_documents(root)
    cache = ScoreCache(root / f"scores-{trial}-{cap}.jsonl")
    pool = EvidencePool(None, str(root), "bench", docs.fingerprint())
    rule = Edit("skill", "add", content=RULE, evidence=["t0"])
    calls: list[int] = []
    for night in range(args.nights if cap is not None else 1):
        budget = Budget(max_calls=cap)
        backend = World(args.seed * 100003 + trial, args.base, args.effect)
        stats = Stats()
        target = Client(backend, limiter=Limiter(4), stats=stats, budget=budget, stores=[cache])
        models = Models(target, Client(backend, limiter=Limiter(4), stats=stats, role="optimizer", budget=budget))
        candidates = resumable(pool, docs, tasks, lambda e: False) if night else [(rule, apply_edit(docs, rule))]
        if not candidates:
            return {"verdict": "refused", "nights": night, "calls": calls}
        outcome = Outcome(docs)
        gate = NightGate(
            Evaluator(models, val, {}, "val", pool), LoopSettings(), docs, tasks, set(), 1, CallCap(budget)
        )
        won = gate_each(outcome, gate, candidates, pool, lambda m: None, resumed=bool(night))
        gate.evaluator.store()
        calls.append(budget.calls_used)
        if won:
            return {"verdict": "accepted", "nights": night + 1, "calls": calls}
        if not out_of_calls(outcome.decisions[0]):
            return {"verdict": "refused", "nights": night + 1, "calls": calls}
    return {"verdict": "undecided", "nights": len(calls), "calls": calls}


def summary(runs: list[dict]) -> dict:
    accepted = [r for r in runs if r["verdict"] == "accepted"]
    return {
        "trials": len(runs),
        "accepted": len(accepted),
        "accept_rate": round(len(accepted) / len(runs), 4),
        "refused": sum(r["verdict"] == "refused" for r in runs),
        "undecided_at_end": sum(r["verdict"] == "undecided" for r in runs),
        "mean_nights_to_accept": round(sum(r["nights"] for r in accepted) / len(accepted), 2) if accepted else None,
        "mean_calls_per_night": round(
            sum(sum(r["calls"]) for r in runs) / max(1, sum(len(r["calls"]) for r in runs)), 1
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    parser.add_argument("--trials", type=int, default=200, help="rules tested (default 200)")
    parser.add_argument("--nights", type=int, default=8, help="capped nights a rule may be resumed on (default 8)")
    parser.add_argument("--max-calls", type=int, nargs="+", default=[24, 45], help="caps per night (default 24 45)")
    parser.add_argument("--focus", type=int, default=2, help="val tasks of the rule's kind (default 2)")
    parser.add_argument("--others", type=int, default=6, help="val tasks of another kind (default 6)")
    parser.add_argument("--base", type=float, default=0.5, help="pass rate without the rule (default 0.5)")
    parser.add_argument("--effect", type=float, default=0.0, help="the rule's gain on its kind (default 0: neutral)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.time()
    out: dict = {
        "benchmark": "resume",
        "trials": args.trials,
        "nights": args.nights,
        "focus": args.focus,
        "others": args.others,
        "base": args.base,
        "effect": args.effect,
        "seed": args.seed,
        "nominal_gain_alpha": LoopSettings().decide.gain_alpha,
        "by_cap": {},
    }
    with tempfile.TemporaryDirectory(prefix="skillopt-bench-resume-") as tmp:
        for cap in [None, *args.max_calls]:
            runs = [one_trial(t, args, Path(tmp), cap) for t in range(args.trials)]
            out["by_cap"]["uncapped" if cap is None else str(cap)] = summary(runs)
    out["wall_s"] = round(time.time() - started, 1)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
