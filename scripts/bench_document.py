"""Whole-document awareness, measured: bench_learning's engine runs on skills whose hand-written
text matters, with the optimizer shown the full documents (today) and without (as before: only the
learned rules); prints JSON.

"Without" hides the documents from the reflect requests only — the prompt's ``$documents`` and the
payload's ``documents`` — exactly what the optimizer saw before whole-document awareness; the
target model, the gate, the tasks and the simulator knobs are bench_learning's, unchanged (its
docstring states them). Each arm runs the same seeds, so the two arms differ by that one thing.

    python scripts/bench_document.py                              # research-notes, 3 nights, 3 seeds
    python scripts/bench_document.py --skills research-notes,git-writing --nights 5 --seeds 4
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

from skillopt_sleep.learning import reflect


def _bench_learning() -> Any:
    path = Path(__file__).with_name("bench_learning.py")
    if not path.is_file():
        raise SystemExit(f"bench_document: {path} is missing (it drives the nights this compares)")
    spec = importlib.util.spec_from_file_location("bench_learning", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_learning"] = module
    spec.loader.exec_module(module)
    return module


def _blind() -> None:
    """The optimizer's view before whole-document awareness: the learned rules only."""
    reflect.optimizer_view = lambda docs, *a, **k: "(not shown)"
    reflect.optimizer_payload = lambda docs: {}


def one_job(job: tuple[str, str, int, int, float]) -> dict[str, Any]:
    arm, name, seed, nights, margin = job
    bench = _bench_learning()
    if arm == "without":
        _blind()
    skill = next(s for s in bench.SUITE if s.name == name)
    started = time.monotonic()
    out = bench.engine_run(skill, seed, nights, margin, True)
    out["arm"] = arm
    out["wall_s"] = round(time.monotonic() - started, 2)
    return out


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def summarise(results: list[dict[str, Any]], nights: int) -> list[dict[str, Any]]:
    rows = []
    for name in sorted({r["skill"] for r in results}):
        row: dict[str, Any] = {"skill": name}
        ceiling = _mean([r["ceiling"]["all"] for r in results if r["skill"] == name])
        row["ceiling"] = ceiling
        for arm in ("without", "with"):
            runs = [r for r in results if r["skill"] == name and r["arm"] == arm]
            per_night = [_mean([r["nights"][n]["test"]["all"] for r in runs]) for n in range(nights + 1)]
            row[arm] = {
                "test_per_night": per_night,
                "fraction_of_ceiling": [None if v is None or not ceiling else round(v / ceiling, 3) for v in per_night],
                "calls_per_night": [_mean([r["nights"][n]["calls"] for r in runs]) for n in range(1, nights + 1)],
                "superseding_rules_adopted": sum(
                    1 for r in runs for rule in r["final_rules"] if "(supersedes: " in rule
                ),
                "rules_lowering_a_kind": sum(len(r["rules_lowering_a_kind"]) for r in runs),
            }
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skills", default="research-notes", help="comma-separated bench_learning skills")
    parser.add_argument("--nights", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--harm-margin", type=float, default=0.08)
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    bench = _bench_learning()
    names = [n.strip() for n in args.skills.split(",") if n.strip()]
    unknown = [n for n in names if n not in {s.name for s in bench.SUITE}]
    if unknown or args.nights < 1 or args.seeds < 1 or args.workers < 1:
        print(
            f"bad arguments: unknown skills {unknown}" if unknown else "nights, seeds and workers must be >= 1",
            file=sys.stderr,
        )
        return 2
    jobs = [
        (arm, name, seed, args.nights, args.harm_margin)
        for name in names
        for seed in range(args.seeds)
        for arm in ("without", "with")
    ]
    started = time.monotonic()
    results = bench.run_jobs(one_job, jobs, args.workers)
    report = {
        "benchmark": "document",
        "sim_knobs": bench.KNOBS,
        "arms": {
            "without": "reflect requests carry no documents (before whole-document awareness)",
            "with": "reflect requests carry both documents in full and their hand-written lines",
        },
        "nights": args.nights,
        "seeds": args.seeds,
        "summary": summarise(results, args.nights),
        "runs": results,
        "wall_s": round(time.monotonic() - started, 1),
    }
    bench.emit(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
