"""The env file a scheduled night reads its keys from (scheduler/envfile.py). It is read by
``schedule`` and again by every scheduled night: a FIFO, a device or a link to one in its place is
refused with one line, at once — never a hang (a FIFO blocks an ordinary open) and never a read of
an endless device. It holds a few ``NAME=VALUE`` lines: ``schedule --env-file`` reads at most
``ENV_READ_LIMIT`` bytes of it and refuses a larger file with one line, before parsing anything (a
50 MB file once kept ``schedule`` busy for over a minute)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from skillopt_sleep.cli import main
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler.envfile import ENV_READ_LIMIT
from skillopt_sleep.scheduler.nightly import read_last_run, run_scheduled
from tests.support.scheduler_tools import FakeTools

POSIX_ONLY = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")  # the special-file tests


def _fifo(path: Path) -> Path:
    os.mkfifo(path, 0o600)
    return path


def _link(path: Path, target: str | Path) -> Path:
    path.symlink_to(target)
    return path


SPECIAL = {
    "a FIFO": lambda tmp: _fifo(tmp / "keys.env"),
    "a link to /dev/zero": lambda tmp: _link(tmp / "keys.env", "/dev/zero"),
    "a link to a FIFO": lambda tmp: _link(tmp / "keys.env", _fifo(tmp / "pipe")),
}


def _bounded(call, seconds: float = 20.0):
    """Run ``call`` in a thread; a hang fails the test instead of stalling the suite."""
    out: list = []
    worker = threading.Thread(target=lambda: out.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s"
    return out[0]


@POSIX_ONLY
@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_schedule_refuses_a_special_env_file_in_one_line(kind: str, cron: FakeTools, tmp_path: Path, capsys) -> None:
    project = tmp_path / "p"
    project.mkdir()
    env = SPECIAL[kind](tmp_path)
    code = _bounded(lambda: main(["schedule", "--project", str(project), "--env-file", str(env)]))
    err = capsys.readouterr().err.strip()
    assert code == 3
    assert "\n" not in err and "is not a regular file" in err
    assert not user_dirs().schedule_file.exists()


@POSIX_ONLY
@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_a_scheduled_night_refuses_an_env_file_swapped_for_a_special_file(
    kind: str, cron: FakeTools, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    env = tmp_path / "keys.env"
    env.write_text("X=1\n")
    env.chmod(0o600)
    assert main(["schedule", "--project", str(project), "--env-file", str(env)]) == 0
    env.unlink()
    SPECIAL[kind](tmp_path)
    ran: list = []
    assert _bounded(lambda: run_scheduled(run_project=lambda entry, log: ran.append(entry) or {})) == 3
    assert ran == []
    last = read_last_run()
    assert "is not a regular file" in last["error"] and "\n" not in last["error"] and last["finished"]


# -- the size bound ------------------------------------------------------------------------------

FOREIGN = "# my backups\n15 1 * * * /usr/local/bin/backup --all\n"

KEY_LINE = "ANTHROPIC_API_KEY=sk-ant-api03-" + "Qz7" * 30 + "BB\n"


@pytest.fixture
def cron_with_foreign_table(fake_tools: FakeTools, monkeypatch: pytest.MonkeyPatch) -> FakeTools:
    monkeypatch.setenv("SKILLOPT_FAKE_NO_USER_MANAGER", "1")
    fake_tools.crontab.write_text(FOREIGN, encoding="utf-8")
    return fake_tools


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


def _env_file(path: Path, size: int) -> Path:
    """A valid env file of ``size`` bytes: the key, then one comment line padded out (sparse, so
    50 MB cost no disk). Without a bound it parses: the key is there and a comment is skipped."""
    with path.open("w", encoding="utf-8") as handle:
        handle.write(KEY_LINE + "# padding ")
    os.truncate(path, size - 1)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\n")
    os.chmod(path, 0o600)
    return path


def test_a_50_mb_env_file_is_refused_with_one_line(
    cron_with_foreign_table: FakeTools, project: Path, tmp_path: Path, capsys
) -> None:
    env = _env_file(tmp_path / "big.env", 50 * 1024 * 1024)
    code = main(["schedule", "--project", str(project), "--backend", "anthropic", "--env-file", str(env)])
    err = capsys.readouterr().err.strip()
    assert code == 3
    assert "\n" not in err and f"env file {env} cannot be read: larger than {ENV_READ_LIMIT} bytes" in err
    assert "sk-ant" not in err  # the line names the file, never its content
    assert (
        cron_with_foreign_table.crontab.read_text(encoding="utf-8") == FOREIGN
        and not user_dirs().schedule_file.exists()
    )


def test_an_env_file_at_the_bound_is_read(cron_with_foreign_table: FakeTools, project: Path, tmp_path: Path) -> None:
    env = _env_file(tmp_path / "full.env", ENV_READ_LIMIT)
    assert main(["schedule", "--project", str(project), "--backend", "anthropic", "--env-file", str(env)]) == 0
    assert user_dirs().schedule_file.exists()
