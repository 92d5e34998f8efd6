"""Crash and race bench for adoption: kill -9 at random moments, race two adopts, check the files.

Kill trials (``--trials`` each):
- ``adopt``: a staged two-file proposal (CLAUDE.md edited, a new SKILL.md) is adopted by
  ``skillopt-sleep adopt`` and the process is killed with SIGKILL. A third of the trials run
  plainly, killed at a uniformly random time within the duration of an unkilled run (so these land
  mostly in start-up). A third run with the test hook that pauses between the two live writes
  (``SKILLOPT_TEST_ADOPT_PAUSE``, random 0.05–0.5 s) and a third under ``strace -e
  inject=fsync:delay_exit=200000`` (every fsync takes 200 ms longer); these are aimed at adopt's
  writes: the bench waits until adopt has begun writing (its undo backups appear), then kills at a
  uniformly random time within the write window of unkilled runs in that mode (``--aim uniform``:
  over the whole run instead, as the plain trials). Where each kill landed is read from the files
  right after it (``crash_landing.py``: before-write, inside-write, after-write, finished) and
  counted (``landed``, ``landed_inside_adopt``).
- ``run``: ``skillopt-sleep run --auto-adopt`` (sim backend, a reviewed tasks file, a temp project
  and home), killed the same way: plainly, under the slow fsync, or ("late", slow fsync too) at a
  random time within 2 s of the night starting to stage, so kills also land in staging, the
  auto-adopt and the history write rather than mostly in the learning before them.

After each kill the next command (``status``, ``adopt`` or ``revert``, chosen at random; after
``status``, an ``adopt``) runs, and the trial checks:
- consistent: every document is in its old state or every one in its new state, the ledger says an
  adoption is in effect exactly when they are new, no journal and no debris (temp files, half
  staged proposals, evidence logs in the project or in TMPDIR) are left;
- recoverable: a revert then an adopt (or an adopt then a revert) both succeed and leave the
  documents in the expected state (a run killed before staging: the next run succeeds instead).
No command may exit 1 (internal error) or print a traceback.

Race trials (``--race-trials`` each): two ``adopt`` processes started together for different
nights, and for the same night; exactly one must succeed and the other exit 6 or 7 with one line.

Prints one JSON object. ``--workers`` trials run at a time (default 2).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skillopt_sleep.staging import adoption_journal as journal  # noqa: E402
from skillopt_sleep.staging.adoption import adoptions, list_proposals  # noqa: E402
from skillopt_sleep.files import TEMP_NAME, sha256_bytes  # noqa: E402
from skillopt_sleep.paths import project_dirs  # noqa: E402
from tests.support.tasks import make_tasks, write_tasks_file  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crash_landing import LANDINGS, began_writing, landing, write_window  # noqa: E402
from crash_trial import (  # noqa: E402
    COMMAND_TIMEOUT,
    FSYNC_DELAY_US,
    MEMORY_NEW,
    MEMORY_OLD,
    SKILL_NEW,
    Trial,
    launch,
    run_killed,
)

SIM = "sim:correct=1,harmful=0,seed={seed}"
LATE_WINDOW = 2.0  # "late" run trials: kill within this many seconds of staging starting (slow fsync)


def calibrate_writes(mode: str, runs: int = 3) -> float:
    """Median seconds of adopt's writes in unkilled runs of ``mode`` (the window aimed kills are
    drawn from; ``crash_landing.write_window``)."""
    windows = []
    for _ in range(runs):
        trial = Trial.make()
        try:
            trial.stage_two_files("night-1")
            proc, _pid = launch(trial, ["adopt"], mode, 0.25 if mode == "pause" else None)
            windows.append(write_window(proc, trial.project, COMMAND_TIMEOUT))
            proc.wait(timeout=COMMAND_TIMEOUT)
        finally:
            trial.cleanup()
    return sorted(windows)[len(windows) // 2]


def calibrate(make_trial: Any, args_for: Any, mode: str, runs: int = 3) -> float:
    """Median wall time of an unkilled command in this mode (sets the kill-time range)."""
    times = []
    for index in range(runs):
        trial = make_trial(index)
        try:
            started = time.monotonic()
            proc, _pid = launch(trial, args_for(trial, index), mode, 0.25 if mode == "pause" else None)
            proc.wait(timeout=COMMAND_TIMEOUT)
            times.append(time.monotonic() - started)
        finally:
            trial.cleanup()
    return sorted(times)[len(times) // 2]


# --------------------------------------------------------------------------- checking


def live_state(trial: Trial, files: dict[str, tuple[str | None, str | None]]) -> str:
    """ "old", "new" or "mixed" for ``{path: (old sha or None, new sha or None)}``."""
    sides = set()
    for path, (old, new) in files.items():
        data = Path(path).read_bytes() if Path(path).exists() else None
        sha = None if data is None else sha256_bytes(data)
        sides.add("old" if sha == old else "new" if sha == new else "other")
    return sides.pop() if len(sides) == 1 else "mixed"


def debris(trial: Trial) -> list[str]:
    found = [str(p) for p in trial.tmp.iterdir()]
    dirs = project_dirs(trial.project)
    found += [str(p) for p in trial.project.rglob("*") if TEMP_NAME.match(p.name)]
    if dirs.staging.is_dir():
        found += [str(p) for p in dirs.staging.iterdir() if p.name.startswith(".tmp-")]
    if dirs.tmp.is_dir():
        found += [str(p) for p in dirs.tmp.iterdir()]
    return found


def in_effect(trial: Trial) -> bool:
    return any(not a["reverted"] for a in adoptions(trial.project))


def bad_exit(code: int, stderr: str, allowed: set[int]) -> str | None:
    if code not in allowed:
        return f"exit {code}: {stderr.strip()[-300:]}"
    if "Traceback" in stderr:
        return f"traceback: {stderr.strip()[-300:]}"
    return None


@dataclass
class Outcome:
    mode: str
    after_kill: str
    next_command: str
    consistent: bool
    recoverable: bool
    problems: list[str] = field(default_factory=list)
    landed: str = ""  # adopt trials: crash_landing.landing


def consistency_problems(trial: Trial, files: dict[str, tuple[str | None, str | None]]) -> list[str]:
    """Why the project is not consistent (empty when it is). ``files`` empty: nothing staged, so
    the documents must be untouched and no adoption recorded."""
    if files:
        state = live_state(trial, files)
    else:
        memory = trial.project / "CLAUDE.md"
        untouched = memory.read_bytes() == MEMORY_OLD and not trial.skill.exists()
        state = "old" if untouched else "changed without a proposal"
    pending = journal.pending(trial.project)
    if pending is None and state in ("old", "new") and (state == "new") == in_effect(trial) and not debris(trial):
        return []
    return [f"inconsistent: files {state}, in effect {in_effect(trial)}, journal {pending}, debris {debris(trial)[:3]}"]


def after_kill_state(trial: Trial, files: dict[str, tuple[str | None, str | None]], finished: bool) -> str:
    if finished:
        return "finished before the kill"
    if journal.pending(trial.project) is not None:
        return "killed mid-operation (journal pending)"
    return f"killed with files {live_state(trial, files)}" if files else "killed before staging"


def next_and_check(
    trial: Trial, files_of: Any, rng: random.Random, rerun: list[str] | None
) -> tuple[str, bool, bool, list[str]]:
    """The next command, then the consistency and recoverability checks."""
    problems = []
    command = rng.choice(["status", "adopt", "revert"])
    pending_before = journal.pending(trial.project) is not None
    code, out, err = trial.run(command)
    problem = bad_exit(code, err, {0} if command == "status" else {0, 6})
    if problem:
        problems.append(f"{command}: {problem}")
    if command == "status":
        if pending_before != ("interrupted" in out):
            problems.append(
                "status did not report the pending journal"
                if pending_before
                else "status reported an interruption that was not there"
            )
        code, out, err = trial.run("adopt")  # the command that takes the lock and recovers
        problem = bad_exit(code, err, {0, 6})
        if problem:
            problems.append(f"adopt after status: {problem}")
    files = files_of()
    problems += consistency_problems(trial, files)
    consistent = not problems
    recoverable = True
    if not files:  # killed before it staged anything: the next night must simply work
        code, _out, err = trial.run(*rerun) if rerun else (0, "", "")
        again = [f"rerun: {bad_exit(code, err, {0})}"] if bad_exit(code, err, {0}) else []
        again += consistency_problems(trial, files_of())
        problems += again
        return command, consistent, not again, problems
    state = live_state(trial, files)
    order = [("revert", "old"), ("adopt", "new")] if state == "new" else [("adopt", "new"), ("revert", "old")]
    for verb, expected in order:
        code, _out, err = trial.run(verb)
        got = live_state(trial, files)
        if code != 0 or got != expected or debris(trial):
            recoverable = False
            problems.append(f"recovery {verb}: exit {code}, files {got}: {err.strip()[-200:]}")
            break
    return command, consistent, recoverable, problems


# --------------------------------------------------------------------------- kill trials


def adopt_files(trial: Trial) -> dict[str, tuple[str | None, str | None]]:
    return {
        str(trial.project / "CLAUDE.md"): (sha256_bytes(MEMORY_OLD), sha256_bytes(MEMORY_NEW)),
        str(trial.skill): (None, sha256_bytes(SKILL_NEW)),
    }


def night_files(trial: Trial, old: dict[str, str | None]) -> dict[str, tuple[str | None, str | None]]:
    """The files of the night's staged proposal: (old sha, proposed sha); {} when none staged."""
    proposals = [p for p in list_proposals(trial.project) if p["files"]]
    if not proposals:
        return {}
    return {f["live_path"]: (old.get(f["live_path"]), f["proposed_sha256"]) for f in proposals[0]["files"]}


