"""Cron (scheduler/cron.py): a user's crontab comes back byte for byte. `schedule` then
`unschedule` (through the fake ``crontab`` on PATH, which stores exactly the bytes it is given)
leaves every foreign table as it was, whatever its line ends, encoding, separators or final
newline, and a foreign line that only mentions our marker is the user's, not ours."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillopt_sleep.cli import main
from skillopt_sleep.scheduler.base import MARKER, MARKER_NOTE, Job
from skillopt_sleep.scheduler.cron import Cron
from tests.support.scheduler_tools import FakeTools

OUR_MARKER = f"# {MARKER_NOTE}".encode()
LOOKALIKE = f"# {MARKER} is great\n".encode() + b"0 3 * * * /usr/bin/python3 -m skillopt_sleep nightly --mine\n"

# The shapes an earlier version rewrote, and a few more: each is a whole foreign table.
SHAPES = {
    "plain": b"# my backups\n15 1 * * * /usr/local/bin/backup --all\nMAILTO=me@example.com\n",
    "crlf": b"MAILTO=me@example.com\r\n15 1 * * * /usr/local/bin/backup --all\r\n",
    "latin-1": b"# sauvegarde de l'\xe9t\xe9\n15 1 * * * /opt/backup --caf\xe9\n",
    "form feed": b"# backups\x0c0 4 * * * rm -rf /tmp/never-a-command\n5 1 * * * /bin/true\n",
    "line separator": "# notes\u20280 4 * * * rm -rf /tmp/never\n5 1 * * * /bin/true\n".encode(),
    "next line": "# notes\u00850 4 * * * rm -rf /tmp/never\n5 1 * * * /bin/true\n".encode(),
    "no final newline": b"# backups\n15 1 * * * /usr/local/bin/backup --all",
    "lone cr at the end": b"15 1 * * * /usr/local/bin/backup --all\r",
    "blank lines only": b"\n\n \t\n",
    "lookalike marker": b"15 1 * * * /bin/true\n" + LOOKALIKE,
    "marker plus more": OUR_MARKER + b" (my copy)\n0 3 * * * python3 -m skillopt_sleep nightly --mine\n",
}


def _job(tmp_path: Path) -> Job:
    argv = (sys.executable, "-m", "skillopt_sleep", "nightly", "--schedule-file", str(tmp_path / "schedule.json"))
    return Job(2, 30, argv, tmp_path / "runs" / "scheduler-output.log")


def _set_table(tools: FakeTools, table: bytes | None) -> None:
    if table is None:
        tools.crontab.unlink(missing_ok=True)
    else:
        tools.crontab.write_bytes(table)


def _table(tools: FakeTools) -> bytes | None:
    return tools.crontab.read_bytes() if tools.crontab.exists() else None


def _entries(table: bytes | None) -> int:
    """How many of our job lines the table holds (no foreign line here runs --schedule-file)."""
    return sum(1 for line in (table or b"").split(b"\n") if b"-m skillopt_sleep nightly --schedule-file " in line)


@pytest.mark.parametrize("shape", SHAPES)
def test_schedule_then_unschedule_gives_back_the_exact_table(cron: FakeTools, tmp_path: Path, shape: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    cron.crontab.write_bytes(SHAPES[shape])
    assert main(["schedule", "--project", str(project)]) == 0
    assert _entries(_table(cron)) == 1
    assert main(["schedule", "--project", str(project), "--at", "04:10"]) == 0
    assert _entries(_table(cron)) == 1
    assert main(["unschedule"]) == 0
    assert _table(cron) == SHAPES[shape]


_PIECES = st.sampled_from(
    [
        b"0 1 * * * /bin/true",
        b"MAILTO=me@example.com",
        b"# comment",
        b" ",
        b"\t",
        b"\r",
        b"\r\n",
        b"\n",
        b"\x0c",
        b"\x0b",
        b"\x1c",
        b"\x1d",
        b"\x1e",
        b"\x00",
        "\u2028".encode(),
        "\u2029".encode(),
        "\u0085".encode(),
        b"\xe9",
        b"\xff",
        b"\x85",
        b"%",
        b"#",
        b"skillopt_sleep nightly --mine",
        MARKER.encode(),
        f"# {MARKER} is great".encode(),
        OUR_MARKER + b" (mine)",
        b" " + OUR_MARKER,
    ]
)
FOREIGN = st.one_of(st.lists(_PIECES, max_size=14).map(b"".join), st.binary(max_size=60))


def _foreign(table: bytes) -> bool:
    """No line is exactly our marker (that, followed by our job, would be an entry of ours)."""
    return OUR_MARKER not in table.split(b"\n")


# The property tests drive `crontab` as a /bin/sh script over the same table file (`cat` passes
# bytes through by construction, and starts in milliseconds where the Python fake takes ~0.1 s).
SH_CRONTAB = """#!/bin/sh
case "$1" in
  -l) [ -f "$SKILLOPT_FAKE_CRONTAB" ] || { echo "no crontab for $USER" >&2; exit 1; }
      exec cat "$SKILLOPT_FAKE_CRONTAB" ;;
  -) exec cat > "$SKILLOPT_FAKE_CRONTAB" ;;
  -r) exec rm "$SKILLOPT_FAKE_CRONTAB" ;;
