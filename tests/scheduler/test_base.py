"""What every OS mechanism shares (``scheduler/base.py``): the command an entry runs, the checks
that keep control characters and secrets out of the OS, and OS tools run with one clear failure."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from skillopt_sleep.errors import EXIT_SCHEDULER, EXIT_USAGE, UserError
from skillopt_sleep.scheduler import base
from skillopt_sleep.scheduler.base import (
    Artifact,
    Job,
    Plan,
    entry_command,
    refuse_control_chars,
    refuse_secrets,
    run_tool,
    run_tool_bytes,
    runs_our_job,
)

SECRET = "sk-ant-api03-" + "a" * 40


def _job(log: Path) -> Job:
    return Job(hour=3, minute=5, argv=("/usr/bin/python 3", "-m", "skillopt_sleep", "nightly"), output_log=log)


def test_the_entry_command_makes_the_log_directory_then_appends_the_job_output_there() -> None:
    job = _job(Path("/state dir/scheduled/scheduler-output.log"))
    command = entry_command(job)
    assert job.at == "03:05"
    assert command == (
        "mkdir -p '/state dir/scheduled' && exec '/usr/bin/python 3' -m skillopt_sleep nightly "
        ">>'/state dir/scheduled/scheduler-output.log' 2>&1"
    )
    assert shlex.split(command)[5:9] == list(job.argv)


def test_our_job_is_recognised_run_directly_or_through_the_shell() -> None:
    assert runs_our_job(["/usr/bin/python3", "-m", "skillopt_sleep", "nightly"])
    assert runs_our_job(("/bin/sh", "-c", entry_command(_job(Path("/s/out.log")))))
    assert not runs_our_job(["/usr/bin/python3", "-m", "skillopt_sleep", "run"])
    assert not runs_our_job("/usr/bin/python3 -m skillopt_sleep nightly")  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["a\nb", "tab\there", "del\x7f", "c1\x85"])
def test_a_control_character_is_refused_as_a_usage_error(value: str) -> None:
    with pytest.raises(UserError) as caught:
        refuse_control_chars("--python", value)
    assert caught.value.code == EXIT_USAGE and caught.value.message.startswith("--python contains a newline")


def test_a_plain_value_passes_unchanged() -> None:
    assert refuse_control_chars("--python", "/usr/bin/python3 é") == "/usr/bin/python3 é"


def test_a_plan_with_a_secret_in_a_file_or_a_command_never_reaches_the_os() -> None:
    refuse_secrets(Plan("cron", [Artifact("crontab", "5 3 * * * run")], [["crontab", "-"]]))
    for plan in (
        Plan("cron", [Artifact("crontab", f"5 3 * * * KEY={SECRET} run")]),
        Plan("systemd", commands=[["systemctl", "--user", "set-environment", f"K={SECRET}"]]),
    ):
        with pytest.raises(UserError) as caught:
            refuse_secrets(plan)
        assert caught.value.code == EXIT_USAGE and f"a {plan.mechanism} entry" in caught.value.message


def test_a_plan_renders_its_files_then_its_commands_then_its_notes() -> None:
    plan = Plan("systemd", [Artifact("/u/x.timer", "[Timer]\nOnCalendar=03:05\n")], [["systemctl", "start"]], ["n"])
    assert plan.render() == "\n".join(
        [
            "via systemd:",
            "--- /u/x.timer",
            "[Timer]",
            "OnCalendar=03:05",
            "--- then run:",
            "  systemctl start",
            "note: n",
        ]
    )


def test_a_failing_tool_is_one_line_with_its_exit_code_and_last_line() -> None:
    script = "import sys; print('first'); print('last \\x1b[31mline', file=sys.stderr); sys.exit(3)"
    with pytest.raises(UserError) as caught:
        run_tool([sys.executable, "-c", script])
    assert caught.value.code == EXIT_SCHEDULER
    assert caught.value.message.endswith("failed (exit 3): last line")  # no stray colour code
    assert run_tool([sys.executable, "-c", script], check=False).returncode == 3
    done = run_tool_bytes(
        [sys.executable, "-c", "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"], b"a\r\n"
    )
    assert done.stdout == b"a\r\n"


def test_a_missing_or_hanging_tool_is_a_scheduler_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UserError) as caught:
        run_tool(["skillopt-sleep-no-such-tool"])
    assert caught.value.code == EXIT_SCHEDULER and "not found on PATH" in caught.value.message
    monkeypatch.setattr(base, "TOOL_TIMEOUT", 0.2)
    with pytest.raises(UserError) as caught:
        run_tool([sys.executable, "-c", "import time; time.sleep(5)"])
    assert caught.value.code == EXIT_SCHEDULER and "did not finish within 0.2s" in caught.value.message