def adopt_trial(index: int, mode: str, duration: float, seed: int, window: float | None = None) -> Outcome:
    """``window``: seconds of adopt's writes in this mode; kill within them, counted from the
    moment adopt begins writing (None: within ``duration`` from the start)."""
    rng = random.Random(seed * 1_000_003 + index)
    trial = Trial.make()
    try:
        trial.stage_two_files("night-1")
        pause = rng.uniform(0.05, 0.5) if mode == "pause" else None
        stretch = (pause or 0.0) - (0.25 if mode == "pause" else 0.0)  # calibrated with a 0.25 s pause
        if window is None:
            finished = run_killed(trial, ["adopt"], mode, pause, rng.uniform(0, duration + stretch))
        else:
            finished = run_killed(
                trial,
                ["adopt"],
                mode,
                pause,
                rng.uniform(0, window + stretch),
                once=lambda: began_writing(trial.project),
            )
        landed = landing(trial.project, finished)
        after = after_kill_state(trial, adopt_files(trial), finished)
        command, consistent, recoverable, problems = next_and_check(trial, lambda: adopt_files(trial), rng, None)
        return Outcome(mode, after, command, consistent, recoverable, problems, landed)
    finally:
        trial.cleanup()


def run_trial(index: int, mode: str, duration: float, seed: int, tasks_file: Path) -> Outcome:
    rng = random.Random(seed * 1_000_003 + index)
    trial = Trial.make()
    try:
        old = {str(trial.project / "CLAUDE.md"): sha256_bytes(MEMORY_OLD), str(trial.skill): None}
        args = ["run", "--tasks-file", str(tasks_file), "--backend", SIM.format(seed=index), "--auto-adopt", "--quiet"]
        if mode == "late":  # from the moment the night starts staging, so kills land in staging,
            # auto-adopt and the history write, not only in the long learning phase before them
            staging = project_dirs(trial.project).staging
            finished = run_killed(
                trial,
                args,
                "strace",
                None,
                rng.uniform(0, duration),
                once=lambda: staging.is_dir() and any(staging.iterdir()),
            )
        else:
            finished = run_killed(trial, args, mode, None, rng.uniform(0, duration))
        after = after_kill_state(trial, night_files(trial, old), finished)
        command, consistent, recoverable, problems = next_and_check(trial, lambda: night_files(trial, old), rng, args)
        return Outcome(mode, after, command, consistent, recoverable, problems)
    finally:
        trial.cleanup()


