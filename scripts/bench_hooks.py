"""Wall and CPU time of the Claude Code plugin's session hooks, run as Claude Code runs them: the
command from hooks.json through /bin/sh, a new process each time, the hook's JSON on stdin, the
system python3 (which cannot import the engine); prints JSON.

Cases: a proposal staged (the notice must be printed: ``printed`` counts the runs that printed
it), nothing staged, session end (the session is recorded), and the files a hook must survive
silently: no state dir at all, the notice file replaced by a FIFO, by a 64 MiB file, by garbage.
``--load N`` (N >= 2) keeps N busy processes spinning for the whole measurement, so the hooks
compete for the CPUs as they do on a loaded machine; they are stopped at the end. Times are in
seconds; each case runs ``--runs`` times, the cases interleaved round by round. The output
records the machine's own load (1-minute load average and, on Linux, the CPU pressure: the share
of time some runnable process waited for a CPU), since a shared machine adds its own.

    python scripts/bench_hooks.py --runs 50 --load 2

The busy processes share the hooks' session, so on Linux (where the scheduler divides the CPUs
between sessions first, "autogroups") each hook competes with all of them, not with a session of
their own. On a machine that other work keeps busy, ``--autogroup-nice -15`` (Linux, root) raises
that session's priority over the other work for the duration of the measurement, which
approximates a machine where only the busy processes compete with the hooks; the output records
it, and the CPU share the busy processes actually got.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from skillopt_sleep.paths import user_dirs  # noqa: E402
from skillopt_sleep.staging.stage import StagedFile, stage  # noqa: E402
from skillopt_sleep.types import Edit, NightReport  # noqa: E402

PLUGIN = REPO / "plugins" / "claude-code"
NOTICE = "skillopt-sleep: last night proposed 2 rules for this project"


def hook_command(event: str) -> str:
    config = json.loads((PLUGIN / "hooks" / "hooks.json").read_text(encoding="utf-8"))
    return config["hooks"][event][0]["hooks"][0]["command"]


def start_load(count: int) -> list[subprocess.Popen]:
    return [
        subprocess.Popen(
            [sys.executable, "-c", "while True: pass"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(count)
    ]


def stop_load(procs: list[subprocess.Popen]) -> float:
    """Stop the busy processes; returns the CPU seconds they burnt."""
    cpu = 0.0
    for proc in procs:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = -signal.SIGKILL
        cpu += usage.ru_utime + usage.ru_stime
    return cpu


def time_hook(event: str, project: Path, env: dict[str, str]) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds, exit code, stdout) of one hook run."""
    payload = json.dumps(
        {"session_id": "bench", "cwd": str(project), "hook_event_name": event, "source": "startup"}
    ).encode()
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        proc = subprocess.Popen(
            ["/bin/sh", "-c", hook_command(event)],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=str(project),
        )
        assert proc.stdin is not None  # stdin=PIPE
        proc.stdin.write(payload)
        proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, proc.returncode, out.read().decode("utf-8", "replace")


AUTOGROUP = Path("/proc/self/autogroup")


def autogroup_nice(value: int | None) -> int | None:
    """Set the autogroup niceness of this process's session (Linux); returns the previous one."""
    try:
        previous = int(AUTOGROUP.read_text(encoding="ascii").split()[-1])
        if value is not None:
            AUTOGROUP.write_text(str(value), encoding="ascii")
        return previous
    except (OSError, ValueError, IndexError):
        return None


def cpu_pressure() -> float | None:
    """Linux PSI: % of the last 10 s in which some runnable task waited for a CPU."""
    try:
        with open("/proc/pressure/cpu", encoding="ascii") as fh:
            first = fh.readline().split()
        return float(dict(field.split("=") for field in first[1:])["avg10"])
    except (OSError, ValueError, KeyError, IndexError):
        return None


def percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summary(walls: list[float], cpus: list[float], codes: list[int], printed: int) -> dict:
    ordered = sorted(walls)
    return {
        "runs": len(walls),
        "p50_s": round(statistics.median(ordered), 4),
        "p95_s": round(percentile(ordered, 0.95), 4),
        "max_s": round(ordered[-1], 4),
        "cpu_p50_s": round(statistics.median(cpus), 4),
        "exit_codes": sorted(set(codes)),
        "printed": printed,
    }


