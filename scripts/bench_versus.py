#!/usr/bin/env python3
"""This engine and the reference engine side by side in one simulated world, night after night.
Prints one JSON object.

The world (``scripts/versus_world.py``, served by ``scripts/versus_server.py``): 4 kinds of task, 3
train + 2 val tasks each (the same every night), each kind with one hidden ``contains`` check; the
sim's knobs follow 0.9, base 0.3, correct 0.6, harmful 0.25. Each engine runs ``--nights`` nights
from the same starting documents and adopts what it accepts; after each night the documents on disk
are read back and scored.

- The reference engine (pip ``skillopt`` 0.2.0, in its own virtualenv, built on first use under
  ``~/.cache/skillopt-sleep-bench/``) runs ``python -m skillopt_sleep run --backend claude
  --tasks-file ... --auto-adopt`` with a stand-in ``claude`` first on PATH that forwards each prompt
  to the world, served as an Anthropic Messages endpoint on 127.0.0.1.
- This engine runs ``night.run_night`` + ``adoption.adopt`` in this process on the same tasks, its
  ``anthropic`` backend (``base_url``) talking to the same endpoint; the world reads its attempt and
  reflect prompts back (documents, task, failed checks) and answers with the sim's logic.
  ``--transport in-process`` swaps HTTP for an in-process backend with the same logic;
  ``--transport handoff`` runs its ``handoff`` backend instead: every call becomes a prompt file,
  the world answers each from the file's text alone (as a person's agent session would), and the
  night is run again until it finishes; each night also reports its ``rounds``.

Per night and engine (mean over seeds): provider calls (by purpose; with ``--transport in-process``
also this engine's attempts by phase: train or val task, under the night's starting documents or a
candidate's), prompt characters, adopted
rules classified covering / neutral / harmful / trade-off (how each reads against the hidden checks
of the tasks it applies to), and the ground truth: the exact probability, averaged over all 20 tasks, that the
documents on disk make a task's checks pass. ``ceiling``: the ground truth of the starting documents
plus one covering rule per kind.

Worlds: ``default``; ``subtle-harm`` (harmful rules are plain style advice that contradicts no
check, and every check one reaches passes with its probability x 0.8); ``trade-off`` (some covering
rules carry a clause that halves another kind's check: classified ``trade-off``); ``correlated``
(the default world answering with within-task correlation, corr 0.8). ``--corr`` / ``--drift`` give
any world within-task correlation; then each night also reports ``ground_truth_tasks`` and each run
``repeat_agreement`` (``scripts/versus_worlds_extra.py`` states both worlds and both measures).

    python scripts/bench_versus.py --nights 3 --seeds 4 --world default --out docs/bench/versus.json
    python scripts/bench_versus.py --engines this --max-calls 150
    python scripts/bench_versus.py --world subtle-harm --seeds 8
    python scripts/bench_versus.py --world trade-off --seeds 8
    python scripts/bench_versus.py --world correlated --corr 0.5 --drift 0.2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import versus_server as vs  # noqa: E402
import versus_world as vw  # noqa: E402
import versus_worlds_extra as extra  # noqa: E402
from bench_harvest import REFERENCE, engine_commit, reference_python  # noqa: E402
from versus_judging import CLASSES, classified, truths  # noqa: E402
from versus_reference import run_reference  # noqa: E402

from skillopt_sleep import night  # noqa: E402
from skillopt_sleep import backend_spec  # noqa: E402
from skillopt_sleep.backends import handoff  # noqa: E402
from skillopt_sleep.errors import EXIT_HANDOFF  # noqa: E402
from skillopt_sleep.paths import project_dirs  # noqa: E402
from skillopt_sleep.checks import judges  # noqa: E402
from skillopt_sleep.staging.adoption import adopt  # noqa: E402
from skillopt_sleep.config import Config  # noqa: E402
from skillopt_sleep.documents.managed_block import load_documents  # noqa: E402
from skillopt_sleep.mining import tasks_document  # noqa: E402
from skillopt_sleep.types import TaskRecord  # noqa: E402

ENGINES = ("reference", "this")
PROJECT = "/bench-versus"
THIS_TRANSPORT = {
    "http": "its anthropic backend (base_url) to the world's Anthropic Messages endpoint on 127.0.0.1",
    "in-process": "an in-process backend into the world (the same logic, no HTTP)",
    "handoff": "its handoff backend: each call a prompt file the world answers from the file's text; "
    "the night run again until it finishes",
}

backend_spec.BACKEND_MODULES["versus"] = "versus_world"  # this engine's in-process backend into the world


# ---- this engine ----


def our_tasks() -> list[TaskRecord]:
    return [
        TaskRecord(
            id=t.id,
            intent=t.intent,
            project=PROJECT,
            kind=t.kind,
            split=t.split,
            recurrence=3,
            judge={"kind": "rule", "checks": [judges.validate_check(dict(c)) for c in t.checks]},
        )
        for t in vw.world_tasks()
    ]


def our_rules(project: Path) -> list[str]:
    return [rule for doc in load_documents(project).all() for rule in doc.rules()]


def run_this(
    seed: int,
    nights: int,
    world: str,
    max_calls: int | None,
    transport: str,
    concurrency: int = 1,
    corr: float = 0.0,
    drift: float = 0.0,
    handoff_ahead: int | None = None,
) -> dict[str, Any]:
    world = extra.logic(world)
    knobs = vw.knobs_for(seed, corr, drift)
    the_world = vs.World(seed, world, corr, drift)
    vw.VersusBackend.agreement.clear()
    server = vs.serve(the_world) if transport == "http" else None
    url = f"http://127.0.0.1:{server.server_address[1]}" if server else ""
    with tempfile.TemporaryDirectory(prefix="skillopt-bench-versus-") as tmp:
        root = Path(tmp)
        os.environ["SKILLOPT_SLEEP_HOME"] = str(root / "home")
        project = root / "proj"
        skill = project / ".claude" / "skills" / "skillopt-sleep-learned" / "SKILL.md"
        skill.parent.mkdir(parents=True)
        skill.write_text(vw.SKILL_TEXT, encoding="utf-8")
        (project / "CLAUDE.md").write_text(vw.MEMORY_TEXT, encoding="utf-8")
        tasks_file = root / "tasks.json"
        tasks_file.write_text(json.dumps(tasks_document(our_tasks(), True)), encoding="utf-8")

        def truth() -> dict[str, float]:
            return truths(knobs, load_documents(project).prompt_prefix(), world)

        rows: list[dict[str, Any]] = [{"night": 0, "calls": 0, "prompt_chars": 0, **truth()}]
        try:
            for n in range(1, nights + 1):
                before, (calls0, chars0) = our_rules(project), the_world.snapshot()
                vw.VersusBackend.counts.clear()
                vw.VersusBackend.phases.clear()
                vw.VersusBackend.night_documents = load_documents(project).prompt_prefix()
                vw.VersusBackend.prompt_chars = 0
                the_world.optimizer_seed = seed * 1000 + n
                if server:
                    target = optimizer = f"anthropic:base_url={url},api_key=world-key,model=world"
                elif transport == "handoff":
                    target = optimizer = f"handoff:ahead={handoff_ahead}" if handoff_ahead is not None else "handoff"
                else:
                    target = f"versus:seed={seed},world={world},corr={corr},drift={drift}"
                    optimizer = f"versus:seed={seed * 1000 + n},world={world}"
                config = Config(
                    backend=target,
                    optimizer_backend=optimizer,
                    agent="claude",
                    max_calls=max_calls or 0,
                    concurrency=concurrency,
                )
                rounds = 0
                try:
                    while True:
                        try:
                            report = night.run_night(
                                night.NightOptions(project=project, config=config, mode="run", tasks_file=tasks_file)
                            )
                            break
                        except night.NightStopped as stop:
                            if transport != "handoff" or stop.code != EXIT_HANDOFF or rounds >= MAX_ROUNDS:
                                raise
                            rounds += 1
                            answer_prompts(project, the_world)
                except Exception as exc:  # a failed night is a result: recorded, and the next night runs
                    report, error = None, f"{type(exc).__name__}: {exc}"[:400]
                if report is not None and report.status == "staged" and report.accepted_edits:
                    adopt(project, report.night_id, allow_simulated=True)
                after = our_rules(project)
                calls1, chars1 = the_world.snapshot()
                by_world = server or transport == "handoff"
                world_calls = dict(calls1 - calls0) if by_world else dict(vw.VersusBackend.counts)
                row = {
                    "night": n,
                    "status": report.status if report else "failed",
                    "calls": sum(world_calls.values())
                    if transport == "handoff" or not report
                    else sum(report.calls.values()),
                    "calls_by_purpose": world_calls if transport == "handoff" or not report else dict(report.calls),
                    "prompt_chars": chars1 - chars0 if by_world else vw.VersusBackend.prompt_chars,
                    "adopted": classified([r for r in after if r not in before], world),
                    **truth(),
                    "refused": [
                        {"rule": r["edit"]["content"], "reasons": r["reasons"]}
                        for r in (report.rejected_edits if report else [])
                    ],
                }
                if report is None:
                    row["error"] = error
                if transport == "handoff":
                    row["rounds"] = rounds + 1
                elif not server:
                    row["attempts_by_phase"] = dict(sorted(vw.VersusBackend.phases.items()))
                if server:
                    row["world_calls_by_purpose"] = world_calls
                rows.append(row)
            final = classified(our_rules(project), world)
        finally:
            if server:
                server.shutdown()
                server.server_close()
        agreement = (the_world.agreement if server or transport == "handoff" else vw.VersusBackend.agreement).summary()
        return {
            "engine": "this",
            "seed": seed,
            "transport": transport,
            "nights": rows,
            "final_rules": final,
            "repeat_agreement": agreement,
        }


MAX_ROUNDS = 40  # a handoff night that has not finished by then is recorded as failed


def answer_prompts(project: Path, world: vs.World) -> int:
    """Answer every waiting handoff prompt of ``project`` from the prompt file's text alone: its
    instructions as the system prefix and its request as the message, as the world answers this
    engine over HTTP. How many were answered."""
    folder = project_dirs(project).root / handoff.FOLDER
    answered = 0
    for prompt in sorted((folder / "prompts").glob("*.md")):
        answer = folder / "answers" / prompt.name
        if answer.exists():
            continue
        text = prompt.read_text(encoding="utf-8")
        system = text.partition("\n## Instructions\n\n")[2].partition("\n\n## Request\n\n")[0]
        request = text.partition("\n\n## Request\n\n")[2].rstrip("\n")
        answer.parent.mkdir(parents=True, exist_ok=True)
        answer.write_text(world.answer(system, request), encoding="utf-8")
        answered += 1
    return answered


# ---- the reference engine ----


# ---- the benchmark ----


def one_job(
    job: tuple[str, int, int, str, int | None, str | None, str, int, float, float, int | None],
) -> dict[str, Any]:
    engine, seed, nights, world, max_calls, python, transport, concurrency, corr, drift, ahead = job
    started = time.monotonic()
    if engine == "this":
        out = run_this(seed, nights, world, max_calls, transport, concurrency, corr, drift, ahead)
    else:
        assert python is not None
        out = run_reference(python, seed, nights, world, corr, drift)
    out["wall_s"] = round(time.monotonic() - started, 2)
    return out


def mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 4) if xs else 0.0


def summary(runs: list[dict[str, Any]], nights: int) -> list[dict[str, Any]]:
    rows = []
    for n in range(nights + 1):
        at = [r["nights"][n] for r in runs]
        row: dict[str, Any] = {
            "night": n,
            "calls": mean([x["calls"] for x in at]),
            "prompt_chars": mean([x["prompt_chars"] for x in at]),
            "ground_truth": mean([x["ground_truth"] for x in at]),
        }
        if all("ground_truth_tasks" in x for x in at):
            row["ground_truth_tasks"] = mean([x["ground_truth_tasks"] for x in at])
        if n:
            row["adopted_total"] = {k: sum(x["adopted"][k] for x in at) for k in CLASSES}
            row["adopted_mean"] = {k: mean([x["adopted"][k] for x in at]) for k in CLASSES}
            purposes = sorted({p for x in at for p in x["calls_by_purpose"]})
            row["calls_by_purpose"] = {p: mean([x["calls_by_purpose"].get(p, 0) for x in at]) for p in purposes}
            if all("rounds" in x for x in at):
                row["rounds"] = mean([x["rounds"] for x in at])
            if all("attempts_by_phase" in x for x in at):
                phases = sorted({p for x in at for p in x["attempts_by_phase"]})
                row["attempts_by_phase"] = {p: mean([x["attempts_by_phase"].get(p, 0) for x in at]) for p in phases}
        rows.append(row)
    return rows


def pooled(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Runs' ``repeat_agreement`` pooled by pairs."""
    pairs = sum(p["pairs"] for p in parts)
    return {
        "cells": sum(p["cells"] for p in parts),
        "pairs": pairs,
        **{
            k: round(sum(p[k] * p["pairs"] for p in parts if p["pairs"]) / pairs, 4) if pairs else None
            for k in ("measured", "if_independent")
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--nights", type=int, default=3, help="nights per run (default 3)")
    parser.add_argument("--seeds", type=int, default=8, help="seeds 0..N-1 per engine (default 8)")
    parser.add_argument(
        "--world",
        choices=vw.WORLDS,
        default="default",
        help="default; subtle-harm: harmful rules read as style advice and scale every check "
        "they reach by 0.8; trade-off: some covering rules also halve another kind's "
        "check; correlated: the default world with within-task correlation "
        f"(corr {extra.CORRELATED} unless --corr says) (default: default)",
    )
    parser.add_argument(
        "--corr",
        type=float,
        default=None,
        help="within-task correlation of the world's answers, 0..1 (default 0; "
        f"{extra.CORRELATED} in the correlated world)",
    )
    parser.add_argument(
        "--drift",
        type=float,
        default=0.0,
        help="share of a task's latent redrawn when the documents change, 0..1 (default 0)",
    )
    parser.add_argument(
        "--engines", default="reference,this", help="comma-separated, of: reference, this (default both)"
    )
    parser.add_argument(
        "--max-calls",
        type=int,
        default=None,
        help="this engine's per-night call cap (default none, even though the engine caps a "
        "model backend's night by default)",
    )
    parser.add_argument(
        "--transport",
        choices=tuple(THIS_TRANSPORT),
        default="http",
        help="how this engine reaches the world: its anthropic backend over HTTP (default), "
        "an in-process backend with the same logic, or its handoff backend (prompt files the "
        "world answers from their text)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="this engine's concurrent model calls (default 1: the world numbers repeats of one "
        "prompt in arrival order, so one at a time keeps a run reproducible)",
    )
    parser.add_argument(
        "--handoff-ahead",
        type=int,
        default=None,
        help="with --transport handoff: samples of an attempt asked ahead in each round (default: the backend's)",
    )
    parser.add_argument("--workers", type=int, default=1, help="runs in parallel (default 1)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if not engines or not set(engines) <= set(ENGINES):
        print(f"--engines takes some of: {', '.join(ENGINES)}", file=sys.stderr)
        return 2
    if min(args.nights, args.seeds, args.workers, args.concurrency) < 1 or (
        args.max_calls is not None and args.max_calls < 1
    ):
        print("--nights, --seeds, --workers, --concurrency and --max-calls must be >= 1", file=sys.stderr)
        return 2
    corr = extra.corr_for(args.world, args.corr)
    if not (0.0 <= corr <= 1.0 and 0.0 <= args.drift <= 1.0):
        print("--corr and --drift must be within 0..1", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        python = str(reference_python()) if "reference" in engines else None
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"could not build the reference engine's virtualenv: {exc}", file=sys.stderr)
        return 1
    jobs = [
        (
            engine,
            seed,
            args.nights,
            args.world,
            args.max_calls,
            python,
            args.transport,
            args.concurrency,
            corr,
            args.drift,
            args.handoff_ahead,
        )
        for engine in engines
        for seed in range(args.seeds)
    ]
    if args.workers == 1:
        results = [one_job(job) for job in jobs]
    else:
        with Pool(args.workers) as pool:
            results = pool.map(one_job, jobs, chunksize=1)
    knobs, logic = vw.knobs_for(0), extra.logic(args.world)
    start_docs = vw.SKILL_TEXT + "\n" + vw.MEMORY_TEXT
    oracle = sorted({str(vw.covering_rule(dict(c))) for t in vw.world_tasks() for c in t.checks})
    ceiling_docs = start_docs + "\n" + "\n".join(f"- {rule}" for rule in oracle)
    report = {
        "benchmark": "versus",
        "world": args.world,
        "knobs": vw.KNOBS,
        "world_knobs": extra.world_knobs(args.world, corr, args.drift),
        "tasks": {
            "kinds": [k for k, _, _ in vw.KINDS],
            "train_per_kind": vw.SPLITS.count("train"),
            "val_per_kind": vw.SPLITS.count("val"),
            "checks": "one contains check per kind (a token)",
        },
        "nights": args.nights,
        "seeds": list(range(args.seeds)),
        "max_calls": args.max_calls,
        "concurrency": args.concurrency,
        **({"handoff_ahead": args.handoff_ahead} if args.transport == "handoff" else {}),
        "engines": {
            "reference": {
                "package": REFERENCE,
                "transport": "its claude backend; a stand-in claude on PATH forwards "
                "each prompt to the world's Anthropic Messages endpoint on 127.0.0.1",
            },
            "this": {"commit": engine_commit(), "transport": THIS_TRANSPORT[args.transport]},
        },
        "ground_truth_start": round(vw.ground_truth(knobs, vw.world_tasks(), start_docs, logic), 4),
        "ceiling": round(vw.ground_truth(knobs, vw.world_tasks(), ceiling_docs, logic), 4),
        "summary": {engine: summary([r for r in results if r["engine"] == engine], args.nights) for engine in engines},
        "runs_ending_with": {
            engine: {
                k: sum(r["final_rules"][k] > 0 for r in results if r["engine"] == engine)
                for k in ("harmful", "neutral", "trade-off")
            }
            for engine in engines
        },
        "repeat_agreement": {
            engine: pooled([r["repeat_agreement"] for r in results if r["engine"] == engine]) for engine in engines
        },
        "runs": results,
        "command": "python scripts/bench_versus.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "wall_s": round(time.monotonic() - started, 1),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
