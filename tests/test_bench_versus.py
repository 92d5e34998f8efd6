"""scripts/bench_versus.py on a tiny configuration: one seed, one night, the JSON's shape and sense.

This engine always runs (over HTTP to the world); the reference engine only when its virtualenv is
already built in the benchmark cache (building it downloads the package, too slow for a test)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "bench_versus.py"
sys.path.insert(0, str(ROOT / "scripts"))

from bench_harvest import CACHE  # noqa: E402

REFERENCE_READY = (CACHE / "ref-skillopt-0.2.0" / ".installed").is_file()


def bench(*args: str) -> dict:
    out = subprocess.run([sys.executable, str(SCRIPT), "--nights", "1", "--seeds", "1", *args],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def check_engine(report: dict, engine: str) -> None:
    summary = report["summary"][engine]
    assert [row["night"] for row in summary] == [0, 1]
    night = summary[1]
    assert night["calls"] > 0 and night["prompt_chars"] > 0
    assert 0.0 <= night["ground_truth"] <= 1.0
    assert set(night["adopted_total"]) == {"covering", "neutral", "harmful"}
    run = next(r for r in report["runs"] if r["engine"] == engine)
    row = run["nights"][1]
    assert sum(row["calls_by_purpose"].values()) == row["calls"]
    assert row["calls_by_purpose"].get("attempt", 0) > 0
    assert len(row["adopted"]["rules"]) == sum(row["adopted"][k] for k in ("covering", "neutral", "harmful"))
    assert 0.0 <= report["ground_truth_start"] <= report["ceiling"] <= 1.0


def test_this_engine_over_http_reports_calls_and_ground_truth():
    report = bench("--engines", "this")
    assert report["benchmark"] == "versus" and report["world"] == "default"
    assert report["seeds"] == [0] and report["nights"] == 1
    assert "HTTP" in report["engines"]["this"]["transport"] or "127.0.0.1" in report["engines"]["this"]["transport"]
    check_engine(report, "this")
    row = report["runs"][0]["nights"][1]
    # every call the engine counted reached the world over HTTP, and the world placed every prompt
    assert row["status"] in ("staged", "no-change")
    assert row["world_calls_by_purpose"] == row["calls_by_purpose"]
    assert "other" not in row["world_calls_by_purpose"]


@pytest.mark.skipif(not REFERENCE_READY, reason="the reference engine's virtualenv is not built in the benchmark "
                    "cache (run scripts/bench_versus.py once to build it)")
def test_reference_engine_through_its_claude_backend():
    report = bench("--engines", "reference")
    check_engine(report, "reference")
    row = report["runs"][0]["nights"][1]
    # the reference replays tasks and asks its optimizer; no prompt the world could not place
    assert row["calls_by_purpose"].get("reflect", 0) >= 1 and "other" not in row["calls_by_purpose"]