def make_cases(root: Path, python_dir: str) -> dict[str, tuple[str, Path, dict[str, str], str | None]]:
    """case -> (hook event, project, environment, the line it must print or None for silence)."""
    home = root / "skillopt-home"
    os.environ["SKILLOPT_SLEEP_HOME"] = str(home)  # where stage() writes the notice
    projects = {}
    for name in ("staged", "empty", "fifo", "huge", "garbage"):
        project = root / name
        project.mkdir()
        (project / "CLAUDE.md").write_bytes(b"# rules\n")
        projects[name] = project
        if name in ("staged", "fifo", "huge", "garbage"):
            report = NightReport(
                night_id="bench",
                project=str(project),
                mode="run",
                status="staged",
                accepted_edits=[Edit("memory", "add", "a"), Edit("memory", "add", "b")],
            )
            stage(project, report, [StagedFile("memory", project / "CLAUDE.md", b"# rules\n", b"# rules\n- a\n")])
    dirs = user_dirs()
    for name in ("fifo", "huge", "garbage"):
        path = dirs.project_notice(projects[name])
        path.unlink()
        if name == "fifo":
            os.mkfifo(path)
        elif name == "huge":
            with open(path, "wb") as fh:
                fh.truncate(64 * 1024 * 1024)
        else:
            path.write_bytes(os.urandom(4096))
    base = {
        "PATH": f"{python_dir}:/usr/bin:/bin",
        "HOME": str(root),
        "LANG": "C.UTF-8",
        "CLAUDE_PLUGIN_ROOT": str(PLUGIN),
        "SKILLOPT_SLEEP_HOME": str(home),
    }

    def env(project: Path, **extra: str) -> dict[str, str]:
        return {**base, "CLAUDE_PROJECT_DIR": str(project), **extra}

    return {
        "proposal_staged": ("SessionStart", projects["staged"], env(projects["staged"]), NOTICE),
        "nothing_staged": ("SessionStart", projects["empty"], env(projects["empty"]), None),
        "session_end": ("SessionEnd", projects["empty"], env(projects["empty"]), None),
        "no_state_dir": (
            "SessionStart",
            projects["empty"],
            env(projects["empty"], SKILLOPT_SLEEP_HOME=str(root / "absent")),
            None,
        ),
        "notice_is_fifo": ("SessionStart", projects["fifo"], env(projects["fifo"]), None),
        "notice_is_64_mib": ("SessionStart", projects["huge"], env(projects["huge"]), None),
        "notice_is_garbage": ("SessionStart", projects["garbage"], env(projects["garbage"]), None),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30, help="runs per case (default 30)")
    parser.add_argument(
        "--load",
        type=int,
        default=0,
        metavar="N",
        help="keep N >= 2 busy processes running while measuring (default: none)",
    )
    parser.add_argument(
        "--autogroup-nice",
        type=int,
        metavar="N",
        help="run the measurement at this autogroup niceness (Linux, root; see above)",
    )
    parser.add_argument(
        "--python",
        default=shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3",
        help="the python3 the hooks find on PATH (default: the system one)",
    )
    args = parser.parse_args()
    if args.load and args.load < 2:
        parser.error("--load needs at least 2 busy processes")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    previous_nice = None
    if args.autogroup_nice is not None:
        previous_nice = autogroup_nice(args.autogroup_nice)
        if previous_nice is None:
            parser.error(f"--autogroup-nice: cannot set {AUTOGROUP} (Linux with autogroups, as root)")

    with tempfile.TemporaryDirectory(prefix="bench-hooks-") as tmp:
        cases = make_cases(Path(tmp), str(Path(args.python).parent))
        results: dict[str, dict[str, list]] = {
            name: {"walls": [], "cpus": [], "codes": [], "printed": []} for name in cases
        }
        load = start_load(args.load)
        load_started = time.perf_counter()
        try:
            time.sleep(0.5 if load else 0)  # let the busy processes reach full speed
            for _ in range(args.runs):
                for name, (event, project, env, expected) in cases.items():
                    wall, cpu, code, stdout = time_hook(event, project, env)
                    record = results[name]
                    record["walls"].append(wall)
                    record["cpus"].append(cpu)
                    record["codes"].append(code)
                    record["printed"].append(
                        expected is not None and expected in stdout or expected is None and stdout != ""
                    )
            load_average = os.getloadavg()[0]
            pressure = cpu_pressure()
        finally:
            load_seconds = time.perf_counter() - load_started
            load_cpu = stop_load(load)
            measured_nice = autogroup_nice(previous_nice)
        out = {}
        for name, record in results.items():
            out[name] = summary(record["walls"], record["cpus"], record["codes"], sum(record["printed"]))
            if cases[name][3] is None:
                out[name]["printed_when_it_must_not"] = out[name].pop("printed")
    busy_share = load_cpu / (load_seconds * len(load)) if load else None
    print(
        json.dumps(
            {
                "python": args.python,
                "cpu_count": os.cpu_count(),
                "busy_processes": len(load),
                "busy_process_cpu_share": None if busy_share is None else round(busy_share, 3),
                "autogroup_nice": measured_nice,
                "load_average_1m_at_end": round(load_average, 2),
                "cpu_pressure_some_avg10_at_end": pressure,
                "cases": out,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
