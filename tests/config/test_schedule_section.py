"""The ``[schedule]`` section (config/sections.py ``ScheduleSettings``): read and checked like every
section, a bad value one line naming where it was set, and the nightly entry's per-user settings
refused in a project's config file."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.config import PER_USER, SCHEDULE_VIAS, SECTION_OF, Config, load_config
from skillopt_sleep.scheduler.registry import MECHANISMS
from tests.config.conftest import config_error, project_file


def test_the_user_file_sets_the_schedule(user_file: Path, project: Path):
    user_file.write_text(
        '[schedule]\nat = "02:30"\nvia = "cron"\nenv_file = "~/keys.env"\nauto_adopt = true\n', encoding="utf-8"
    )
    schedule = load_config(project, env={}).schedule
    assert (schedule.at, schedule.via, schedule.env_file, schedule.auto_adopt) == ("02:30", "cron", "~/keys.env", True)
    assert load_config(None, env={"SKILLOPT_SLEEP_AT": "4:05"}).schedule.at == "4:05"
    assert load_config(None, overrides={"at": "01:00"}, env={"SKILLOPT_SLEEP_AT": "4:05"}).schedule.at == "01:00"


def test_a_relative_env_file_in_the_user_file_is_beside_it(user_file: Path, project: Path, monkeypatch):
    monkeypatch.chdir(project)  # not where the night's command happens to run
    user_file.write_text('[schedule]\nenv_file = "keys.env"\n', encoding="utf-8")
    assert load_config(project, env={}).schedule.env_file == str(user_file.parent / "keys.env")
    # a flag's relative path is the caller's: resolved where it is typed (commands/schedule.py)
    assert load_config(None, overrides={"env_file": "mine.env"}, env={}).schedule.env_file == "mine.env"


def test_unset_means_what_is_already_scheduled(project: Path):
    schedule = load_config(project, env={}).schedule
    assert (schedule.at, schedule.via, schedule.env_file, schedule.auto_adopt) == (None, None, None, False)


@pytest.mark.parametrize("at", ["24:00", "3", "03:5", "noon", "03:00pm", ""])
def test_a_bad_time_is_one_line_naming_the_file_and_the_key(user_file: Path, at: str):
    user_file.write_text(f'[schedule]\nat = "{at}"\n', encoding="utf-8")
    message = config_error(project=None, env={}).message
    assert message == (
        f"invalid setting (at set in {user_file}): at must be a local time of day HH:MM (00:00 to 23:59)"
    )


def test_a_bad_via_or_type_names_where_it_was_set(user_file: Path):
    message = config_error(project=None, env={"SKILLOPT_SLEEP_VIA": "at"}).message
    assert message == f"invalid setting (via set in the environment): via must be one of {', '.join(SCHEDULE_VIAS)}"
    user_file.write_text("[schedule]\nat = 230\n", encoding="utf-8")
    assert config_error(project=None, env={}).message == f"{user_file}: at must be a string, got 230"
    user_file.write_text('[schedule]\nauto_adopt = "maybe"\n', encoding="utf-8")
    assert "auto_adopt must be true or false" in config_error(project=None, env={}).message


@pytest.mark.parametrize("name", PER_USER)
def test_a_project_file_may_not_set_the_entry_s_settings(user_file: Path, project: Path, name: str):
    value = {"at": '"02:30"', "via": '"cron"', "env_file": '"keys.env"'}[name]
    project_file(project).write_text(f"[schedule]\n{name} = {value}\n", encoding="utf-8")
    message = config_error(project=project, env={}).message
    assert message.startswith(f"{project_file(project)}: {name} is the nightly schedule's, one for all your projects")
    assert str(user_file) in message and len(message.splitlines()) == 1


def test_a_project_file_may_set_auto_adopt(project: Path):
    project_file(project).write_text("[schedule]\nauto_adopt = true\n", encoding="utf-8")
    assert load_config(project, env={}).schedule.auto_adopt is True


def test_at_least_in_a_message_does_not_name_the_schedule_s_at(user_file: Path):
    user_file.write_text('at = "02:30"\nk = 0\n', encoding="utf-8")
    assert config_error(project=None, env={}).message == (
        f"invalid setting (k set in {user_file}): k must be at least 1"
    )


def test_the_vias_are_the_scheduler_s_mechanisms():
    assert set(SCHEDULE_VIAS) == set(MECHANISMS)
    assert {SECTION_OF[name] for name in PER_USER} == {"schedule"}
    assert Config(at="02:30").schedule.at == "02:30"
