"""Learning over nights on a suite of deficient skills, under the honest simulator; prints JSON
and writes an SVG chart of held-out score per night.

For each skill of the suite and each seed, N nights run through the engine's real path: a night
(``night.run_night``, mode ``run``) in a temporary project on the skill's train and val tasks, then
``adoption.adopt`` of whatever it staged, then the next night on the adopted documents. Beside it,
in the same run and on the same tasks, the *strict-mean* policy: the same dreaming and the same
optimizer (``dream.run_attempts`` + ``reflect.reflect``), but each candidate is accepted iff the
mean of one replay per val task under it beats the current documents' (bench_gate.py's comparison
policy; no memory across nights).

Each night brings new train and val requests of the skill's kinds (its own sessions; ``--same-tasks``
replays night 1's instead). Measured per night: the held-out TEST score (mean soft score of TEST_SAMPLES replays per test task,
with a target seed the nights never use; test tasks never reach the engine), provider calls, rules
adopted. At the end: the CEILING — the test score of the starting documents plus one covering,
correctly scoped rule per check (superseding the hand-written line it conflicts with), built here
and never in the engine — and every rule of the final documents that lowers some kind (per-kind test
score with the rule vs without it, lower by more than ``--harm-margin``).

Stated knobs (printed in the JSON; see ``skillopt_sleep/backends/sim/__init__.py``): the target
setting follow 0.9 / base 0.3 / harmful 0.25 (correct 0.6), with leak 0.5, verbose 700
chars, overload 0.03 beyond 8 free rules and conflict 0.3 ON. ``--corr 0 0.8`` runs every job once per
within-task correlation (the sim's ``corr``: repeated answers to one task agree); each run and each
summary row then states its ``corr``, and each summary row's ceiling is that of its own world;
``--drift`` sets the sim's ``drift`` (the share of a task's propensity redrawn when the documents change).

    python scripts/bench_learning.py                      # 5 nights, 2 seeds, 2 workers
    python scripts/bench_learning.py --nights 3 --seeds 1 --skills git-writing
    python scripts/bench_learning.py --nights 3 --seeds 2 --corr 0 0.8      # independent vs correlated answers
    python scripts/bench_learning.py --out docs/bench/learning.json --svg docs/bench/learning.svg
    python scripts/bench_learning.py --max-rules 2 --shift 3 --policies engine,engine_no_retire   # retiring rules
    python scripts/bench_learning.py --nights 3 --seeds 8 \
        --policies engine,engine_one_reading,engine_no_screen,engine_score_gain,engine_levers_off   # each lever off

The engine policies other than ``engine`` each turn one setting off (``ENGINE_POLICIES``);
``engine_capped`` runs the defaults under a per-night call cap, once per cap of ``--max-calls``:

    python scripts/bench_learning.py --nights 6 --seeds 8 --policies engine,engine_capped \
        --max-calls 94,150,200,300,400 --policies-svg docs/bench/learning-capped.svg
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Any

from skillopt_sleep import night
from skillopt_sleep.staging.adoption import adopt
from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.client import Client, Stats
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.models import Models
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.config import Config
from skillopt_sleep.documents.managed_block import DocumentSet, EditRefused, apply_edit, load_documents
from skillopt_sleep.replay.dream import run_attempts
from skillopt_sleep.mining import tasks_document
from skillopt_sleep.learning.reflect import reflect
from skillopt_sleep.types import TaskRecord


sys.path.insert(0, str(Path(__file__).resolve().parent))
from learning_suite import (  # noqa: E402
    SPLIT,
    SUITE,
    Skill,
    all_rules,
    at_night,
    make_tasks,
    new_project,
    oracle_rules,
    without,
)


def _report_module() -> Any:
    """``learning_report.py`` beside this script (loaded by path: scripts are not a package)."""
    path = Path(__file__).with_name("learning_report.py")
    spec = importlib.util.spec_from_file_location("learning_report", path)
    assert spec is not None and spec.loader is not None
    if spec.name in sys.modules:
        return sys.modules[spec.name]
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


_report = _report_module()
svg_chart, svg_policies_chart, emit = _report.svg_chart, _report.svg_policies_chart, _report.emit


def summarise(results: list[dict[str, Any]], nights: int) -> list[dict[str, Any]]:
    """Per skill of the suite (in its order) and policy: ``learning_report.summarise``."""
    return _report.summarise(results, nights, [s.name for s in SUITE])


KNOBS = "follow=0.9,base=0.3,correct=0.6,harmful=0.25,leak=0.5,verbose=700,overload=0.03,free_rules=8,conflict=0.3"
# the engine's policies: the settings each changes from the defaults (measured side by side)
ENGINE_POLICIES: dict[str, dict[str, Any]] = {
    "engine": {},
    "engine_no_retire": {"retire_rules": False},  # a full document never retires a rule
    "engine_one_reading": {"reflect_samples": 1},  # each reflect request read once
    "engine_no_screen": {"screen_pool": 1},  # no candidate dropped for fixing nothing on train
    "engine_score_gain": {"targeted_gain": False},  # the gain tested on the whole score, not the fixed checks
    "engine_levers_off": {
        "reflect_samples": 1,
        "screen_pool": 1,
        "targeted_gain": False,
    },  # the three levers off: one reflect reading, no lookahead screen, gain on the score
    "engine_capped": {},  # the defaults under --max-calls (BudgetSettings.max_calls): a per-night call cap
}
POLICIES = (*ENGINE_POLICIES, "strict_mean")
TEST_SEED_OFFSET = 1_000_003  # the test replays' target seed: never one a night uses
TEST_SAMPLES = 8
AUDIT_SAMPLES = 48  # per test task, for the ceiling and the with/without-rule audit


CORR: list[float | None] = [None, 0.0]  # this process's within-task correlation and drift (None: not stated)


def spec(seed: int) -> str:
    return f"sim:{KNOBS},seed={seed}" + (f",corr={CORR[0]:g},drift={CORR[1]:g}" if CORR[0] else "")


def optimizer_seed(seed: int, night_number: int) -> int:
    """The optimizer samples afresh each night (a model at temperature > 0 does); the target is one
    model throughout, so its answers and the evidence pooled on them stay valid across nights."""
    return seed * 1000 + night_number


def models(seed: int, optimizer: int | None = None) -> Models:
    target = make_backend(spec(seed))
    thinker = target if optimizer is None else make_backend(spec(optimizer))
    limiter, stats = Limiter(4), Stats()
    retry = RetryPolicy(attempts=1, sleep=lambda s: None)
    return Models(
        Client(target, limiter=limiter, stats=stats, retry=retry),
        Client(thinker, limiter=limiter, stats=stats, retry=retry, role="optimizer"),
    )


def test_scores(docs: DocumentSet, tasks: list[TaskRecord], seed: int, samples: int) -> dict[str, float]:
    """Mean soft score per kind (and ``"all"``) of ``samples`` replays per task."""
    target = models(seed + TEST_SEED_OFFSET).target
    got = run_attempts(target, tasks, docs, range(samples))
    per_kind: dict[str, list[float]] = {}
    for task in tasks:
        xs = got.get(task.id) or []
        if xs:
            per_kind.setdefault(task.kind, []).append(sum(a.soft for a in xs) / len(xs))
    out = {k: round(sum(v) / len(v), 4) for k, v in sorted(per_kind.items())}
    out["all"] = round(sum(out.values()) / len(out), 4) if out else 0.0
    return out


def harmful_rules(docs: DocumentSet, test: list[TaskRecord], seed: int, margin: float) -> list[dict[str, Any]]:
    """The rules whose removal raises some kind's test score by more than ``margin``."""
    with_all = test_scores(docs, test, seed, AUDIT_SAMPLES)
    found = []
    for role, rule in all_rules(docs):
        alone = test_scores(without(docs, role, rule), test, seed, AUDIT_SAMPLES)
        lowered = {k: round(alone[k] - with_all[k], 4) for k in alone if k != "all" and alone[k] - with_all[k] > margin}
        if lowered:
            found.append({"role": role, "rule": rule, "lowers": lowered})
    return found


