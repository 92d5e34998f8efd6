"""How often the gate accepts edits of known worth, under a stated noise model; prints JSON.

The engine's own decision path runs: ``consolidate`` with the night's ``LoopSettings`` (from a
default ``Config``), the night's rule for which refusals are banned, and — when the engine has
them — the evidence pooled across nights. Only the models are scripted: ``WorldBackend`` plays
the target and the optimizer from explicit knobs, and nothing in the engine can see them.

Noise model (the knobs): every attempt is independently correct with probability ``covered``
(0.9) when a rule in the documents covers the task's kind, ``uncovered`` (0.3) otherwise, and
``harmful`` (0.15) on every task when a harmful rule is present. A rule states its effect in its
text (``effect a=0.9``) — the world's ground truth, read only by the scripted target. Two kinds
of task: ``a`` (floor(Nval/2) val tasks) and ``b`` (the rest); the starting documents already hold a
rule covering ``b``. Each night also dreams 4 train tasks (2 per kind).

Edits: useful (a: 0.3 -> 0.9), neutral (covers a kind with no tasks), harmful (everything 0.15),
trade-off (a: 0.3 -> 0.6 and b: 0.9 -> 0.5; the val mean falls at every Nval), weak (a: 0.3 ->
0.45, a real +0.15 on its kind), check-gaming (a: 0.3 -> 0.9 by cutting kind a's answers to one
line, so what the work needs — present in 0.95 of answers, seen by no check — falls to 0.1), and
useful-brief (a: 0.3 -> 0.9, a form rule that keeps the substance). The optimizer, asked whether an
answer does a task as well as a reference (the quality guard), reads the substance right with
probability 0.9 and otherwise flips a coin. Multi-night runs re-propose the same edit every night (fresh
draws each night) until it is accepted, for 10 nights; ``reworded`` runs cycle through three
wordings of it.

``--two-checks``: every task has a second check (a second token), which the starting documents
cover on every kind (0.9; 0.3 uncovered), and a rule's effect may name one check of a kind (``a1``,
``a2``; a plain ``a`` is its first check). Its scenarios: useful on one check (a1: 0.3 -> 0.9, the
task's score +0.3), a swap (a1: 0.3 -> 0.9 and a2: 0.9 -> 0.3 — what it fixes it breaks, the score
does not move), neutral, and the trade-off across kinds. ``--score-gain`` tests the gain on the score
instead of on the checks a rule fixes (``targeted_gain`` off), for the side-by-side.

``--corr``: within-task correlation, the simulator's model (``skillopt_sleep/backends/sim/latent.py``):
each check of each val or train task has a latent propensity, kept across nights and scenarios of
one seed, so repeated attempts at one task agree (latent-scale correlation ``corr``) while the
chance over tasks stays the knob's; ``--drift`` is the share of it redrawn whenever the documents
change. Each run then states its ``world`` (corr, drift) and the output lists one run per pair.

The comparison policy, "strict mean", replays each val task once under the current documents
and once under each candidate and accepts a candidate iff its mean is higher (no memory across
nights, so it never bans).

    python scripts/bench_gate.py --seeds 300
    python scripts/bench_gate.py --seeds 300 --val-others-samples 4   # other val tasks at a first look
    python scripts/bench_gate.py --seeds 300 --max-calls 400          # a capped night (fixed sequence)
    python scripts/bench_gate.py --seeds 100 --corr 0 0.5 0.8         # under within-task correlation
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing import Pool
from pathlib import Path
from typing import Any

from skillopt_sleep.learning import loop as consolidation
from skillopt_sleep import night
from skillopt_sleep.gate.settings import LoopSettings
from skillopt_sleep.backends.budget import Budget
from skillopt_sleep.backends.client import Client, Stats
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.models import Models
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.backends.sim.latent import check_corr
from skillopt_sleep.config import Config, GateSettings
from skillopt_sleep.documents.managed_block import DocumentSet, apply_edit, load_documents
from skillopt_sleep.replay.dream import run_attempts
from skillopt_sleep.store.rule_evidence import EvidencePool
from skillopt_sleep.store.refusals import RejectedLedger
from skillopt_sleep.types import Edit, NightReport, TaskRecord

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gate_world import (  # noqa: E402
    BASE_RULE,
    BASE_RULE_2,
    CHECK_GAMING,
    HARMFUL,
    KNOBS,
    NEUTRAL,
    NEUTRAL_OTHERS,
    PROJECT,
    SWAP,
    TRADE_OFF,
    TRAIN,
    USEFUL,
    USEFUL_BRIEF,
    USEFUL_ONE_CHECK,
    WEAK,
    WORLD,
    make_tasks,
    proposal,
    WorldBackend,
)
from gate_world import PASS as PASS, PASS2 as PASS2, probability as probability  # noqa: E402  (read by the tests)


def models_for(backend: WorldBackend, max_calls: int | None = None) -> Models:
    limiter, stats, budget = Limiter(4), Stats(), Budget(max_calls=max_calls)
    retry = RetryPolicy(attempts=1, sleep=lambda s: None)
    return Models(
        Client(backend, limiter=limiter, stats=stats, retry=retry, budget=budget),
        Client(backend, limiter=limiter, stats=stats, retry=retry, role="optimizer", budget=budget),
    )


@dataclass
class Memory:
    """What one project carries from night to night, as the night keeps it: the ledger of banned
    rules and the val evidence pooled across nights."""

    state_dir: Path
    ledger: RejectedLedger = field(init=False)

    def __post_init__(self) -> None:
        self.ledger = RejectedLedger(self.state_dir / "rejected-edits.jsonl")


def engine_night(
    tasks: list[TaskRecord], docs: DocumentSet, contents: list[str], seed: str, memory: Memory
) -> tuple[list[str], list[str], int, int]:
    """One night through the engine: (accepted rule texts, banned rule texts, calls, val calls)."""
    backend = WorldBackend(seed, [proposal(c) for c in contents])
    models = models_for(backend, CONFIG.get("max_calls"))
    settings = LoopSettings.from_config(Config(**CONFIG))
    pool = EvidencePool.load(memory.state_dir / "edit-evidence.json", PROJECT, backend.id, docs.fingerprint())
    outcome = consolidation.consolidate(
        tasks, docs, models, settings, pool=pool, already_refused=lambda e: memory.ledger.contains(PROJECT, e)
    )
    report = NightReport(night_id=seed, project=PROJECT, mode="run", status="running")
    night._fill(report, outcome, models)
    banned = [item["edit"]["content"] for item in report.rejected_edits if item.get("ledger")]
    for item in report.rejected_edits:
        if item.get("ledger"):
            memory.ledger.add(PROJECT, Edit.from_dict(item["edit"]), item["reasons"], seed)
    pool.save()
    calls = sum(models.calls().values())
    return [e.content for e in outcome.accepted], banned, calls, outcome.phases.get("val", 0)


def strict_night(tasks: list[TaskRecord], docs: DocumentSet, contents: list[str], seed: str) -> tuple[list[str], int]:
    """ "Strict mean of one replay per val task": (accepted rule texts, val calls)."""
    val = [t for t in tasks if t.split == "val"]
    models = models_for(WorldBackend("strict-" + seed, []))

    def mean(d: DocumentSet) -> float:
        got = run_attempts(models.target, val, d, range(1))
        return sum(xs[0].soft for xs in got.values()) / len(got)

    base = mean(docs)
    accepted = [c for c in contents if mean(apply_edit(docs, Edit(**{k: v for k, v in proposal(c).items()}))) > base]
    return accepted, len(val) * (1 + len(contents))


def start_documents(root: Path, checks: int = 1) -> DocumentSet:
    project = root / "proj"
    project.mkdir()
    second = f"- {BASE_RULE_2}\n" if checks > 1 else ""
    (project / "CLAUDE.md").write_text(f"# bench\n\n- {BASE_RULE}\n{second}", encoding="utf-8")
    return load_documents(project)


SINGLE = {
    "harmful": [HARMFUL],
    "neutral": [NEUTRAL[0]],
    "useful": [USEFUL],
    "trade_off": [TRADE_OFF],
    "four_neutral": [NEUTRAL[0], *NEUTRAL_OTHERS],
    "neutral_riding_with_useful": [USEFUL, NEUTRAL[0]],
    "check_gaming": [CHECK_GAMING],
    "useful_brief": [USEFUL_BRIEF],
}
# for each single-night scenario: the rule texts whose acceptance is counted
WATCHED = {
    "harmful": [HARMFUL],
    "neutral": [NEUTRAL[0]],
    "useful": [USEFUL],
    "trade_off": [TRADE_OFF],
    "four_neutral": [NEUTRAL[0], *NEUTRAL_OTHERS],
    "neutral_riding_with_useful": [NEUTRAL[0]],
    "check_gaming": [CHECK_GAMING],
    "useful_brief": [USEFUL_BRIEF],
}
TWO_CHECKS = {
    "useful_one_check": [USEFUL_ONE_CHECK],
    "swap": [SWAP],
    "neutral": [NEUTRAL[0]],
    "trade_off": [TRADE_OFF],
}
REPEATED = {
    "neutral_reproposed_10_nights": [NEUTRAL[0]],
    "neutral_reworded_10_nights": NEUTRAL,
    "weak_reproposed_10_nights": [WEAK[0]],
    "weak_reworded_10_nights": WEAK,
}


CONFIG: dict[str, Any] = {}  # engine settings changed from the defaults (--val-others-samples)


def one_seed(args: tuple[int, int, dict[str, Any], int, dict[str, float]]) -> dict[str, Any]:
    """Every scenario for one (Nval, seed); counts, not rates."""
    n_val, seed, config, checks, world = args
    CONFIG.clear()
    CONFIG.update(config)
    WORLD.update(world, seed=f"{n_val}-{seed}")
    tasks = make_tasks(n_val, checks)
    out: dict[str, Any] = {"engine": {}, "strict": {}, "calls": [], "val_calls": [], "strict_val_calls": []}
    with tempfile.TemporaryDirectory(prefix="skillopt-bench-gate-") as tmp:
        docs = start_documents(Path(tmp), checks)
        for name, contents in (TWO_CHECKS if checks > 1 else SINGLE).items():
            tag = f"{name}-{n_val}-{seed}-0"
            memory = Memory(Path(tmp) / f"state-{name}")
            accepted, _, calls, val_calls = engine_night(tasks, docs, contents, tag, memory)
            out["engine"][name] = int(any(c in WATCHED.get(name, contents) for c in accepted))
            out["calls"].append(calls)
            out["val_calls"].append(val_calls)
            strict_accepted, strict_calls = strict_night(tasks, docs, contents, tag)
            out["strict"][name] = int(any(c in WATCHED.get(name, contents) for c in strict_accepted))
            out["strict_val_calls"].append(strict_calls)
        for name, wordings in (REPEATED if checks == 1 else {}).items():
            memory = Memory(Path(tmp) / f"state-{name}")
            engine_hit = strict_hit = banned_on = 0
            for night_no in range(10):
                content = wordings[night_no % len(wordings)]
                tag = f"{name}-{n_val}-{seed}-{night_no}"
                if not engine_hit and not banned_on:
                    accepted, banned, calls, val_calls = engine_night(tasks, docs, [content], tag, memory)
                    engine_hit = int(bool(accepted))
                    banned_on = int(bool(banned))
                if not strict_hit:
                    strict_hit = int(bool(strict_night(tasks, docs, [content], tag)[0]))
            out["engine"][name] = engine_hit
            out["engine"][name.replace("reproposed", "banned").replace("reworded", "banned_reworded")] = banned_on
            out["strict"][name] = strict_hit
    return out


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(results)

    def rates(policy: str) -> dict[str, float]:
        names = results[0][policy]
        return {k: round(sum(r[policy][k] for r in results) / n, 4) for k in names}

    def mean_of(key: str) -> float:
        values = [v for r in results for v in r[key]]
        return round(sum(values) / len(values), 1)

    return {
        "seeds": n,
        "engine": rates("engine"),
        "strict_mean": rates("strict"),
        "engine_calls_per_night": mean_of("calls"),
        "engine_val_calls_per_night": mean_of("val_calls"),
        "strict_mean_val_calls_per_night": mean_of("strict_val_calls"),
    }


def run(
    n_vals: list[int],
    seeds: int,
    workers: int,
    progress: Callable[[str], None],
    config: dict[str, Any] | None = None,
    checks: int = 1,
    world: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Every scenario at each Nval; ``world`` (corr, drift) turns within-task correlation on and is
    stated in the result (absent: independent attempts, and the result as without it)."""
    started = time.monotonic()
    config = config or {}
    out: dict[str, Any] = {
        **({"world": world} if world is not None else {}),
        "knobs": KNOBS,
        "train_tasks": len(TRAIN),
        "config": config,
        "checks_per_task": checks,
        "gate": LoopSettings.from_config(Config(**config)).decide.__dict__,
        "val_samples": Config().gate.val_samples,
        "max_val_samples": Config().gate.max_val_samples,
        "val_others_samples": Config(**config).gate.val_others_samples,
        "by_n_val": {},
    }
    for n_val in n_vals:
        jobs = [(n_val, s, config, checks, world or {"corr": 0.0, "drift": 0.0}) for s in range(seeds)]
        if workers > 1:
            with Pool(workers) as pool:
                results = pool.map(one_seed, jobs, chunksize=4)
        else:
            results = [one_seed(j) for j in jobs]
        out["by_n_val"][str(n_val)] = summarise(results)
        stated = f" corr={world['corr']:g} drift={world['drift']:g}" if world is not None else ""
        progress(f"Nval={n_val}{stated}: {time.monotonic() - started:.0f}s")
    out["wall_s"] = round(time.monotonic() - started, 1)
    return out


