"""Wall time of the Claude Code plugin's hooks, run as Claude Code runs them (a new process, hook
JSON on stdin); prints JSON.

Cases: the real engine with nothing staged, with a staged proposal (the notice is printed), and
at session end (the session is recorded); no engine installed; an engine that hangs (the runner's
own budget must stop it). Each case runs ``--runs`` times; times are in seconds.

    python scripts/bench_hooks.py --runs 20
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skillopt_sleep.staging import StagedFile, stage
from skillopt_sleep.types import Edit, NightReport

REPO = Path(__file__).resolve().parent.parent
RUNNER = REPO / "plugins" / "claude-code" / "scripts" / "engine.py"


def runner_budget() -> float:
    spec = importlib.util.spec_from_file_location("plugin_engine_runner", RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.HOOK_BUDGET


def _time_hook(event: str, project: Path, env: dict[str, str], python: str) -> tuple[float, int, str]:
    payload = json.dumps({"session_id": "bench", "cwd": str(project), "hook_event_name": event})
    started = time.perf_counter()
    out = subprocess.run([python, str(RUNNER), event], input=payload, capture_output=True, text=True,
                         env=env, cwd=str(project), timeout=60)
    return time.perf_counter() - started, out.returncode, out.stdout


def _summary(times: list[float], codes: list[int], printed: list[bool]) -> dict:
    ordered = sorted(times)
    return {
        "runs": len(times),
        "p50_s": round(statistics.median(ordered), 3),
        "p95_s": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3),
        "max_s": round(ordered[-1], 3),
        "exit_codes": sorted(set(codes)),
        "printed_a_line": sum(printed),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--no-engine-python", default="/usr/bin/python3",
                        help="an interpreter without skillopt_sleep, for the no-engine cases")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-hooks-") as tmp:
        root = Path(tmp)
        project = root / "proj"
        project.mkdir()
        (project / "CLAUDE.md").write_bytes(b"# rules\n")
        base = {"PATH": "/usr/bin:/bin", "HOME": str(root), "LANG": "C.UTF-8",
                "SKILLOPT_SLEEP_HOME": str(root / "skillopt-home")}
        real = {**base, "SKILLOPT_SLEEP_PYTHON": sys.executable}
        hanging_bin = root / "bin"
        hanging_bin.mkdir()
        hang = hanging_bin / "skillopt-sleep"
        hang.write_text("#!/bin/sh\nsleep 30\n")
        hang.chmod(0o755)
        hanging = {**base, "PATH": f"{hanging_bin}:/usr/bin:/bin"}
        no_engine = {**base, "PATH": f"{root / 'empty'}:/usr/bin:/bin"}

        def run(event: str, env: dict[str, str], python: str) -> dict:
            times, codes, printed = [], [], []
            for _ in range(args.runs):
                took, code, stdout = _time_hook(event, project, env, python)
                times.append(took)
                codes.append(code)
                printed.append(bool(stdout.strip()))
            return _summary(times, codes, printed)

        results = {"nothing_staged": run("session-start", real, sys.executable)}
        report = NightReport(night_id="bench", project=str(project), mode="run", status="staged",
                             accepted_edits=[Edit("memory", "add", "a"), Edit("memory", "add", "b")])
        stage(project, report, [StagedFile("memory", project / "CLAUDE.md", b"# rules\n", b"# rules\n- a\n")])
        results["proposal_staged"] = run("session-start", real, sys.executable)
        results["session_end"] = run("session-end", real, sys.executable)
        if os.path.exists(args.no_engine_python):
            results["no_engine"] = run("session-start", no_engine, args.no_engine_python)
            results["hanging_engine"] = run("session-start", hanging, args.no_engine_python)
    print(json.dumps({"runner_budget_s": runner_budget(), "cpu_count": os.cpu_count(),
                      "load_average_1m": round(os.getloadavg()[0], 2), "cases": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