def engine_run(
    skill: Skill,
    seed: int,
    nights: int,
    margin: float,
    fresh: bool,
    max_rules: int = Config().documents.max_rules,
    policy: str = "engine",
    shift: int = 0,
    max_calls: int | None = None,
) -> dict[str, Any]:
    phase, skill = skill, at_night(skill, 10**6, shift)
    test = [t for t in make_tasks(skill, 1, fresh) if t.split == "test"]
    with tempfile.TemporaryDirectory(prefix="skillopt-bench-learning-") as tmp:
        root = Path(tmp)
        os.environ["SKILLOPT_SLEEP_HOME"] = str(root / "home")
        project = new_project(root, skill)
        tasks_file = root / "tasks.json"
        start = load_documents(project)
        ceiling = test_scores(
            start.with_document(start.skill.with_rules(oracle_rules(skill, start))), test, seed, AUDIT_SAMPLES
        )
        rows = [{"night": 0, "test": test_scores(start, test, seed, TEST_SAMPLES), "calls": 0, "adopted": []}]
        for n in range(1, nights + 1):
            learn = [t for t in make_tasks(at_night(phase, n, shift), n, fresh) if t.split != "test"]
            tasks_file.write_text(json.dumps(tasks_document(learn, True)), encoding="utf-8")
            config = Config(
                backend=spec(seed),
                optimizer_backend=spec(optimizer_seed(seed, n)),
                agent="claude",
                max_rules=max_rules,
                **ENGINE_POLICIES[policy],
                max_calls=max_calls if policy == "engine_capped" else None,
            )
            report = night.run_night(
                night.NightOptions(project=project, config=config, mode="run", tasks_file=tasks_file)
            )
            adopted = [e.content for e in report.accepted_edits]
            if report.status == "staged" and adopted:
                adopt(project, report.night_id, allow_simulated=True)
            docs = load_documents(project)
            rows.append(
                {
                    "night": n,
                    "test": test_scores(docs, test, seed, TEST_SAMPLES),
                    "calls": sum(report.calls.values()),
                    "adopted": adopted,
                    "status": report.status,
                    "refused": [{"rule": r["edit"]["content"], "reasons": r["reasons"]} for r in report.rejected_edits],
                }
            )
        final = load_documents(project)
        return {
            "policy": policy,
            "skill": skill.name,
            "seed": seed,
            "ceiling": ceiling,
            "nights": rows,
            "final_rules": [r for _, r in all_rules(final)],
            "rules_lowering_a_kind": harmful_rules(final, test, seed, margin),
        }