def summarize(outcomes: list[Outcome], wall: float, durations: dict[str, float]) -> dict[str, Any]:
    return {
        "trials": len(outcomes),
        "consistent": sum(o.consistent for o in outcomes),
        "recoverable": sum(o.recoverable for o in outcomes),
        "consistent_pct": round(100.0 * sum(o.consistent for o in outcomes) / max(1, len(outcomes)), 2),
        "recoverable_pct": round(100.0 * sum(o.recoverable for o in outcomes) / max(1, len(outcomes)), 2),
        "by_mode": dict(Counter(o.mode for o in outcomes)),
        "after_kill": dict(Counter(o.after_kill for o in outcomes)),
        **(_landings(outcomes) if any(o.landed for o in outcomes) else {}),
        "next_command": dict(Counter(o.next_command for o in outcomes)),
        "unkilled_seconds_by_mode": {k: round(v, 3) for k, v in durations.items()},
        "failures": [o.__dict__ for o in outcomes if o.problems][:5],
        "wall_seconds": round(wall, 1),
    }


def _landings(outcomes: list[Outcome]) -> dict[str, Any]:
    """Where the kills of adopt trials landed, overall and by mode (``crash_landing``)."""
    by_mode: dict[str, dict[str, int]] = {}
    for o in outcomes:
        by_mode.setdefault(o.mode, dict.fromkeys(LANDINGS, 0))[o.landed] += 1
    return {
        "landed_inside_adopt": sum(o.landed == "inside-write" for o in outcomes),
        "landed": {name: sum(o.landed == name for o in outcomes) for name in LANDINGS},
        "landed_by_mode": by_mode,
    }


