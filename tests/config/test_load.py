"""Reading the settings (config/load.py): precedence, files, environment, types, sections."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.config import (
    Config,
    load_config,
    read_config_file,
)
from skillopt_sleep.errors import UserError
from tests.config.conftest import config_error, project_file


def test_defaults(project: Path):
    config = load_config(project, env={})
    assert config == Config()
    assert config.models.backend == "auto" and config.documents.agent == "auto" and config.learning.k == 4


def test_precedence(user_file: Path, project: Path):
    user_file.write_text("k = 2\nmax_edits = 2\nconcurrency = 2\nmin_gain = 0.1\n", encoding="utf-8")
    project_file(project).write_text("k = 3\nmax_edits = 3\nconcurrency = 3\n", encoding="utf-8")
    env = {"SKILLOPT_SLEEP_K": "5", "SKILLOPT_SLEEP_MAX_EDITS": "5"}
    config = load_config(project, overrides={"k": 7}, env=env)
    assert config.learning.k == 7  # command line
    assert config.learning.max_edits == 5  # environment
    assert config.models.concurrency == 3  # project file
    assert config.gate.min_gain == 0.1  # user file
    assert config.documents.max_rules == 12  # default
    # peel the layers off one by one
    assert load_config(project, env=env).learning.k == 5
    assert load_config(project, env={}).learning.k == 3
    assert load_config(None, env={}).learning.k == 2


def test_project_file_is_only_read_for_a_project(user_file: Path, project: Path):
    project_file(project).write_text("k = 9\n", encoding="utf-8")
    assert load_config(None, env={}).learning.k == 4
    assert load_config(project, env={}).learning.k == 9


def test_environment_is_read_from_os_environ_by_default(project: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SKILLOPT_SLEEP_BACKEND", "anthropic")
    monkeypatch.setenv("SKILLOPT_SLEEP_BATCH", "yes")
    monkeypatch.setenv("SKILLOPT_SLEEP_VAL_FRACTION", "0.5")
    config = load_config(project)
    assert config.models.backend == "anthropic" and config.models.batch is True and config.harvest.val_fraction == 0.5


def test_environment_ignores_home_and_unrelated_variables(project: Path):
    config = load_config(project, env={"SKILLOPT_SLEEP_HOME": "/elsewhere", "OTHER_K": "9", "SKILLOPT_SLEEPK": "9"})
    assert config == Config()


@pytest.mark.parametrize(
    ("raw", "value"), [("1", True), ("true", True), ("ON", True), ("no", False), ("0", False), ("off", False)]
)
def test_environment_booleans(project: Path, raw: str, value: bool):
    assert load_config(project, env={"SKILLOPT_SLEEP_BATCH": raw}).models.batch is value


def test_none_overrides_are_ignored(user_file: Path):
    user_file.write_text('model = "claude-x"\nk = 6\n', encoding="utf-8")
    config = load_config(None, overrides={"model": None, "k": None, "max_edits": 2}, env={})
    assert (config.models.model, config.learning.k, config.learning.max_edits) == ("claude-x", 6, 2)


def test_dashed_keys_and_tables(user_file: Path):
    user_file.write_text(
        "max-edits = 2\nval-samples = 3\n[backend_options.sim]\nfollow = 0.8\nseed = 7\n", encoding="utf-8"
    )
    config = load_config(None, env={})
    assert config.learning.max_edits == 2 and config.gate.val_samples == 3
    assert config.models.backend_options == {"sim": {"follow": 0.8, "seed": 7}}


def test_integers_are_accepted_for_floats(user_file: Path):
    user_file.write_text("min_gain = 1\nmax_cost_usd = 3\n", encoding="utf-8")
    config = load_config(None, env={})
    assert config.gate.min_gain == 1.0 and isinstance(config.gate.min_gain, float)
    assert config.budgets.max_cost_usd == 3.0


def test_optional_settings(user_file: Path):
    user_file.write_text(
        'max_tokens = 100000\ntarget_backend = "anthropic"\noptimizer_model = "big"\n', encoding="utf-8"
    )
    config = load_config(None, env={})
    assert config.budgets.max_tokens == 100000
    assert config.backend_for("target") == "anthropic" and config.backend_for("optimizer") == "auto"
    assert config.model_for("optimizer") == "big" and config.model_for("target") is None


# -- errors --------------------------------------------------------------------------------------


def test_unknown_key_in_user_file_names_the_file(user_file: Path):
    user_file.write_text('k = 2\nbakend = "sim"\n', encoding="utf-8")
    err = config_error(env={})
    assert str(user_file) in err.message and "'bakend'" in err.message


def test_unknown_key_in_project_file_names_the_file(project: Path):
    project_file(project).write_text('[modles]\nbackend = "sim"\n', encoding="utf-8")
    err = config_error(project=project, env={})
    assert str(project_file(project).resolve()) in err.message and "'modles'" in err.message


def test_unknown_override_key():
    err = config_error(overrides={"bogus": 1}, env={})
    assert "command line" in err.message and "bogus" in err.message


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('k = "four"', "k"),
        ("k = 4.5", "k"),
        ("concurrency = [1]", "concurrency"),
        ('batch = "maybe"', "batch"),
        ("batch = 1", "batch"),
        ("backend = 5", "backend"),
        ("model = true", "model"),
        ('min_gain = "lots"', "min_gain"),
        ("backend_options = 3", "backend_options"),
        ('max_tokens = "many"', "max_tokens"),
    ],
)
def test_wrong_types_name_the_file_and_key(user_file: Path, toml: str, key: str):
    user_file.write_text(toml + "\n", encoding="utf-8")
    err = config_error(env={})
    assert str(user_file) in err.message
    assert key in err.message


@pytest.mark.parametrize("toml", ["k = true", "min_gain = false", "concurrency = true"])
def test_booleans_are_not_numbers(user_file: Path, toml: str):
    user_file.write_text(toml + "\n", encoding="utf-8")
    config_error(env={})


def test_wrong_type_in_environment(project: Path):
    err = config_error(project=project, env={"SKILLOPT_SLEEP_K": "many"})
    assert "environment" in err.message and "k" in err.message


def test_broken_toml_names_the_file(user_file: Path):
    user_file.write_text("k = = 3\n[unclosed\n", encoding="utf-8")
    err = config_error(env={})
    assert str(user_file) in err.message and "broken" in err.message


def test_broken_project_toml_names_the_file(project: Path):
    project_file(project).write_text('backend = "sim\n', encoding="utf-8")
    err = config_error(project=project, env={})
    assert "config.toml" in err.message and ".skillopt-sleep" in err.message


def test_read_config_file_missing_is_empty(tmp_path: Path):
    assert read_config_file(tmp_path / "nope.toml") == {}


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("k", "3", 3),
        ("k", 3.0, 3),
        ("gain_alpha", "0.05", 0.05),
        ("gain_alpha", 1, 1.0),
        ("batch", "Off", False),
        ("batch", "on", True),
        ("edit_whole_skill", "a, b,", ["a", "b"]),
        ("max_calls", None, None),
        ("backend_options", {"anthropic": {"max_tokens": 9}}, {"anthropic": {"max_tokens": 9}}),
    ],
)
def test_a_setting_takes_its_declared_type(key, value, expected):
    from skillopt_sleep.config.load import _coerce

    assert _coerce(key, value, "here") == expected


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("k", 3.5, "here: k must be an integer, got 3.5"),
        ("k", True, "here: k must be a number, got True"),
        ("gain_alpha", "x", "here: gain_alpha must be a number, got 'x'"),
        ("batch", 1, "here: batch must be true or false, got 1"),
        ("batch", "maybe", "here: batch must be true or false, got 'maybe'"),
        ("skill_name", 5, "here: skill_name must be a string, got 5"),
        ("edit_whole_skill", [1], "here: edit_whole_skill must be a list of strings, got [1]"),
        ("backend_options", {"anthropic": 1}, "here: backend_options must be a table, got {'anthropic': 1}"),
        ("k", None, "here: k may not be empty"),
    ],
)
def test_a_setting_of_another_type_is_one_line(key, value, message):
    from skillopt_sleep.config.load import _coerce

    with pytest.raises(UserError) as err:
        _coerce(key, value, "here")
    assert err.value.message == message


# -- sections ------------------------------------------------------------------------------------

SECTIONED = """
[models]
backend = "sim"
concurrency = 2