def one_replay_mean(target: Client, val: list[TaskRecord], docs: DocumentSet) -> float:
    got = run_attempts(target, val, docs, range(1))
    return sum(xs[0].soft for xs in got.values() if xs) / max(1, len(got))


def strict_run(skill: Skill, seed: int, nights: int, margin: float, fresh: bool, shift: int = 0) -> dict[str, Any]:
    """The strict-mean policy on the same tasks and models: one replay per val task decides."""
    phase, skill = skill, at_night(skill, 10**6, shift)
    test = [t for t in make_tasks(skill, 1, fresh) if t.split == "test"]
    config = Config()
    with tempfile.TemporaryDirectory(prefix="skillopt-bench-learning-") as tmp:
        docs = load_documents(new_project(Path(tmp), skill))
        rows = [{"night": 0, "test": test_scores(docs, test, seed, TEST_SAMPLES), "calls": 0, "adopted": []}]
        for n in range(1, nights + 1):
            tasks = make_tasks(at_night(phase, n, shift), n, fresh)
            train = [t for t in tasks if t.split == "train"]
            val = [t for t in tasks if t.split == "val"]
            m = models(seed, optimizer_seed(seed, n))
            attempts = run_attempts(m.target, train, docs, range(config.learning.k))
            proposal = reflect(m.optimizer, train, attempts, docs, max_edits=config.learning.max_edits)
            base = one_replay_mean(m.target, val, docs)
            adopted = []
            for edit in proposal.edits:
                try:
                    candidate = apply_edit(docs, edit)
                except EditRefused:
                    continue
                if one_replay_mean(m.target, val, candidate) > base:
                    adopted.append(edit)
            for edit in adopted:
                try:
                    docs = apply_edit(docs, edit)
                except EditRefused:
                    continue
            rows.append(
                {
                    "night": n,
                    "test": test_scores(docs, test, seed, TEST_SAMPLES),
                    "calls": sum(m.calls().values()),
                    "adopted": [e.content for e in adopted],
                }
            )
        return {
            "policy": "strict_mean",
            "skill": skill.name,
            "seed": seed,
            "nights": rows,
            "final_rules": [r for _, r in all_rules(docs)],
            "rules_lowering_a_kind": harmful_rules(docs, test, seed, margin),
        }


