"""Two measurements of a night on the sim backend; prints JSON.

``calls`` (the call economy): on 30 rule-judged tasks (3 kinds x 10; 8 val / 22 train) a first
stateful night and a second one on unchanged documents, tasks and model, at each K; provider calls
per phase (preflight, dream, val, reflect, test, judge) counted by a wrapper around the backend,
averaged over seeds. The sim knobs are the issue's noise model (follow 0.9, base 0.3).

    python scripts/bench_night.py calls --ks 1,3,5 --seeds 5
    python scripts/bench_night.py calls --sim sim:follow=0.98,base=0.05,correct=0.6,harmful=0.2   # large effects
    python scripts/bench_night.py calls --score-cache-days 0   # without the score cache
    python scripts/bench_night.py calls --k-agree 0            # without adaptive K
    python scripts/bench_night.py calls --dream-factor 1       # with dream variants
    python scripts/bench_night.py calls --fresh-second --recall-k 0   # a second night of new tasks, no recall
    python scripts/bench_night.py calls --dream-kind-tasks 0   # dream every train task
    python scripts/bench_night.py calls --val-others-samples 4 # other val tasks start at a first look
    python scripts/bench_night.py calls --variants             # the lever sets of VARIANTS side by side
    python scripts/bench_night.py calls --reflect-samples 1 --screen-pool 1 --score-gain   # the three levers off

Calls of recalled tasks and dream variants are counted under ``attempt`` (their ids are not the
suite's), the variants' writing under ``vary``.

``path`` (the default): how close a night comes to its critical-path bound: a dry-run night at a
fixed simulated latency and a concurrency limit.

Every provider call is traced (start, end, purpose). Calls whose intervals overlap, directly or
through a chain, form one *phase* (work that ran together); phases follow one another because
each depends on the last. The bound is Σ over phases of ⌈calls / concurrency⌉ × latency: what a
perfect scheduler would need for the same phases. Target: wall ≤ 1.15 × bound.

    python scripts/bench_night.py --latency 0.2 --concurrency 4
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from skillopt_sleep import night
from skillopt_sleep.backends import assembly
from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.config import Config, GateSettings, LearningSettings
from skillopt_sleep.documents.managed_block import load_documents
from skillopt_sleep.mining import assign_splits, tasks_document
from skillopt_sleep.types import TaskRecord

KINDS = (
    (
        "commit",
        "Write the commit message for change",
        [{"op": "contains", "arg": "Refs: ACME-"}, {"op": "no_refusal", "arg": None}],
    ),
    (
        "pr",
        "Write the PR description for branch",
        [{"op": "section_present", "arg": "Testing"}, {"op": "not_contains", "arg": "TODO"}],
    ),
    (
        "notes",
        "Draft release notes for version",
        [{"op": "section_present", "arg": "Fixes"}, {"op": "section_present", "arg": "Breaking changes"}],
    ),
)


class Tracing:
    """Wraps a backend; records every call's interval and purpose."""

    def __init__(self, inner: Any, trace: list[tuple[float, float, str]], lock: threading.Lock):
        self.inner, self.trace, self.lock = inner, trace, lock
        self.id = inner.id
        self.price, self.offline = inner.price, inner.offline

    def complete(self, request: Request) -> Completion:
        start = time.monotonic()
        try:
            return self.inner.complete(request)
        finally:
            with self.lock:
                self.trace.append((start, time.monotonic(), request.purpose))


def make_tasks(per_kind: int, seed: int) -> list[TaskRecord]:
    tasks = [
        TaskRecord(
            id=f"{kind}-{i}",
            intent=f"{verb} {i}",
            project="/bench",
            skill_hint=kind,
            tags=[kind],
            judge={"kind": "rule", "checks": checks},
            recurrence=per_kind,
        )
        for kind, verb, checks in KINDS
        for i in range(per_kind)
    ]
    assign_splits(tasks, seed=seed)
    return tasks


