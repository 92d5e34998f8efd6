"""scripts/bench_harvest.py: the heavy-history shape — many projects asking the same kinds of work
and complaining the same way — is harvested end to end, and the command mines tasks from it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_harvest.py"


def test_the_recurring_shape_spreads_over_24_projects_and_yields_tasks(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--shapes", "recurring", "--mb", "4", "--no-reference", "--keep", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    report = json.loads(out.stdout)["recurring"]
    mining = report["mining"]
    assert mining["projects"] == 24 and mining["sessions"] >= 24
    assert mining["tasks"] > 0, "recurring requests with follow-ups become tasks"
    assert mining["harvest_json_all_projects_seconds"] > 0 and "command_beyond_read_seconds" in mining
