"""A Windows scheduled task, registered from a Task Scheduler XML definition.

``StartWhenAvailable`` makes Windows start a night it missed (asleep or off) as soon as it can.
Our task lives at its own path (``\\skillopt-sleep\\nightly``) and its description carries our
marker; ``unschedule`` deletes that task only.
"""

from __future__ import annotations

import os
import subprocess
import tempfile

from skillopt_sleep.errors import EXIT_SCHEDULER, UserError
from skillopt_sleep.scheduler.base import MARKER, MARKER_NOTE, Artifact, Job, Plan, run_tool

TASK_NAME = "\\skillopt-sleep\\nightly"
SCHTASKS = "schtasks"


def escape(text: str) -> str:
    """XML character data (xml.sax.saxutils would pull in urllib.request)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def task_xml(job: Job) -> str:
    command, *args = job.argv
    return f"""<?xml version="1.0" encoding="UTF-16"?>
<Task version="1.2" xmlns="http://schemas.microsoft.com/windows/2004/02/mit/task">
  <RegistrationInfo>
    <Description>{escape(MARKER_NOTE)}</Description>
    <URI>{escape(TASK_NAME)}</URI>
  </RegistrationInfo>
  <Triggers>
    <CalendarTrigger>
      <StartBoundary>2000-01-01T{job.at}:00</StartBoundary>
      <Enabled>true</Enabled>
      <ScheduleByDay>
        <DaysInterval>1</DaysInterval>
      </ScheduleByDay>
    </CalendarTrigger>
  </Triggers>
  <Principals>
    <Principal id="Author">
      <LogonType>InteractiveToken</LogonType>
      <RunLevel>LeastPrivilege</RunLevel>
    </Principal>
  </Principals>
  <Settings>
    <StartWhenAvailable>true</StartWhenAvailable>
    <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>
    <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>
    <StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>
    <ExecutionTimeLimit>PT8H</ExecutionTimeLimit>
    <Enabled>true</Enabled>
  </Settings>
  <Actions Context="Author">
    <Exec>
      <Command>{escape(command)}</Command>
      <Arguments>{escape(subprocess.list2cmdline(args))}</Arguments>
    </Exec>
  </Actions>
</Task>
"""


class Schtasks:
    name = "schtasks"

    def __init__(self, schtasks: str = SCHTASKS):
        self.schtasks = schtasks

    def plan(self, job: Job) -> Plan:
        return Plan(
            self.name,
            [Artifact("task definition (a temporary XML file)", task_xml(job))],
            [[self.schtasks, "/Create", "/TN", TASK_NAME, "/XML", "<that file>", "/F"]],
            ["StartWhenAvailable: a night the PC missed runs as soon as it can"],
        )

    def _query(self) -> subprocess.CompletedProcess[str]:
        return run_tool([self.schtasks, "/Query", "/TN", TASK_NAME, "/XML"], check=False)

    def install(self, job: Job) -> Plan:
        plan = self.plan(job)
        existing = self._query()
        if existing.returncode == 0 and MARKER not in existing.stdout:
            raise UserError(f"a task {TASK_NAME} exists and is not ours; refusing to replace it", EXIT_SCHEDULER)
        fd, path = tempfile.mkstemp(prefix="skillopt-sleep-task-", suffix=".xml")
        try:
            with os.fdopen(fd, "w", encoding="utf-16") as fh:
                fh.write(plan.artifacts[0].content)
            run_tool([self.schtasks, "/Create", "/TN", TASK_NAME, "/XML", path, "/F"])
        finally:
            os.unlink(path)
        return plan

    def uninstall(self) -> bool:
        if not self.installed():
            return False
        run_tool([self.schtasks, "/Delete", "/TN", TASK_NAME, "/F"])
        return True

    def installed(self) -> bool:
        existing = self._query()
        return existing.returncode == 0 and MARKER in existing.stdout