def phases(trace: list[tuple[float, float, str]]) -> list[Counter]:
    """Group calls into maximal runs of overlapping intervals, in time order."""
    groups: list[Counter] = []
    horizon = -math.inf
    for start, end, purpose in sorted(trace):
        if start >= horizon:
            groups.append(Counter())
        groups[-1][purpose] += 1
        horizon = max(horizon, end)
    return groups


def run(latency: float, concurrency: int, per_kind: int, k: int, seed: int) -> dict[str, Any]:
    trace: list[tuple[float, float, str]] = []
    lock = threading.Lock()
    real_make = assembly.make_backend
    assembly.make_backend = lambda *a, **kw: Tracing(real_make(*a, **kw), trace, lock)
    try:
        with tempfile.TemporaryDirectory(prefix="skillopt-bench-") as tmp:
            root = Path(tmp)
            project = root / "proj"
            project.mkdir()
            (project / "CLAUDE.md").write_text("# bench\n", encoding="utf-8")
            tasks_file = root / "tasks.json"
            tasks_file.write_text(json.dumps(tasks_document(make_tasks(per_kind, seed), True)), encoding="utf-8")
            config = Config(backend=f"sim:latency={latency},seed={seed}", agent="claude", k=k, concurrency=concurrency)
            options = night.NightOptions(project=project, config=config, mode="dry-run", tasks_file=tasks_file)
            started = time.monotonic()
            report = night.run_night(options)
            wall = time.monotonic() - started
    finally:
        assembly.make_backend = real_make
    groups = phases(trace)
    bound = sum(math.ceil(sum(g.values()) / concurrency) for g in groups) * latency
    return {
        "latency_s": latency,
        "concurrency": concurrency,
        "tasks": report.splits,
        "k": k,
        "status": report.status,
        "calls_per_phase": [{"calls": sum(g.values()), "purposes": dict(g)} for g in groups],
        "engine_phases": next((n for n in report.notes if n.startswith("phases")), ""),
        "total_calls": len(trace),
        "wall_s": round(wall, 3),
        "critical_path_bound_s": round(bound, 3),
        "ratio": round(wall / bound, 3) if bound else None,
    }


SUITE_VAL = {"commit": 3, "pr": 3, "notes": 2}  # 8 val / 22 train
SUITE_SIM = "sim:follow=0.9,base=0.3,correct=0.6,harmful=0.2"


def suite_tasks(per_kind: int = 10) -> list[TaskRecord]:
    """The calls suite: 3 kinds x ``per_kind`` rule-judged tasks, the first few of each kind val."""
    tasks = make_tasks(per_kind, 0)
    for task in tasks:
        kind, index = task.id.rsplit("-", 1)
        task.split = "val" if int(index) < SUITE_VAL[kind] else "train"
    return tasks


class Counting:
    """Wraps a backend; counts every provider call by phase: an attempt's phase is its task's split,
    and a val attempt is ``val_baseline`` under the night's own documents, else ``val_candidates``."""

    def __init__(self, inner: Any, counts: Counter, splits: dict[str, str], lock: threading.Lock, base_documents: str):
        self.inner, self.counts, self.splits, self.lock = inner, counts, splits, lock
        self.base_documents = base_documents

    def __getattr__(self, name: str) -> Any:  # id, price, offline, can_offer_tools, ...
        return getattr(self.inner, name)

    def complete(self, request: Request) -> Completion:
        phase = request.purpose
        if phase == "attempt":
            task_id = (request.payload.get("task") or {}).get("id", "")
            phase = {"train": "dream"}.get(self.splits.get(task_id, ""), self.splits.get(task_id, "attempt"))
            if phase == "val":
                same = request.payload.get("documents") == self.base_documents
                phase = "val_baseline" if same else "val_candidates"
        with self.lock:
            self.counts[phase] += 1
        return self.inner.complete(request)


