"""Fixtures for the harvest tests: a private copy of the fixture transcripts to append to."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # makes ``harvest_helpers`` importable

from harvest_helpers import FIXTURES  # noqa: E402


@pytest.fixture
def homes(tmp_path: Path) -> tuple[Path, Path]:
    """(claude_home, codex_home): copies of the fixture transcripts."""
    shutil.copytree(FIXTURES / "claude", tmp_path / "claude")
    shutil.copytree(FIXTURES / "codex", tmp_path / "codex")
    return tmp_path / "claude", tmp_path / "codex"