# --------------------------------------------------------------------------- races


def race_trial(index: int, same_night: bool, seed: int) -> dict[str, Any]:
    rng = random.Random(seed * 7_919 + index)
    trial = Trial.make()
    try:
        trial.stage_two_files("night-1")
        trial.stage_two_files("night-2", memory_new=MEMORY_OLD + b"- second night\n")
        nights = ["night-1", "night-1"] if same_night else ["night-1", "night-2"]
        pause = rng.choice([None, 0.2])
        procs = [
            subprocess.Popen(
                trial.cli("adopt", "--night", night),
                env=trial.env(pause),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for night in nights
        ]
        errors = [p.communicate(timeout=COMMAND_TIMEOUT)[1] for p in procs]  # waits: returncode is set after
        results = [(p.returncode, err) for p, err in zip(procs, errors, strict=True)]
        codes = sorted(code for code, _ in results)
        loser = [err for code, err in results if code != 0]
        groups = adoptions(trial.project)
        ok = (
            codes[0] == 0
            and codes[1] in (6, 7)
            and len(loser) == 1
            and loser[0].count("\n") == 1
            and "Traceback" not in loser[0]
            and len(groups) == 1
        )
        return {"ok": ok, "codes": codes, "loser": loser[0].strip() if loser else "", "paused": pause is not None}
    finally:
        trial.cleanup()


def summarize_races(results: list[dict[str, Any]], wall: float) -> dict[str, Any]:
    return {
        "trials": len(results),
        "exactly_one_succeeded": sum(r["ok"] for r in results),
        "loser_exit_codes": dict(Counter(str(r["codes"][1]) for r in results)),
        "loser_lines": sorted(
            {r["loser"].split(":")[1].strip()[:60] if ":" in r["loser"] else r["loser"] for r in results}
        )[:4],
        "failures": [r for r in results if not r["ok"]][:5],
        "wall_seconds": round(wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=100, help="kill trials of adopt and of run each")
    parser.add_argument("--race-trials", type=int, default=20, help="race trials of each kind")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=("adopt", "run", "race"), help="one scenario only")
    parser.add_argument(
        "--aim",
        choices=("writes", "uniform"),
        default="writes",
        help="adopt trials in pause and strace mode: kill within adopt's writes (default) or anywhere in the run",
    )
    args = parser.parse_args(argv)
    if shutil.which("strace") is None:
        print("bench_crash: strace is not installed (apt-get install strace)", file=sys.stderr)
        return 2
    # The bench's own state (the key it stages with) in a private home, never the user's.
    bench_home = tempfile.mkdtemp(prefix="bench-crash-home-")
    os.environ["SKILLOPT_SLEEP_HOME"] = bench_home
    try:
        return _bench(args)
    finally:
        shutil.rmtree(bench_home, ignore_errors=True)


def _bench(args: argparse.Namespace) -> int:
    results: dict[str, Any] = {
        "seed": args.seed,
        "workers": args.workers,
        "fsync_delay_us_under_strace": FSYNC_DELAY_US,
    }
    pool = ThreadPoolExecutor(args.workers)

    if args.only in (None, "adopt"):

        def staged(_index: int) -> Trial:
            trial = Trial.make()
            trial.stage_two_files("night-1")
            return trial

        modes = ["plain", "pause", "strace"]
        durations = {m: calibrate(staged, lambda _t, _i: ["adopt"], m) for m in modes}
        aimed = ("pause", "strace") if args.aim == "writes" else ()
        windows = {m: calibrate_writes(m) for m in aimed}
        started = time.monotonic()
        outcomes = list(
            pool.map(
                lambda i: adopt_trial(i, modes[i % 3], durations[modes[i % 3]], args.seed, windows.get(modes[i % 3])),
                range(args.trials),
            )
        )
        results["adopt"] = summarize(outcomes, time.monotonic() - started, durations)
        results["adopt"]["aim"] = {
            m: "within adopt's writes" if m in windows else "uniform over the run" for m in modes
        }
        results["adopt"]["write_window_seconds_by_mode"] = {k: round(v, 3) for k, v in windows.items()}

    if args.only in (None, "run"):
        with tempfile.TemporaryDirectory(prefix="bench-crash-tasks-") as tasks_dir:
            tasks_file = write_tasks_file(Path(tasks_dir) / "tasks.json", make_tasks())
            modes = ["plain", "strace", "late"]
            night = ["run", "--tasks-file", str(tasks_file), "--backend", SIM.format(seed=0), "--auto-adopt", "--quiet"]
            durations = {m: calibrate(lambda _i: Trial.make(), lambda _t, _i: night, m) for m in modes[:2]}
            durations["late"] = LATE_WINDOW
            started = time.monotonic()
            outcomes = list(
                pool.map(
                    lambda i: run_trial(i, modes[i % 3], durations[modes[i % 3]], args.seed, tasks_file),
                    range(args.trials),
                )
            )
            results["run_auto_adopt"] = summarize(outcomes, time.monotonic() - started, durations)

    if args.only in (None, "race"):
        for key, same in (("race_different_nights", False), ("race_same_night", True)):
            started = time.monotonic()
            races = list(pool.map(lambda i, s=same: race_trial(i, s, args.seed), range(args.race_trials)))
            results[key] = summarize_races(races, time.monotonic() - started)
    pool.shutdown()

    checks = [
        results[k]["consistent"] == results[k]["trials"] == results[k]["recoverable"]
        for k in ("adopt", "run_auto_adopt")
        if k in results
    ]
    checks += [
        results[k]["exactly_one_succeeded"] == results[k]["trials"]
        for k in ("race_different_nights", "race_same_night")
        if k in results
    ]
    results["all_ok"] = all(checks)
    print(json.dumps(results, indent=2))
    return 0 if results["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