def _patched_backends(wrap: Any) -> Any:
    """Wrap every backend the engine builds, wherever ``make_backend`` is imported from."""
    import contextlib

    from skillopt_sleep import backends

    real = backends.make_backend

    @contextlib.contextmanager
    def patched() -> Any:
        holders: list[Any] = [
            m
            for name, m in list(sys.modules.items())
            if name.startswith("skillopt_sleep") and getattr(m, "make_backend", None) is real
        ]
        for module in holders:
            module.make_backend = lambda *a, **kw: wrap(real(*a, **kw))
        try:
            yield
        finally:
            for module in holders:
                module.make_backend = real

    return patched()


def one_night(
    project: Path,
    tasks_file: Path,
    k: int,
    seed: int,
    splits: dict[str, str],
    levers: dict[str, Any],
    sim: str = SUITE_SIM,
) -> dict[str, Any]:
    counts: Counter = Counter()
    lock = threading.Lock()
    caps = levers.get("max_calls")
    levers = dict(levers, max_calls=caps.get(k) if isinstance(caps, dict) else caps)
    config = Config(backend=f"{sim},seed={seed}", agent="claude", k=k, **levers)
    options = night.NightOptions(project=project, config=config, mode="run", tasks_file=tasks_file)
    base = load_documents(project, "claude").prompt_prefix()
    with _patched_backends(lambda inner: Counting(inner, counts, splits, lock, base)):
        report = night.run_night(options)
    return {
        "calls": sum(counts.values()),
        "per_phase": dict(sorted(counts.items())),
        "accepted": len(report.accepted_edits),
        "status": report.status,
    }


def fresh_instances(tasks: list[TaskRecord]) -> list[TaskRecord]:
    """New instances of the same kinds (new ids and requests, the same checks and splits): a second
    night of new sessions, so recall has past tasks to draw from."""
    return [replace(t, id=f"{t.id}-b", intent=f"{t.intent} (second week)") for t in tasks]


def run_calls(
    ks: list[int], seeds: list[int], levers: dict[str, Any], fresh_second: bool = False, sim: str = SUITE_SIM
) -> dict[str, Any]:
    import os

    tasks = suite_tasks()
    second_tasks = fresh_instances(tasks) if fresh_second else tasks
    splits = {t.id: t.split for t in tasks + second_tasks}
    out: dict[str, Any] = {
        "suite": {
            "tasks": len(tasks),
            "val": sum(t.split == "val" for t in tasks),
            "train": sum(t.split == "train" for t in tasks),
            "backend": sim,
            "seeds": seeds,
            "levers": levers,
            "second_night": "new instances" if fresh_second else "the same tasks",
        },
        "by_k": {},
    }
    old_home = os.environ.get("SKILLOPT_SLEEP_HOME")
    try:
        for k in ks:
            rows: list[dict[str, Any]] = []
            for seed in seeds:
                with tempfile.TemporaryDirectory(prefix="skillopt-bench-") as tmp:
                    root = Path(tmp)
                    os.environ["SKILLOPT_SLEEP_HOME"] = str(root / "home")
                    project = root / "proj"
                    project.mkdir()
                    (project / "CLAUDE.md").write_text("# bench\n", encoding="utf-8")
                    tasks_file = root / "tasks.json"
                    tasks_file.write_text(json.dumps(tasks_document(tasks, True)), encoding="utf-8")
                    first = one_night(project, tasks_file, k, seed, splits, levers, sim)
                    if fresh_second:
                        tasks_file.write_text(json.dumps(tasks_document(second_tasks, True)), encoding="utf-8")
                    second = one_night(project, tasks_file, k, seed, splits, levers, sim)
                rows.append({"seed": seed, "first": first, "second": second})
            out["by_k"][str(k)] = {
                "first_night_mean_calls": _mean(r["first"]["calls"] for r in rows),
                "second_night_mean_calls": _mean(r["second"]["calls"] for r in rows),
                "first_night_mean_per_phase": _mean_phases(r["first"]["per_phase"] for r in rows),
                "second_night_mean_per_phase": _mean_phases(r["second"]["per_phase"] for r in rows),
                "nights": rows,
            }
    finally:
        if old_home is None:
            os.environ.pop("SKILLOPT_SLEEP_HOME", None)
        else:
            os.environ["SKILLOPT_SLEEP_HOME"] = old_home
    return out