def correlated_worlds(
    parser: argparse.ArgumentParser, corrs: list[float] | None, drifts: list[float] | None
) -> list[dict[str, float]] | None:
    """The (corr, drift) pairs to run, in order (drift is moot at corr 0); None without ``--corr``."""
    if corrs is None:
        if drifts is not None:
            parser.error("--drift needs --corr")
        return None
    worlds: list[dict[str, float]] = []
    for corr in corrs:
        for drift in (drifts or [0.0]) if corr else [0.0]:
            try:
                check_corr(corr, drift)
            except ValueError as exc:
                parser.error(str(exc).replace("sim knob ", "--"))
            if {"corr": corr, "drift": drift} not in worlds:
                worlds.append({"corr": corr, "drift": drift})
    return worlds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--n-val", type=int, nargs="+", default=[3, 5, 10])
    parser.add_argument("--workers", type=int, default=1, help="processes (the machine is shared: keep it small)")
    parser.add_argument(
        "--val-others-samples",
        type=int,
        default=GateSettings.val_others_samples,
        help="samples the val tasks outside an edit's kind start with (0: as many as its own)",
    )
    parser.add_argument(
        "--two-checks",
        action="store_true",
        help="tasks with two checks, and the scenarios of a rule that fixes one of them",
    )
    parser.add_argument(
        "--score-gain",
        action="store_true",
        help="test the gain on the score, not on the checks a rule fixes (targeted_gain off)",
    )
    parser.add_argument(
        "--max-calls",
        type=int,
        help="a per-night call cap (BudgetSettings.max_calls): gates one at a time, in fixed sequence",
    )
    parser.add_argument(
        "--corr",
        type=float,
        nargs="+",
        metavar="C",
        help="within-task correlation(s), each 0..1: one run per value, each stating its world",
    )
    parser.add_argument(
        "--drift",
        type=float,
        nargs="+",
        metavar="D",
        help="with --corr: share(s) of a task's latent redrawn when the documents change (default 0)",
    )
    args = parser.parse_args(argv)
    worlds = correlated_worlds(parser, args.corr, args.drift)
    config = {"val_others_samples": args.val_others_samples, "targeted_gain": not args.score_gain}
    if args.max_calls is not None:
        config["max_calls"] = args.max_calls
    checks = 2 if args.two_checks else 1
    progress = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    if worlds is None:
        result = run(args.n_val, args.seeds, args.workers, progress, config, checks=checks)
    else:
        started = time.monotonic()
        result = {
            "worlds": [
                run(args.n_val, args.seeds, args.workers, progress, config, checks=checks, world=w) for w in worlds
            ]
        }
        result["wall_s"] = round(time.monotonic() - started, 1)
    json.dump(result, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
