"""Fixtures for the config tests: a user config file and a project with its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.config import load_config
from skillopt_sleep.errors import EXIT_CONFIG, UserError


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