# lever sets compared by ``calls --variants``: each changes only what it names from the defaults
VARIANTS: dict[str, dict[str, Any]] = {
    "before (every train task dreamed; other val tasks matched to the edit's own)": {
        "dream_kind_tasks": 0,
        "val_others_samples": 0,
    },
    "dream by kind (the defaults)": {"dream_kind_tasks": 3, "val_others_samples": 0},
    "other val tasks at a first look only": {"dream_kind_tasks": 0, "val_others_samples": 4},
    "dream by kind + other val tasks at a first look": {"dream_kind_tasks": 3, "val_others_samples": 4},
    "dream by kind + other val tasks at 2": {"dream_kind_tasks": 3, "val_others_samples": 2},
    "dream by kind + first look 2 (val_samples 2, others 2)": {
        "dream_kind_tasks": 3,
        "val_others_samples": 2,
        "val_samples": 2,
    },
    "dream by kind, max_edits 2": {"dream_kind_tasks": 3, "val_others_samples": 0, "max_edits": 2},
    "dream by kind, max_edits 1": {"dream_kind_tasks": 3, "val_others_samples": 0, "max_edits": 1},
    "dream by kind + others at a first look, max_edits 1": {
        "dream_kind_tasks": 3,
        "val_others_samples": 4,
        "max_edits": 1,
    },
    "the three levers off (one reading, no screen, gain on the score)": {
        "reflect_samples": 1,
        "screen_pool": 1,
        "targeted_gain": False,
    },
    "one reading of each reflect request": {"reflect_samples": 1},
    "no screen on train": {"screen_pool": 1},
    "gain on the score": {"targeted_gain": False},
}


def _mean(values: Any) -> float:
    values = list(values)
    return round(sum(values) / len(values), 2)