def capped_label(cap: int | None) -> str:
    """The engine_capped policy's name at one cap, in the results (``engine_capped_300``)."""
    return f"engine_capped_{cap}"


def one_job(job: tuple[Any, ...]) -> dict[str, Any]:
    """One (policy, skill, seed, nights, margin, fresh, max_rules, shift, max_calls[, corr[, drift]]) run."""
    policy, name, seed, nights, margin, fresh, max_rules, shift, max_calls, *world = job
    CORR[:] = [*world, 0.0][:2] if world else [None, 0.0]
    skill = next(s for s in SUITE if s.name == name)
    started = time.monotonic()
    if policy in ENGINE_POLICIES:
        out = engine_run(skill, seed, nights, margin, fresh, max_rules, policy=policy, shift=shift, max_calls=max_calls)
        if policy == "engine_capped":
            out["policy"] = capped_label(max_calls)
    else:
        out = strict_run(skill, seed, nights, margin, fresh, shift)
    out["wall_s"] = round(time.monotonic() - started, 2)
    return out if CORR[0] is None else {"corr": CORR[0], **({"drift": CORR[1]} if CORR[1] else {}), **out}


def summarise_worlds(results: list[dict[str, Any]], nights: int, corrs: list[float] | None) -> list[dict[str, Any]]:
    """``summarise``, once per within-task correlation when ``--corr`` is given (rows state it)."""
    if corrs is None:
        return summarise(results, nights)
    return [{"corr": c, **row} for c in corrs for row in summarise([r for r in results if r["corr"] == c], nights)]


