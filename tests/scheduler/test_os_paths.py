"""Every mechanism quotes an awkward path (``%``, ``$``, quotes, spaces) so that its entry runs
exactly the job's argv: cron's line through /bin/sh, systemd's ``ExecStart=``, launchd's
``ProgramArguments``. One test across three mechanisms; what each mechanism does on its own is in
its own file (test_cron.py, test_systemd.py, test_launchd.py, test_schtasks.py), and the
``schedule`` function by platform is in tests/commands/test_schedule.py."""

from __future__ import annotations

import plistlib
from pathlib import Path

from skillopt_sleep.scheduler.base import Job
from skillopt_sleep.scheduler.cron import job_line
from skillopt_sleep.scheduler.launchd import plist_bytes
from skillopt_sleep.scheduler.systemd import service_text
from tests.support.os_entries import cron_command, exec_start_argv, job_argv


def test_awkward_paths_are_quoted_for_each_mechanism(tmp_path: Path) -> None:
    odd = tmp_path / '50% it\'s $HOME "quoted"'
    job = Job(
        3, 0, ("/usr/bin/python3", "-m", "skillopt_sleep", "nightly", "--schedule-file", str(odd)), tmp_path / "out.log"
    )
    line = job_line(job)
    assert "\\%" in line and "50%" not in line.replace("\\%", "")
    assert job_argv(["/bin/sh", "-c", cron_command(line)]) == list(job.argv)
    exec_start = next(x for x in service_text(job).splitlines() if x.startswith("ExecStart="))
    assert "50%%" in exec_start and "$$HOME" in exec_start and "50% " not in exec_start
    assert job_argv(exec_start_argv(service_text(job))) == list(job.argv)
    assert job_argv(plistlib.loads(plist_bytes(job))["ProgramArguments"]) == list(job.argv)
