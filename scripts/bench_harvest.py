#!/usr/bin/env python3
"""Benchmark the harvest against the reference engine, on three corpus shapes. Prints one JSON object.

For each shape (``scripts/harvest_corpora.py``): ``small`` = many small records (generated);
``recurring`` = a heavy history: the small records' traffic in 24 projects, in short sessions that
keep asking the same kinds of work and complaining the same way (what mining finds tasks in); and
``real`` = copies of the genuine Claude Code 2.1 / Codex 0.169 sessions in tests/fixtures/real/
(few, large records), about ``--mb`` MB each:

1. This engine's full harvest of both sources with redaction on and a state dir (what a first
   night does), in a fresh child process so peak RSS is the harvester's own (self + workers).
2. The reference engine's reader — pip package ``skillopt`` 0.2.0, whose package is also named
   ``skillopt_sleep``, so it runs in its own virtualenv (built once, cached under
   ``~/.cache/skillopt-sleep-bench/``) in a child process. It reads every ``.jsonl`` under the
   Claude projects dir with ``digest_transcript`` and every Codex rollout with
   ``digest_codex_archived_session``, as its ``harvest`` / ``harvest_codex`` do. A file it stops
   on (invalid UTF-8, a line that is not a JSON object) is counted in ``failed_files``; it is not
   patched. MB/s for both engines = corpus bytes / seconds.
3. Mining: in the child, ``harvest`` (read) then ``mine_by_project`` (what ``harvest --json``
   does after reading) timed apart; and ``skillopt-sleep harvest --json --all-projects`` end to
   end as a command.
4. (``small`` and ``recurring``) appends ~1 % new data and measures the incremental harvest.

``--repeat N`` runs each engine's read N times (alternating) and reports the fastest.
``speedup_vs_reference`` compares wall-clock seconds (this engine reads files in parallel, the
reference in one process); ``cpu_time_ratio`` compares CPU seconds (workers included), which
moves less with the load of a shared machine.

The engine measured is the one ``skillopt_sleep`` imports; an older one (e.g. ``git archive <rev>
skillopt_sleep | tar -x -C /tmp/old``) is measured with ``PYTHONPATH=/tmp/old``. The report names the
command, the engine's commit and the load average (the machine's load moves wall times more than
anything measured here). Results: docs/bench/harvest.json (figures in docs/benchmarks.md).

Usage: python scripts/bench_harvest.py [--mb 300] [--seed 7] [--shapes small,recurring,real] [--repeat 1]
                                       [--no-reference] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harvest_corpora import RealClientCorpus, RecurringCorpus, SmallRecordCorpus  # noqa: E402

REFERENCE = "skillopt==0.2.0"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "skillopt-sleep-bench"
CHILD_TIMEOUT = 1800

# Run by the reference engine's interpreter (``-I``: nothing of ours on its path).
REFERENCE_READER = r"""
import json, os, sys, time
from skillopt_sleep.harvest import digest_transcript
from skillopt_sleep.harvest_codex import digest_codex_archived_session

claude, codex = sys.argv[1], sys.argv[2]
jobs = []
for root, _dirs, files in os.walk(os.path.join(claude, "projects")):
    jobs += [(digest_transcript, os.path.join(root, f)) for f in files if f.endswith(".jsonl")]
for root, _dirs, files in os.walk(codex):
    jobs += [(digest_codex_archived_session, os.path.join(root, f)) for f in files if f.endswith(".jsonl")]
failed, sessions, errors = 0, 0, {}
t0, c0 = time.perf_counter(), time.process_time()
for read, path in jobs:
    try:
        digest = read(path)
    except Exception as exc:
        failed += 1
        errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
        continue
    sessions += digest is not None
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "files": len(jobs), "failed_files": failed, "errors": errors,
                  "sessions": sessions}))
"""


def reference_python() -> Path:
    """The reference engine's interpreter, in a virtualenv built on first use."""
    venv = CACHE / "ref-skillopt-0.2.0"
    python = venv / "bin" / "python"
    marker = venv / ".installed"
    if not marker.exists():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        subprocess.run([str(python), "-m", "pip", "install", "-q", REFERENCE], check=True, timeout=900)
        marker.write_text(REFERENCE + "\n")
    return python


