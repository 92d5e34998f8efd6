"""The house's own checks, run with the tests so CI runs them: ``ruff check`` and ``ruff format``
over the whole tree and ``mypy`` over the package and the scripts, with the settings in
pyproject.toml."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def tool(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if exe is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]' installs it")
    return subprocess.run([exe, *args], cwd=REPO, capture_output=True, text=True, timeout=600)


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return tool("ruff", *args)


def test_ruff_check_finds_nothing():
    done = ruff("check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_tree_is_formatted():
    done = ruff("format", "--check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing(tmp_path: Path):
    # one run for both: the scripts import the package, so it is read once
    done = tool("mypy", "--cache-dir", str(tmp_path / "cache"), "skillopt_sleep", "scripts")
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_test_module_hides_the_private_home():
    """``tests/conftest.py``'s autouse ``home`` gives every test its own SKILLOPT_SLEEP_HOME; a
    fixture of the same name in a test module replaces it there, and that module's tests then read
    and write the state dir of whoever runs the suite."""
    shadowing = [
        str(path.relative_to(REPO))
        for path in sorted((REPO / "tests").rglob("*.py"))
        if path != REPO / "tests" / "conftest.py" and "\ndef home(" in path.read_text(encoding="utf-8")
    ]
    assert shadowing == []