esac
exit 1
"""


def _sh_cron(tools: FakeTools) -> Cron:
    script = tools.root / "sh-crontab"
    if not script.exists():
        script.write_text(SH_CRONTAB, encoding="utf-8")
        script.chmod(0o755)
    return Cron(str(script))


PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROPERTY
@given(table=FOREIGN.filter(_foreign), empty_is_absent=st.booleans())
def test_any_foreign_table_survives_schedule_twice_and_unschedule(
    cron: FakeTools, tmp_path: Path, table: bytes, empty_is_absent: bool
) -> None:
    original = None if (empty_is_absent and not table) else table
    _set_table(cron, original)
    mechanism = _sh_cron(cron)
    mechanism.install(_job(tmp_path))
    once = _table(cron)
    assert once is not None and _entries(once) == 1 and mechanism.installed()
    assert once.startswith(table)
    mechanism.install(_job(tmp_path))
    assert _table(cron) == once  # a second schedule replaces the entry, never adds one
    assert mechanism.uninstall()
    assert _table(cron) in ((original,) if original else (None, b""))
    assert not mechanism.installed() and not mechanism.uninstall()


@PROPERTY
@given(before=FOREIGN.filter(_foreign), after=FOREIGN.filter(_foreign).filter(bool))
def test_lines_added_after_our_entry_are_kept_and_never_joined(
    cron: FakeTools, tmp_path: Path, before: bytes, after: bytes
) -> None:
    """The user edits the table after `schedule`: unschedule removes only our two lines."""
    _set_table(cron, before)
    _sh_cron(cron).install(_job(tmp_path))
    cron.crontab.write_bytes(_table(cron) + after)
    assert _sh_cron(cron).uninstall()
    ended = before + b"\n" if before and not before.endswith(b"\n") else before
    assert _table(cron) == ended + after


def test_an_older_entry_among_foreign_lines_is_found_and_only_it_removed(cron: FakeTools, tmp_path: Path) -> None:
    """An entry an older version wrote (the interpreter run directly, the OS opening the log) in the
    middle of a CRLF, Latin-1 table is replaced by `schedule` and removed by `unschedule`."""
    old = (
        OUR_MARKER
        + b"\n30 2 * * * "
        + sys.executable.encode()
        + b" -m skillopt_sleep nightly --schedule-file "
        + str(tmp_path / "schedule.json").encode()
        + b" >>"
        + str(tmp_path / "out.log").encode()
        + b" 2>&1\n"
    )
    head, tail = b"MAILTO=me@example.com\r\n# caf\xe9\r\n", b"5 1 * * * /bin/true\x0c# after\r\n"
    cron.crontab.write_bytes(head + old + tail)
    Cron().install(_job(tmp_path))
    table = _table(cron)
    assert table is not None and _entries(table) == 1 and table.startswith(head + tail) and b"out.log" not in table
    assert Cron().uninstall()
    assert _table(cron) == head + tail
