"""The schedule file (``schedule_file.py``): written whole with mode 0600, read back, and a
broken one a clear error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillopt_sleep.errors import EXIT_CONFIG, UserError
from skillopt_sleep.scheduler.schedule_file import (
    FORMAT,
    ProjectEntry,
    Schedule,
    delete_schedule,
    load_schedule,
    write_schedule,
)


def _schedule() -> Schedule:
    return Schedule(
        at="03:00",
        via="cron",
        python="/usr/bin/python3",
        env_file="/home/u/.config/skillopt-sleep/env",
        locations={"CODEX_HOME": "/home/u/.codex"},
        path=["/opt/bin"],
        projects=[ProjectEntry("/p", {"backend": "sim"}, auto_adopt=True, registered="2026-01-01T00:00:00+00:00")],
    )


def test_a_written_schedule_reads_back_whole(tmp_path: Path) -> None:
    path = write_schedule(_schedule(), tmp_path / "config" / "schedule.json")
    back = load_schedule(path)
    assert back is not None and back.updated
    assert back == Schedule(**{**_schedule().__dict__, "updated": back.updated})
    assert back.entry("/p") == _schedule().projects[0] and back.entry("/q") is None
    if os.name == "posix":
        assert path.stat().st_mode & 0o777 == 0o600


def test_no_file_is_no_schedule_and_deleting_says_whether_there_was_one(tmp_path: Path) -> None:
    path = tmp_path / "schedule.json"
    assert load_schedule(path) is None and delete_schedule(path) is False
    write_schedule(_schedule(), path)
    assert delete_schedule(path) is True and not path.exists()


@pytest.mark.parametrize(
    "text, why",
    [
        ("{not json", ""),
        ("[]", f"not a {FORMAT} document"),
        (json.dumps({"format": "skillopt_sleep.schedule.v0", "at": "03:00"}), f"not a {FORMAT} document"),
        (json.dumps({"format": FORMAT, "at": "03:00", "via": "cron", "python": "p", "when": 1}), "when"),
        (json.dumps({"format": FORMAT, "at": "03:00", "via": "cron", "python": "p", "projects": [{"x": 1}]}), "x"),
    ],
)
def test_a_broken_file_is_a_config_error_that_says_what_to_do(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "schedule.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as caught:
        load_schedule(path)
    assert caught.value.code == EXIT_CONFIG
    assert caught.value.message.startswith(f"schedule file {path} is broken (")
    assert why in caught.value.message and "run `skillopt-sleep schedule` again" in caught.value.message