[models.backend_options.sim]
follow = 0.8

[budgets]
max_calls = 50

[documents]
max_rules = 6
edit_whole_skill = ["notes"]

[harvest]
source = "codex"

[learning]
k = 3
edit_schedule = "linear"

[gate]
val_samples = 2
min_gain = 0.05
"""

FLAT = """
backend = "sim"
concurrency = 2
max_calls = 50
max_rules = 6
edit_whole_skill = ["notes"]
source = "codex"
k = 3
edit_schedule = "linear"
val_samples = 2
min_gain = 0.05

[backend_options.sim]
follow = 0.8
"""


def test_a_sectioned_file_and_a_flat_file_load_the_same(project: Path):
    project_file(project).write_text(SECTIONED, encoding="utf-8")
    sectioned = load_config(project, env={})
    project_file(project).write_text(FLAT, encoding="utf-8")
    flat = load_config(project, env={})
    assert sectioned == flat != Config()
    assert sectioned.learning.k == 3 and sectioned.gate.min_gain == 0.05
    assert sectioned.models.backend_options == {"sim": {"follow": 0.8}}


def test_a_file_may_mix_sections_and_flat_keys(user_file: Path):
    user_file.write_text("k = 3\n[gate]\nval_samples = 2\n", encoding="utf-8")
    config = load_config(None, env={})
    assert (config.learning.k, config.gate.val_samples) == (3, 2)


def test_a_setting_in_another_section_names_the_file_and_the_key(project: Path):
    project_file(project).write_text("[gate]\nk = 3\n", encoding="utf-8")
    err = config_error(project=project, env={})
    assert str(project_file(project).resolve()) in err.message
    assert "k belongs in [learning], not [gate]" in err.message


def test_an_unknown_section_is_an_error(user_file: Path):
    user_file.write_text("[learnings]\nk = 3\n", encoding="utf-8")
    err = config_error(env={})
    assert str(user_file) in err.message and "unknown section 'learnings'" in err.message


def test_an_unknown_key_in_a_section_is_an_error(user_file: Path):
    user_file.write_text("[learning]\nkk = 3\n", encoding="utf-8")
    err = config_error(env={})
    assert str(user_file) in err.message and "unknown setting 'kk' in [learning]" in err.message


def test_a_section_that_is_not_a_table_is_an_error(user_file: Path):
    user_file.write_text("learning = 3\n", encoding="utf-8")
    err = config_error(env={})
    assert str(user_file) in err.message and "[learning] must be a section" in err.message


def test_a_setting_given_twice_in_one_file_is_an_error(user_file: Path):
    user_file.write_text("k = 2\n[learning]\nk = 3\n", encoding="utf-8")
    err = config_error(env={})
    assert str(user_file) in err.message and "k is set twice" in err.message


def test_a_wrong_type_in_a_section_names_the_file(user_file: Path):
    user_file.write_text('[learning]\nk = "many"\n', encoding="utf-8")
    err = config_error(env={})
    assert str(user_file) in err.message and "k must be an integer" in err.message


def test_a_setting_from_a_section_is_named_where_it_was_set(user_file: Path):
    user_file.write_text("[gate]\nval_samples = 5\nmax_val_samples = 4\n", encoding="utf-8")
    err = config_error(env={})
    assert f"max_val_samples set in {user_file}" in err.message and f"val_samples set in {user_file}" in err.message
