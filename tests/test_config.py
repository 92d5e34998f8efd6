from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from skillopt_sleep.config import (
    SECTION_OF,
    SECTIONS,
    Config,
    LearningSettings,
    load_config,
    read_config_file,
    settings_of,
    validate,
)
from skillopt_sleep.errors import EXIT_CONFIG, EXIT_USAGE, UserError


@pytest.fixture
def user_file(home: Path) -> Path:
    path = home / "config" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".skillopt-sleep").mkdir(parents=True)
    return root


def project_file(project: Path) -> Path:
    return project / ".skillopt-sleep" / "config.toml"


def config_error(**kwargs) -> UserError:
    with pytest.raises(UserError) as info:
        load_config(**kwargs)
    assert info.value.code == EXIT_CONFIG
    return info.value


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
    ("overrides", "needle"),
    [
        ({"agent": "cursor"}, "agent"),
        ({"source": "vscode"}, "source"),
        ({"k": 0}, "k must be at least 1"),
        ({"val_samples": 0}, "val_samples"),
        ({"val_samples": 8, "max_val_samples": 4}, "max_val_samples"),
        ({"concurrency": 0}, "concurrency"),
        ({"max_edits": 0}, "max_edits"),
        ({"val_fraction": 1.0}, "val_fraction"),
        ({"val_fraction": -0.1}, "val_fraction"),
        ({"val_fraction": 0.6, "test_fraction": 0.4}, "val_fraction + test_fraction"),
        ({"test_fraction": 1.5}, "test_fraction"),
        ({"min_recurrence": 0}, "min_recurrence"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_cost_usd": -1}, "max_cost_usd"),
        ({"retire_margin": 0}, "retire_margin"),
        ({"retire_margin": 1.5}, "retire_margin"),
    ],
)
def test_validation_errors(overrides: dict, needle: str):
    err = config_error(overrides=overrides, env={})
    assert "invalid setting" in err.message and needle in err.message


def test_validation_applies_to_file_values_too(user_file: Path):
    user_file.write_text('agent = "gemini"\n', encoding="utf-8")
    assert "agent" in config_error(env={}).message


def test_validate_accepts_the_defaults():
    assert validate(Config()) == Config()


def test_edit_whole_skill_is_a_list_of_skill_names(project: Path):
    project_file(project).write_text('edit_whole_skill = ["lookup", "notes"]\n', encoding="utf-8")
    assert load_config(project, env={}).documents.edit_whole_skill == ["lookup", "notes"]
    env = {"SKILLOPT_SLEEP_EDIT_WHOLE_SKILL": "a, b"}
    assert load_config(project, env=env).documents.edit_whole_skill == ["a", "b"]
    project_file(project).write_text('edit_whole_skill = "lookup"\n', encoding="utf-8")
    assert load_config(project, env={}).documents.edit_whole_skill == ["lookup"]  # one name is a list of one
    project_file(project).write_text("edit_whole_skill = [1]\n", encoding="utf-8")
    assert "must be a list of strings" in config_error(project=project, env={}).message


def test_an_unknown_backend_in_a_file_names_the_file_and_the_key(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    """``backend = "gpt5"`` in the project's config.toml: one line naming the file, the key and the
    choices, exit 3 — from ``run`` as from load_config; ``status`` says so and still works."""
    from skillopt_sleep.cli import main

    monkeypatch.delenv("SKILLOPT_SLEEP_BACKEND")  # the tests' default would win over the file
    project_file(project).write_text('backend = "gpt5"\n', encoding="utf-8")
    err = config_error(project=project, env={})
    assert err.message == (
        f'backend = "gpt5" in {project_file(project)}: unknown backend '
        "(choose from auto, sim, anthropic, openai, claude-cli, codex-cli)"
    )
    assert main(["run", "--project", str(project), "--quiet"]) == EXIT_CONFIG
    assert capsys.readouterr().err.strip() == f"skillopt-sleep: {err.message}"
    assert main(["status", "--project", str(project)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == f"  config is broken: {err.message} — every night stops at once until it is fixed"
    assert main(["status", "--project", str(project), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config_problem"] == err.message


def test_backend_errors_say_where_the_backend_was_set(user_file: Path):
    user_file.write_text('optimizer_backend = "sim:seed"\n', encoding="utf-8")
    assert config_error(env={}).message == (
        f"optimizer_backend = \"sim:seed\" in {user_file}: backend option 'seed' is not key=value"
    )
    user_file.write_text("", encoding="utf-8")
    assert config_error(env={"SKILLOPT_SLEEP_BACKEND": "gpt5"}).message.startswith(
        "SKILLOPT_SLEEP_BACKEND=gpt5 in the environment: unknown backend (choose from auto, "
    )
    with pytest.raises(UserError) as info:
        load_config(overrides={"backend": "gpt5"}, env={})
    assert info.value.code == EXIT_USAGE and info.value.message.startswith("--backend gpt5: unknown backend")
    assert load_config(overrides={"backend": "AUTO"}, env={}).models.backend == "AUTO"


def test_an_invalid_value_names_where_it_was_set(project: Path):
    project_file(project).write_text("k = 0\n", encoding="utf-8")
    assert config_error(project=project, env={}).message == (
        f"invalid setting (k set in {project_file(project)}): k must be at least 1"
    )
    project_file(project).write_text("val_samples = 20\n", encoding="utf-8")
    assert config_error(project=project, env={}).message == (
        f"invalid setting (val_samples set in {project_file(project)}): max_val_samples must be >= val_samples"
    )


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
    from skillopt_sleep.config import _coerce

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
    from skillopt_sleep.config import _coerce

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


def test_flat_keyword_arguments_route_to_their_sections():
    config = Config(k=3, backend="sim", max_calls=7, val_samples=2)
    assert config.learning.k == 3 and config.models.backend == "sim"
    assert config.budgets.max_calls == 7 and config.gate.val_samples == 2
    assert config.learning.max_edits == LearningSettings.max_edits  # the rest keeps its default
    with pytest.raises(AttributeError):
        config.k  # noqa: B018 - no flat reads: one name, one place


def test_an_unknown_keyword_argument_is_a_type_error():
    with pytest.raises(TypeError, match="kk"):
        Config(kk=3)


def test_replace_changes_a_copy_by_flat_names():
    config = Config(k=3)
    changed = config.replace(k=2, backend="sim")
    assert (changed.learning.k, changed.models.backend) == (2, "sim")
    assert (config.learning.k, config.models.backend) == (3, "auto")
    with pytest.raises(TypeError):
        config.replace(kk=2)


def test_sections_given_whole_are_copied():
    learning = LearningSettings(k=5)
    config = Config(learning=learning, max_edits=2)
    assert (config.learning.k, config.learning.max_edits) == (5, 2)
    assert learning.max_edits == LearningSettings.max_edits


def test_every_setting_is_declared_in_exactly_one_section():
    declared = [f.name for cls in SECTIONS.values() for f in dataclasses.fields(cls)]
    assert len(declared) == len(set(declared)) == len(SECTION_OF)
    assert not set(SECTIONS) & set(SECTION_OF)  # a file's top-level key is a section or a setting, never both
    assert [f.name for f in dataclasses.fields(Config)] == list(SECTIONS)


def test_settings_of_round_trips():
    config = Config(k=3, backend_options={"sim": {"seed": 1}}, edit_whole_skill=["a"])
    record = settings_of(config)
    assert set(record) == set(SECTION_OF) and record["k"] == 3
    assert Config(**record) == config
