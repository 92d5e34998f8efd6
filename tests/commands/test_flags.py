"""The flags several commands share (commands/flags.py): ``--source`` and one ``--<agent>-home`` per
agent whose sessions can be read, and the settings they give."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from skillopt_sleep.commands.flags import add_source_flags, home_overrides
from skillopt_sleep.paths import TRANSCRIPT_SOURCES, home_setting


def parser(home_type=str) -> argparse.ArgumentParser:
    made = argparse.ArgumentParser()
    add_source_flags(made, home_type)
    return made


def test_source_names_an_agent_auto_or_all_and_nothing_else(capsys: pytest.CaptureFixture[str]) -> None:
    for choice in (*TRANSCRIPT_SOURCES, "auto", "all"):
        assert parser().parse_args(["--source", choice]).source == choice
    with pytest.raises(SystemExit):
        parser().parse_args(["--source", "notepad"])
    assert "argument --source: invalid choice: 'notepad'" in capsys.readouterr().err


def test_each_home_flag_gives_its_setting_and_an_absent_one_none() -> None:
    for name in TRANSCRIPT_SOURCES:
        overrides = home_overrides(parser().parse_args([f"--{name}-home", f"/data/{name}"]))
        assert overrides[home_setting(name)] == f"/data/{name}"
        assert [k for k, v in overrides.items() if v is not None] == [home_setting(name)]
    assert set(home_overrides(parser().parse_args([]))) == {home_setting(n) for n in TRANSCRIPT_SOURCES}


def test_the_home_type_converts_each_home_flag() -> None:
    args = parser(Path).parse_args(["--codex-home", "/c"])
    assert home_overrides(args)["codex_home"] == Path("/c")
