"""How long ``schedule --env-file`` takes on a huge env file and on one at the read bound.

Three cases, each timed over ``--runs`` runs (median and max, seconds):

- ``refuse_50mb``: ``python -m skillopt_sleep schedule --print --env-file big.env`` on a 50 MB env
  file, as a person runs it (a new process, a throwaway SKILLOPT_SLEEP_HOME); the file is refused
  with one line naming the bound.
- ``read_at_bound_one_value``: ``read_env_file`` on a file of exactly ``ENV_READ_LIMIT`` bytes
  holding one long value (every character checked for control characters).
- ``read_at_bound_many_lines``: the same size in short ``NAME=VALUE`` lines.

Prints JSON.

    python scripts/bench_env_file.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from skillopt_sleep.scheduler.envfile import ENV_READ_LIMIT, read_env_file  # noqa: E402


def _write(path: Path, text: str, size: int) -> Path:
    """``text``, then one comment line padding the file to ``size`` bytes."""
    data = text.encode("utf-8")
    pad = size - len(data)
    if pad > 0:
        data += b"#" + b"p" * (pad - 2) + b"\n"
    path.write_bytes(data[:size])
    os.chmod(path, 0o600)
    return path


def _timed(action, runs: int) -> dict[str, float]:
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - started)
    return {"median_s": round(statistics.median(seconds), 4), "max_s": round(max(seconds), 4), "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "proj").mkdir()
        big = _write(root / "big.env", "ANTHROPIC_API_KEY=sk-ant-bench\n", 50 * 1024 * 1024)
        one = _write(root / "one.env", "ANTHROPIC_API_KEY=" + "a" * (ENV_READ_LIMIT - 40) + "\n", ENV_READ_LIMIT)
        line = "SOME_NAME_000000=value-of-a-plausible-length-0123456789\n"
        many = _write(root / "many.env", line * (ENV_READ_LIMIT // len(line)), ENV_READ_LIMIT)
        env = {**os.environ, "SKILLOPT_SLEEP_HOME": str(root / "home"), "HOME": str(root)}
        command = [
            sys.executable,
            "-m",
            "skillopt_sleep",
            "schedule",
            "--print",
            "--project",
            str(root / "proj"),
            "--backend",
            "anthropic",
            "--env-file",
            str(big),
        ]
        refusal: list[str] = []

        def refuse() -> None:
            proc = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
            refusal[:] = [line for line in proc.stderr.splitlines() if "env file" in line]

        result = {
            "env_read_limit_bytes": ENV_READ_LIMIT,
            "refuse_50mb": {**_timed(refuse, args.runs), "message": refusal[0] if refusal else None},
            "read_at_bound_one_value": _timed(lambda: read_env_file(one), args.runs),
            "read_at_bound_many_lines": _timed(lambda: read_env_file(many), args.runs),
        }
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
