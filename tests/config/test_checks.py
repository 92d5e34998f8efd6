"""The checks a whole config passes (config/checks.py): each refusal one line saying where."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillopt_sleep.config import (
    Config,
    load_config,
    validate,
)
from skillopt_sleep.backend_spec import BACKEND_NAMES
from skillopt_sleep.errors import EXIT_CONFIG, EXIT_USAGE, UserError
from tests.config.conftest import config_error, project_file


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"agent": "windsurf"}, "agent"),
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
    user_file.write_text('agent = "no-such-agent"\n', encoding="utf-8")
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
        f'backend = "gpt5" in {project_file(project)}: unknown backend (choose from auto, {", ".join(BACKEND_NAMES)})'
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