def run_reference(python: Path, root: Path) -> dict:
    out = subprocess.run(
        [str(python), "-I", "-c", REFERENCE_READER, str(root / "claude"), str(root / "codex")],
        check=True,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        cwd=root,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(root: Path, phase: str, mine: bool) -> None:
    """Child process: full harvest + commit (+ mining), then print timings and peak RSS."""
    from skillopt_sleep.commands.harvest import mine_by_project
    from skillopt_sleep.config import load_config
    from skillopt_sleep.sources import harvest

    state = root / f"state-{phase}"
    c0 = cpu_seconds()
    t0 = time.perf_counter()
    result = harvest(
        None, all_projects=True, source="all", claude_home=root / "claude", codex_home=root / "codex", state_dir=state
    )
    t1 = time.perf_counter()
    cpu = cpu_seconds() - c0
    result.commit()
    t2 = time.perf_counter()
    mining = None
    if mine:
        c2 = time.process_time()
        tasks, _counts = mine_by_project(result.digests, load_config(root, {}).harvest)
        mining = {
            "seconds": round(time.perf_counter() - t2, 3),
            "cpu_seconds": round(time.process_time() - c2, 3),
            "tasks": len(tasks),
            "projects": len({d.project for d in result.digests}),
        }
    rss = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    print(
        json.dumps(
            {
                "phase": phase,
                "seconds": round(t1 - t0, 3),
                "cpu_seconds": round(cpu, 3),
                "commit_seconds": round(t2 - t1, 3),
                "bytes_read": result.bytes_read,
                "files_read": result.files_read,
                "sessions": len(result.digests),
                "new_sessions": len(result.new_session_ids),
                "skipped": result.skipped,
                "mining": mining,
                "peak_rss_mb_self": round(rss[0] / 1024, 1),
                "peak_rss_mb_workers": round(rss[1] / 1024, 1),
            }
        )
    )


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the harvest's workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def child_env(root: Path) -> dict[str, str]:
    home = root / "home"
    home.mkdir(exist_ok=True)
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
    }


