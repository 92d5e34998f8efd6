"""How close a night comes to its critical-path bound: a dry-run night on the sim backend at a
fixed simulated latency and a concurrency limit; prints JSON.

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
from pathlib import Path
from typing import Any

from skillopt_sleep import night
from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.config import Config
from skillopt_sleep.mining import assign_splits, tasks_document
from skillopt_sleep.types import TaskRecord

KINDS = (
    ("commit", "Write the commit message for change",
     [{"op": "contains", "arg": "Refs: ACME-"}, {"op": "no_refusal", "arg": None}]),
    ("pr", "Write the PR description for branch",
     [{"op": "section_present", "arg": "Testing"}, {"op": "not_contains", "arg": "TODO"}]),
    ("notes", "Draft release notes for version",
     [{"op": "section_present", "arg": "Fixes"}, {"op": "section_present", "arg": "Breaking changes"}]),
)


class Tracing:
    """Wraps a backend; records every call's interval and purpose."""

    def __init__(self, inner: Any, trace: list[tuple[float, float, str]], lock: threading.Lock):
        self.inner, self.trace, self.lock = inner, trace, lock
        self.id = inner.id
        self.price = getattr(inner, "price", None)

    def complete(self, request: Request) -> Completion:
        start = time.monotonic()
        try:
            return self.inner.complete(request)
        finally:
            with self.lock:
                self.trace.append((start, time.monotonic(), request.purpose))


def make_tasks(per_kind: int, seed: int) -> list[TaskRecord]:
    tasks = [
        TaskRecord(id=f"{kind}-{i}", intent=f"{verb} {i}", project="/bench", skill_hint=kind, tags=[kind],
                   judge={"kind": "rule", "checks": checks}, recurrence=per_kind)
        for kind, verb, checks in KINDS for i in range(per_kind)
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
    real_make = night.make_backend
    night.make_backend = lambda *a, **kw: Tracing(real_make(*a, **kw), trace, lock)
    try:
        with tempfile.TemporaryDirectory(prefix="skillopt-bench-") as tmp:
            root = Path(tmp)
            project = root / "proj"
            project.mkdir()
            (project / "CLAUDE.md").write_text("# bench\n", encoding="utf-8")
            tasks_file = root / "tasks.json"
            tasks_file.write_text(json.dumps(tasks_document(make_tasks(per_kind, seed), True)), encoding="utf-8")
            config = Config(backend=f"sim:latency={latency},seed={seed}", agent="claude", k=k,
                            concurrency=concurrency)
            options = night.NightOptions(project=project, config=config, mode="dry-run", tasks_file=tasks_file)
            started = time.monotonic()
            report = night.run_night(options)
            wall = time.monotonic() - started
    finally:
        night.make_backend = real_make
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


def main(argv: list[str] | None = None) -> int:
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