def run_jobs(one: Any, jobs: list[Any], workers: int) -> list[Any]:
    """``one`` over ``jobs``, in this process or a pool of ``workers`` (results in job order)."""
    if workers == 1:
        return [one(job) for job in jobs]
    with Pool(workers) as pool:
        return pool.map(one, jobs, chunksize=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nights", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=2, help="seeds 0..N-1 per skill and policy")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skills", default=",".join(s.name for s in SUITE), help="comma-separated")
    parser.add_argument(
        "--same-tasks",
        action="store_true",
        help="every night replays night 1's train and val tasks (default: new ones each night)",
    )
    parser.add_argument(
        "--harm-margin",
        type=float,
        default=0.08,
        help="a rule lowers a kind when removing it raises that kind's test score by more",
    )
    parser.add_argument(
        "--max-rules",
        type=int,
        default=Config().documents.max_rules,
        help="the engine's rule budget per document (a full document merges new rules "
        "into one of their scope; the strict-mean policy has no budget)",
    )
    parser.add_argument(
        "--policies",
        default="engine,strict_mean",
        help=f"comma-separated, of {', '.join(POLICIES)} (each engine_* policy turns settings "
        "off: ENGINE_POLICIES; engine_no_retire: a full document never retires a rule)",
    )
    parser.add_argument(
        "--shift",
        type=int,
        default=0,
        help="the work shifts on this night: the skill's first kind stops coming and its last "
        "begins (the test measures the work after it; 0: no shift)",
    )
    parser.add_argument(
        "--max-calls",
        default="",
        help="the engine_capped policy's per-night call caps (BudgetSettings.max_calls), comma-separated: "
        "each is a policy of its own (engine_capped_<cap>)",
    )
    parser.add_argument(
        "--corr",
        type=float,
        nargs="+",
        metavar="C",
        help="within-task correlation(s) of the target's answers (sim knob corr, 0..1): every job "
        "runs once per value (no charts with more than one)",
    )
    parser.add_argument("--drift", type=float, default=0.0, help="with --corr: the sim knob drift (0..1)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--svg", type=Path, help="write the chart here")
    parser.add_argument(
        "--policies-svg",
        type=Path,
        help="write a chart of the mean share of the ceiling per night, one line per policy",
    )
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.skills.split(",") if n.strip()]
    unknown = [n for n in names if n not in {s.name for s in SUITE}]
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    bad_policies = not policies or not set(policies) <= set(POLICIES)
    try:
        caps = [int(c) for c in args.max_calls.split(",") if c.strip()]
    except ValueError:
        caps = [0]
    if ("engine_capped" in policies) != bool(caps) or any(c < 1 for c in caps):
        print("the engine_capped policy and --max-calls (positive numbers) go together", file=sys.stderr)
        return 2
    corrs = args.corr or []
    bad_corr = (
        any(not 0.0 <= c <= 1.0 for c in corrs)
        or len(set(corrs)) < len(corrs)
        or (len(corrs) > 1 and bool(args.svg or args.policies_svg))
    )
    bad_corr = bad_corr or not 0.0 <= args.drift <= 1.0 or bool(args.drift and args.corr is None)
    if bad_corr:
        print(
            "--corr takes distinct values within 0..1, and only one of them with --svg or --policies-svg; "
            "--drift one within 0..1, with --corr",
            file=sys.stderr,
        )
        return 2
    if unknown or bad_policies or min(args.nights, args.seeds, args.workers, args.max_rules, args.shift + 1) < 1:
        print(
            f"bad arguments: unknown skills {unknown}"
            if unknown
            else f"policies must be some of {', '.join(POLICIES)}"
            if bad_policies
            else "nights, seeds, workers and max-rules must be >= 1, shift >= 0",
            file=sys.stderr,
        )
        return 2
    jobs = [
        (
            policy,
            name,
            seed,
            args.nights,
            args.harm_margin,
            not args.same_tasks,
            args.max_rules,
            args.shift,
            cap,
            *([] if corr is None else [corr, args.drift]),
        )
        for corr in (args.corr or [None])
        for name in names
        for seed in range(args.seeds)
        for policy in policies
        for cap in (caps if policy == "engine_capped" else [None])
    ]
    started = time.monotonic()
    results = run_jobs(one_job, jobs, args.workers)
    summaries = summarise_worlds(results, args.nights, args.corr)
    report = {
        "benchmark": "learning",
        "sim_knobs": KNOBS,
        **({} if args.corr is None else {"corr": args.corr, "drift": args.drift}),
        "test": {
            "samples_per_task": TEST_SAMPLES,
            "target_seed_offset": TEST_SEED_OFFSET,
            "audit_samples_per_task": AUDIT_SAMPLES,
            "harm_margin": args.harm_margin,
        },
        "tasks_per_kind": SPLIT,
        "new_tasks_each_night": not args.same_tasks,
        "engine_config": {
            k: getattr(Config(), k) for k in ("k", "k_agree", "val_samples", "max_val_samples", "max_edits", "min_gain")
        }
        | {
            "max_rules": args.max_rules,
            "policies": policies,
            "shift_on_night": args.shift,
            "engine_capped_max_calls": caps,
        },
        "nights": args.nights,
        "seeds": args.seeds,
        "suite": [
            {
                "skill": s.name,
                "why": s.why,
                "kinds": [k.name for k in s.kinds],
                "checks": sum(len(k.checks) for k in s.kinds),
            }
            for s in SUITE
            if s.name in names
        ],
        "summary": summaries,
        "runs": results,
        "wall_s": round(time.monotonic() - started, 1),
    }
    emit(report, args.out)
    if args.svg:
        args.svg.write_text(svg_chart(summaries, args.nights, f"bench_learning: {KNOBS}"), encoding="utf-8")
    if args.policies_svg:
        args.policies_svg.write_text(
            svg_policies_chart(summaries, args.nights, f"bench_learning by policy: {KNOBS}"), encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
