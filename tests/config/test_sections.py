"""The sections and ``Config`` (config/sections.py): one place per setting, flat names routed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from skillopt_sleep.config import (
    SECTION_OF,
    SECTIONS,
    Config,
    LearningSettings,
    settings_of,
)


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


def test_homes_are_the_data_dirs_set_by_agent(tmp_path: Path):
    harvest = Config(claude_home=str(tmp_path / "c"), codex_home="~/x").harvest
    assert harvest.homes() == {"claude": tmp_path / "c", "codex": Path("~/x").expanduser()}
    assert Config().harvest.homes() == {}