def _mean_phases(rows: Any) -> dict[str, float]:
    rows = list(rows)
    keys = sorted({k for r in rows for k in r})
    return {k: round(sum(r.get(k, 0) for r in rows) / len(rows), 2) for k in keys}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["calls"]:
        parser = argparse.ArgumentParser(description="calls per phase of a first and a second night")
        parser.add_argument("--ks", default="1,3,5", help="samples per train task, comma-separated")
        parser.add_argument("--seeds", type=int, default=5, help="sim seeds 1..N")
        parser.add_argument(
            "--sim",
            default=SUITE_SIM,
            help=f"the sim backend and its knobs (default {SUITE_SIM}; large effects: "
            "sim:follow=0.98,base=0.05,correct=0.6,harmful=0.2)",
        )
        parser.add_argument(
            "--score-cache-days",
            type=float,
            default=14.0,
            help="0 turns the cross-night score cache off (to measure it)",
        )
        parser.add_argument("--k-agree", type=int, default=2, help="0 turns adaptive K off (to measure it)")
        parser.add_argument(
            "--recall-k", type=int, default=LearningSettings.recall_k, help="past tasks recalled into train"
        )
        parser.add_argument(
            "--dream-factor",
            type=int,
            default=LearningSettings.dream_factor,
            help="dream variants per train task (0: off)",
        )
        parser.add_argument(
            "--dream-kind-tasks",
            type=int,
            default=LearningSettings.dream_kind_tasks,
            help="a kind stops being dreamed once this many of its tasks teach something (0: all)",
        )
        parser.add_argument(
            "--val-others-samples",
            type=int,
            default=GateSettings.val_others_samples,
            help="samples the val tasks outside an edit's kind start with (0: as many as its own)",
        )
        parser.add_argument("--val-samples", type=int, default=GateSettings.val_samples, help="first look per val task")
        parser.add_argument(
            "--max-edits", type=int, default=LearningSettings.max_edits, help="edits reflect may send to the gate"
        )
        parser.add_argument(
            "--screen-pool",
            type=int,
            default=LearningSettings.screen_pool,
            help="rules replayed on train per rule gated (1: none dropped for fixing nothing)",
        )
        parser.add_argument(
            "--reflect-samples",
            type=int,
            default=LearningSettings.reflect_samples,
            help="readings of each reflect request",
        )
        parser.add_argument(
            "--score-gain",
            action="store_true",
            help="test a rule's gain on its tasks' score, not on the checks it fixes",
        )
        parser.add_argument(
            "--max-calls",
            default="",
            help="per-night call cap (BudgetSettings.max_calls): one number, or one per --ks entry "
            "(e.g. 39,72,94); empty: uncapped",
        )
        parser.add_argument(
            "--fresh-second",
            action="store_true",
            help="the second night gets new instances of the same kinds (recall has something to draw)",
        )
        parser.add_argument(
            "--variants",
            action="store_true",
            help="every lever set of VARIANTS side by side in one run (the other lever flags are ignored)",
        )
        args = parser.parse_args(argv[1:])
        levers = {
            "score_cache_days": args.score_cache_days,
            "k_agree": args.k_agree,
            "recall_k": args.recall_k,
            "dream_factor": args.dream_factor,
            "dream_kind_tasks": args.dream_kind_tasks,
            "val_others_samples": args.val_others_samples,
            "val_samples": args.val_samples,
            "max_edits": args.max_edits,
            "screen_pool": args.screen_pool,
            "reflect_samples": args.reflect_samples,
            "targeted_gain": not args.score_gain,
        }
        ks, seeds = [int(k) for k in args.ks.split(",")], list(range(1, args.seeds + 1))
        caps = [int(c) for c in args.max_calls.split(",")] if args.max_calls else []
        if caps:
            if len(caps) not in (1, len(ks)):
                parser.error("--max-calls takes one number or one per --ks entry")
            levers["max_calls"] = dict(zip(ks, caps * len(ks) if len(caps) == 1 else caps, strict=True))
        if args.variants:
            defaults = {
                "score_cache_days": 14.0,
                "k_agree": 2,
                "recall_k": LearningSettings.recall_k,
                "dream_factor": LearningSettings.dream_factor,
            }
            result: dict[str, Any] = {"variants": {}}
            for name, changed in VARIANTS.items():
                full = run_calls(ks, seeds, defaults | changed, fresh_second=args.fresh_second, sim=args.sim)
                result["variants"][name] = {
                    "levers": changed,
                    "by_k": {
                        k: {
                            "first_night_mean_calls": v["first_night_mean_calls"],
                            "second_night_mean_calls": v["second_night_mean_calls"],
                            "first_night_mean_per_phase": v["first_night_mean_per_phase"],
                            "first_night_accepted": [r["first"]["accepted"] for r in v["nights"]],
                        }
                        for k, v in full["by_k"].items()
                    },
                }
                print(f"{name}: done", file=sys.stderr)
        else:
            result = run_calls(ks, seeds, levers, fresh_second=args.fresh_second, sim=args.sim)
        json.dump(result, sys.stdout, indent=1)
        print()
        return 0
    if argv[:1] == ["path"]:
        argv = argv[1:]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="simulated seconds per call")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--per-kind", type=int, default=4, help="tasks per task kind (3 kinds)")
    parser.add_argument("--k", type=int, default=4, help="samples per train task")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    result = run(args.latency, args.concurrency, args.per_kind, args.k, args.seed)
    json.dump(result, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
