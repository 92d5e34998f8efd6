"""How close ``run --estimate`` comes to what a night then spends; prints JSON.

For each world, seed, K and call cap: a fresh project, the estimate (``estimate.estimate``: the
night rehearsed on the simulator stand-in, corrected by the project's past nights), then the real
night (``run``) on the world's own backend; then a second night on the same project, whose
estimate the first night corrects (and whose calls the score cache cuts). Estimated vs actual
model calls and tokens (input + output), and their ratio actual / estimated; the target is a ratio
within 0.75..1.25.

Worlds:
  * ``suite``: bench_night's call-economy suite (30 rule-judged tasks, 3 kinds, 8 val / 22 train,
    from a reviewed tasks file), on its sim world ``follow=0.9,base=0.3,correct=0.6,harmful=0.2``;
  * ``demo``: the ``demo`` command's world (bundled transcripts harvested and mined), on its sim
    knobs ``follow=0.9,base=0.15,correct=0.6,harmful=0.3``.

The worlds' seeds are the night's sim seeds 1..N; the rehearsal's own seeds are fixed
(``estimate.REHEARSAL_SEEDS``) and its knobs are the simulator's defaults, never the world's.

    python scripts/bench_estimate.py --seeds 5 --ks 1,3,5 --caps none,39/72/94
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_night import SUITE_SIM, suite_tasks  # noqa: E402

from skillopt_sleep import estimate, night  # noqa: E402
from skillopt_sleep.commands.demo import DEFAULT_SIM, build_demo_home  # noqa: E402
from skillopt_sleep.config import Config  # noqa: E402
from skillopt_sleep.estimate_answers import AnswerLog  # noqa: E402
from skillopt_sleep.mining import tasks_document  # noqa: E402


def one(options: night.NightOptions) -> dict[str, Any]:
    """The estimate, then the night; what each said, and, as ``run`` does, the estimate and the
    optimizer's answers kept for the next night's estimate."""
    est = estimate.estimate(options)
    answers = AnswerLog()
    options.stores = [answers]
    try:
        report = night.run_night(options)
    except night.NightStopped as stopped:
        report = stopped.report
    estimate.record(options.project, est.rehearsal, report)
    answers.save(options.project)
    usage = report.usage
    act_calls = sum(report.calls.values())
    act_tokens = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens + usage.output_tokens
    est_tokens = est.input_tokens + est.output_tokens
    return {
        "estimated_calls": est.calls,
        "actual_calls": act_calls,
        "calls_ratio": round(act_calls / est.calls, 3) if est.calls else None,
        "estimated_tokens": est_tokens,
        "actual_tokens": act_tokens,
        "tokens_ratio": round(act_tokens / est_tokens, 3) if est_tokens else None,
        "corrected_by_nights": est.correction.nights,
        "status": report.status,
        "estimated_by_phase": est.rehearsal.by_phase,
        "actual_by_phase": dict(sorted(report.calls.items())),
        "rehearsal_seconds": round(est.rehearsal.seconds, 2),
    }


def suite_nights(seed: int, k: int, cap: int | None, root: Path) -> list[dict[str, Any]]:
    project = root / "proj"
    project.mkdir()
    (project / "CLAUDE.md").write_text("# bench\n", encoding="utf-8")
    tasks_file = root / "tasks.json"
    tasks_file.write_text(json.dumps(tasks_document(suite_tasks(), True)), encoding="utf-8")
    out = []
    for _ in range(2):
        config = Config(backend=f"{SUITE_SIM},seed={seed}", agent="claude", k=k, max_calls=cap)
        out.append(one(night.NightOptions(project=project, config=config, mode="run", tasks_file=tasks_file)))
    return out


def demo_nights(seed: int, k: int, cap: int | None, root: Path) -> list[dict[str, Any]]:
    home, claude, project = build_demo_home(root)
    os.environ["SKILLOPT_SLEEP_HOME"] = str(home)
    out = []
    for _ in range(2):
        config = Config(
            backend=f"sim:{DEFAULT_SIM},seed={seed}",
            agent="claude",
            source="claude",
            claude_home=str(claude),
            k=k,
            max_calls=cap,
        )
        out.append(one(night.NightOptions(project=project, config=config, mode="run")))
    return out


WORLDS = {"suite": suite_nights, "demo": demo_nights}


def _caps(text: str, ks: list[int]) -> list[tuple[str, dict[int, int | None]]]:
    out = []
    for item in text.split(","):
        item = item.strip()
        if item == "none":
            out.append(("uncapped", dict.fromkeys(ks)))
        else:
            values = [int(v) for v in item.split("/")]
            per_k: dict[int, int | None] = dict(
                zip(ks, values if len(values) == len(ks) else values * len(ks), strict=False)
            )
            out.append((f"max_calls {item}", per_k))
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def stats(key: str) -> dict[str, Any]:
        ratios = [r[key] for r in rows if r[key] is not None]
        if not ratios:
            return {}
        return {
            "within_25pct": f"{sum(0.75 <= x <= 1.25 for x in ratios)}/{len(ratios)}",
            "median_ratio": round(statistics.median(ratios), 3),
            "min_ratio": min(ratios),
            "max_ratio": max(ratios),
            "mean_abs_error": round(statistics.fmean(abs(x - 1) for x in ratios), 3),
        }

    return {"nights": len(rows), "calls": stats("calls_ratio"), "tokens": stats("tokens_ratio")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="estimate vs actual model calls and tokens per night")
    parser.add_argument("--worlds", default="suite,demo")
    parser.add_argument("--ks", default="1,3,5")
    parser.add_argument("--seeds", type=int, default=5, help="world seeds 1..N")
    parser.add_argument(
        "--caps",
        default="none,39/72/94",
        help="comma-separated: none (uncapped) or a cap per K separated by / (one value: all Ks)",
    )
    args = parser.parse_args(argv)
    ks = [int(k) for k in args.ks.split(",")]
    old_home = os.environ.get("SKILLOPT_SLEEP_HOME")
    rows: list[dict[str, Any]] = []
    try:
        for world in args.worlds.split(","):
            for cap_name, per_k in _caps(args.caps, ks):
                for k in ks:
                    for seed in range(1, args.seeds + 1):
                        with tempfile.TemporaryDirectory(prefix="skillopt-bench-estimate-") as tmp:
                            root = Path(tmp)
                            os.environ["SKILLOPT_SLEEP_HOME"] = str(root / "home")
                            nights = WORLDS[world](seed, k, per_k[k], root)
                        for n, row in enumerate(nights, 1):
                            rows.append({"world": world, "cap": cap_name, "k": k, "seed": seed, "night": n, **row})
                        print(
                            f"{world} {cap_name} k={k} seed={seed}: "
                            + ", ".join(f"calls {r['estimated_calls']}->{r['actual_calls']}" for r in nights),
                            file=sys.stderr,
                        )
    finally:
        if old_home is None:
            os.environ.pop("SKILLOPT_SLEEP_HOME", None)
        else:
            os.environ["SKILLOPT_SLEEP_HOME"] = old_home
    groups: dict[str, Any] = {}
    for row in rows:
        for key in ("all", f"{row['world']}", f"{row['world']} {row['cap']}", f"{row['world']} night {row['night']}"):
            groups.setdefault(key, []).append(row)
    print(
        json.dumps(
            {
                "target": "actual / estimated within 0.75..1.25",
                "rehearsal_seeds": list(estimate.REHEARSAL_SEEDS),
                "summary": {key: summary(group) for key, group in groups.items()},
                "nights": rows,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
