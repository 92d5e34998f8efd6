"""An env file holds a few ``NAME=VALUE`` lines: ``schedule --env-file`` reads at most
``ENV_READ_LIMIT`` bytes of it and refuses a larger file with one line, before parsing anything
(a 50 MB file once kept ``schedule`` busy for over a minute)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillopt_sleep.cli import main
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler.envfile import ENV_READ_LIMIT
from tests.support.scheduler_tools import FakeTools

FOREIGN = "# my backups\n15 1 * * * /usr/local/bin/backup --all\n"
KEY_LINE = "ANTHROPIC_API_KEY=sk-ant-api03-" + "Qz7" * 30 + "BB\n"


@pytest.fixture
def cron(fake_tools: FakeTools, monkeypatch: pytest.MonkeyPatch) -> FakeTools:
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


def test_a_50_mb_env_file_is_refused_with_one_line(cron: FakeTools, project: Path, tmp_path: Path, capsys) -> None:
    env = _env_file(tmp_path / "big.env", 50 * 1024 * 1024)
    code = main(["schedule", "--project", str(project), "--backend", "anthropic", "--env-file", str(env)])
    err = capsys.readouterr().err.strip()
    assert code == 3
    assert "\n" not in err and f"env file {env} cannot be read: larger than {ENV_READ_LIMIT} bytes" in err
    assert "sk-ant" not in err  # the line names the file, never its content
    assert cron.crontab.read_text(encoding="utf-8") == FOREIGN and not user_dirs().schedule_file.exists()


def test_an_env_file_at_the_bound_is_read(cron: FakeTools, project: Path, tmp_path: Path) -> None:
    env = _env_file(tmp_path / "full.env", ENV_READ_LIMIT)
    assert main(["schedule", "--project", str(project), "--backend", "anthropic", "--env-file", str(env)]) == 0
    assert user_dirs().schedule_file.exists()
