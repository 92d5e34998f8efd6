"""Fixtures for the harvest tests: a private copy of the fixture transcripts to append to."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.harvest import FIXTURES


@pytest.fixture
def homes(tmp_path: Path) -> tuple[Path, Path]:
    """(claude_home, codex_home): copies of the fixture transcripts."""
    shutil.copytree(FIXTURES / "claude", tmp_path / "claude")
    shutil.copytree(FIXTURES / "codex", tmp_path / "codex")
    return tmp_path / "claude", tmp_path / "codex"