def run_child(root: Path, phase: str, mine: bool = False) -> dict:
    command = [sys.executable, __file__, "--measure", str(root), phase] + (["--mine"] if mine else [])
    out = subprocess.run(
        command, check=True, capture_output=True, text=True, timeout=CHILD_TIMEOUT, env=child_env(root), cwd=root
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_command(root: Path) -> float:
    """``skillopt-sleep harvest --json --all-projects`` end to end (output discarded)."""
    command = [
        sys.executable,
        "-m",
        "skillopt_sleep",
        "harvest",
        "--json",
        "--all-projects",
        "--quiet",
        "--source",
        "all",
        "--claude-home",
        str(root / "claude"),
        "--codex-home",
        str(root / "codex"),
    ]
    t0 = time.perf_counter()
    subprocess.run(
        command,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=CHILD_TIMEOUT,
        env=child_env(root),
        cwd=root,
    )
    return round(time.perf_counter() - t0, 3)


def mining_report(root: Path, first: dict) -> dict:
    """Mining inside a harvest: ``mine_by_project`` timed right after the first full read in the same
    child (wall and CPU seconds), and ``harvest --json --all-projects`` end to end as a command;
    ``command_beyond_read_seconds`` is the command's time minus that read's."""
    command = run_command(root)
    return {
        "read_seconds": first["seconds"],
        "mine_seconds": first["mining"]["seconds"],
        "mine_cpu_seconds": first["mining"]["cpu_seconds"],
        "sessions": first["sessions"],
        "projects": first["mining"]["projects"],
        "tasks": first["mining"]["tasks"],
        "harvest_json_all_projects_seconds": command,
        "command_beyond_read_seconds": round(command - first["seconds"], 3),
    }


def mb_per_s(total: int, seconds: float) -> float:
    return round(total / 1e6 / seconds, 1) if seconds > 0 else float("inf")


def bench_shape(name: str, root: Path, args: argparse.Namespace, reference: Path | None) -> dict:
    shapes = {"small": SmallRecordCorpus, "recurring": RecurringCorpus, "real": RealClientCorpus}
    corpus = shapes[name](root, args.seed)
    t0 = time.perf_counter()
    corpus.generate(int(args.mb * 1e6))
    generated = time.perf_counter() - t0
    total = corpus.bytes
    n_files = sum(1 for _ in root.rglob("*.jsonl"))
    ours: list[dict] = []
    theirs: list[dict] = []
    for attempt in range(args.repeat):
        ours.append(run_child(root, f"full{attempt}", mine=attempt == 0))
        if reference is not None:
            theirs.append(run_reference(reference, root))
    best = min(ours, key=lambda r: r["seconds"])
    report: dict = {
        "corpus_mb": round(total / 1e6, 1),
        "files": n_files,
        "lines": corpus.lines,
        "generate_seconds": round(generated, 1),
        "this_engine": {
            "seconds": best["seconds"],
            "mb_per_s": mb_per_s(total, best["seconds"]),
            "cpu_seconds": best["cpu_seconds"],
            "cpu_mb_per_s": mb_per_s(total, best["cpu_seconds"]),
            "all_seconds": [r["seconds"] for r in ours],
            "commit_seconds": best["commit_seconds"],
            "files_read": best["files_read"],
            "sessions": best["sessions"],
            "skipped": best["skipped"],
            "peak_rss_mb": {"harvester": best["peak_rss_mb_self"], "worker_max": best["peak_rss_mb_workers"]},
        },
    }
    if isinstance(corpus, SmallRecordCorpus):
        report["malformed_lines_planted"] = corpus.malformed
        report["unreadable_lines_planted"] = corpus.unreadable
    else:
        report["copies_of_the_real_sessions"] = corpus.copies
    if theirs:
        fastest = min(theirs, key=lambda r: r["seconds"])
        report["reference"] = {
            "seconds": round(fastest["seconds"], 3),
            "mb_per_s": mb_per_s(total, fastest["seconds"]),
            "cpu_seconds": round(fastest["cpu_seconds"], 3),
            "cpu_mb_per_s": mb_per_s(total, fastest["cpu_seconds"]),
            "all_seconds": [round(r["seconds"], 3) for r in theirs],
            "files": fastest["files"],
            "failed_files": fastest["failed_files"],
            "errors": fastest["errors"],
            "sessions": fastest["sessions"],
        }
        report["speedup_vs_reference"] = round(fastest["seconds"] / best["seconds"], 2)
        report["cpu_time_ratio"] = round(fastest["cpu_seconds"] / best["cpu_seconds"], 2)
    report["mining"] = mining_report(root, ours[0])
    if isinstance(corpus, SmallRecordCorpus):
        corpus.append_new(int(total * 0.01))
        appended = corpus.bytes - total
        shutil.copytree(root / "state-full0", root / "state-incremental")
        inc = run_child(root, "incremental")
        report["incremental"] = {
            "appended_bytes": appended,
            "bytes_read": inc["bytes_read"],
            "fraction_of_corpus": round(inc["bytes_read"] / total, 4),
            "seconds": inc["seconds"],
            "commit_seconds": inc["commit_seconds"],
            "files_read": inc["files_read"],
            "new_sessions": inc["new_sessions"],
        }
    return report


def main() -> int:
    if "--measure" in sys.argv:
        at = sys.argv.index("--measure")
        measure(Path(sys.argv[at + 1]), sys.argv[at + 2], "--mine" in sys.argv)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=300.0, help="size of each corpus in MB (default 300)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--shapes", default="small,recurring,real", help="comma-separated: small, recurring, real")
    parser.add_argument("--repeat", type=int, default=1, help="reads per engine; the fastest is reported")
    parser.add_argument("--no-reference", action="store_true", help="skip the reference engine")
    parser.add_argument("--keep", type=Path, help="generate into this dir and keep it")
    args = parser.parse_args()
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    unknown = sorted(set(shapes) - {"small", "recurring", "real"})
    if unknown:
        parser.error(f"unknown shape(s): {', '.join(unknown)}")
    reference = None if args.no_reference else reference_python()
    base = args.keep or Path(tempfile.mkdtemp(prefix="skillopt-bench-harvest-"))
    report: dict = {
        "command": " ".join(["python", "scripts/bench_harvest.py", *sys.argv[1:]]),
        "commit": engine_commit(),
        "cpu_count": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "reference": None if reference is None else REFERENCE,
    }
    try:
        for shape in shapes:
            root = base / shape
            root.mkdir(parents=True, exist_ok=True)
            report[shape] = bench_shape(shape, root, args, reference)
            if args.keep is None:
                shutil.rmtree(root, ignore_errors=True)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=2))
    return 0


def engine_commit() -> str | None:
    """The commit of the engine measured (``+dirty`` when its files differ from it), if it is a git checkout."""
    import skillopt_sleep

    repo = Path(skillopt_sleep.__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--", "skillopt_sleep"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


if __name__ == "__main__":
    sys.exit(main())
