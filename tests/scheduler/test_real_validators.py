"""Our generated entries checked by the real tools' own validators, where the machine has them
(Debian: `apt-get install cron` gives `crontab -n`; systemd gives `systemd-analyze verify`).
Neither installs anything."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt_sleep.scheduler.base import MARKER_NOTE, Job
from skillopt_sleep.scheduler.cron import job_line
from skillopt_sleep.scheduler.systemd import UNIT, service_text, timer_text

AWKWARD = "/tmp/50% $HOME it's/schedule.json"


def _job(tmp_path: Path) -> Job:
    return Job(
        3, 7, (sys.executable, "-m", "skillopt_sleep", "nightly", "--schedule-file", AWKWARD), tmp_path / "out.log"
    )


def test_real_crontab_accepts_our_lines(tmp_path: Path) -> None:
    crontab = shutil.which("crontab")
    if (
        crontab is None
        or "-n" not in subprocess.run([crontab, "-h"], capture_output=True, text=True, timeout=10).stderr
    ):
        pytest.skip("no crontab with a syntax check (-n) on this machine")
    table = tmp_path / "table"
    table.write_text(f"# {MARKER_NOTE}\n{job_line(_job(tmp_path))}\n")
    ok = subprocess.run([crontab, "-n", str(table)], capture_output=True, text=True, timeout=10)
    assert ok.returncode == 0, ok.stderr
    table.write_text("61 3 * * * /bin/true\n")  # the validator can fail
    assert subprocess.run([crontab, "-n", str(table)], capture_output=True, timeout=10).returncode != 0


def test_real_systemd_analyze_accepts_our_units(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    job = _job(tmp_path)
    (tmp_path / f"{UNIT}.service").write_text(service_text(job))
    (tmp_path / f"{UNIT}.timer").write_text(timer_text(job))
    proc = subprocess.run(
        [analyze, "verify", f"{UNIT}.timer", f"{UNIT}.service"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if "Failed to initialize manager" in proc.stderr:
        pytest.skip(f"systemd-analyze cannot run here: {proc.stderr.strip()[:120]}")
    assert proc.returncode == 0 and proc.stderr.strip() == "", proc.stderr
    (tmp_path / f"{UNIT}.timer").write_text(timer_text(job).replace("OnCalendar=*-*-* 03:07:00", "OnCalendar=nope"))
    bad = subprocess.run([analyze, "verify", f"{UNIT}.timer"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 or "nope" in bad.stderr
    calendar = subprocess.run([analyze, "calendar", "*-*-* 03:07:00"], capture_output=True, text=True, timeout=30)
    assert calendar.returncode == 0 and "03:07:00" in calendar.stdout
