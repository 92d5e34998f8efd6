"""The house's own checks, run with the tests so CI runs them: ``ruff check`` and ``ruff format``
over the whole tree and ``mypy`` over the package and the scripts, with the settings in
pyproject.toml; no test module hiding the private home; every stored benchmark result saying how it
was made; every package module with its own test file."""

from __future__ import annotations

import json
import re
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


# Results whose commit the history does not tell: they say "commit": "unknown". A result not named
# here has to name the commit it was run at.
RESULTS_OF_UNKNOWN_COMMIT: frozenset[str] = frozenset()


def _strings_under(value: object, key: str) -> list[str]:
    """Every string stored under ``key`` anywhere in a JSON value."""
    if isinstance(value, dict):
        found = [v for k, v in value.items() if k == key and isinstance(v, str)]
        return found + [s for v in value.values() for s in _strings_under(v, key)]
    if isinstance(value, list):
        return [s for v in value for s in _strings_under(v, key)]
    return []


def _provenance_is_in_json(path: Path) -> bool:
    data = json.loads(path.read_text(encoding="utf-8"))
    commits = _strings_under(data, "commit")
    unknown_allowed = path.name in RESULTS_OF_UNKNOWN_COMMIT
    return any(re.search(r"scripts/\w+\.py", c) for c in _strings_under(data, "command")) and any(
        re.search(r"\b[0-9a-f]{7,40}\b", c) or (c == "unknown" and unknown_allowed) for c in commits
    )


def _provenance_is_in_linking_paragraph(name: str) -> bool:
    text = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    return any(
        re.search(r"python scripts/\w+\.py", paragraph) and re.search(r"`[0-9a-f]{7,40}`", paragraph)
        for paragraph in re.split(r"\n\s*\n", text)
        if f"(bench/{name})" in paragraph
    )


def test_every_stored_result_names_its_command_and_commit():
    """Each file of ``docs/bench/`` says how it was made: a ``command`` naming a script and a
    ``commit`` in its JSON (top-level, or nested where a result holds several runs), or, for a file
    that cannot carry them (a chart), a ``python scripts/...`` command and a backticked commit in the
    paragraph of ``docs/benchmarks.md`` that links it."""
    without = [
        path.name
        for path in sorted((REPO / "docs" / "bench").iterdir())
        if not (path.suffix == ".json" and _provenance_is_in_json(path))
        and not _provenance_is_in_linking_paragraph(path.name)
    ]
    assert without == []


def test_every_package_module_has_its_own_test_file():
    """``skillopt_sleep/<dir>/<mod>.py`` is tested in ``tests/<dir>/test_<mod>.py`` (a module at the
    top in ``tests/test_<mod>.py``), so a newcomer finds a module's tests from its path alone."""
    package = REPO / "skillopt_sleep"
    missing = []
    for module in sorted(package.rglob("*.py")):
        relative = module.relative_to(package)
        if module.name in ("__init__.py", "__main__.py") or relative.parts[0] == "data":
            continue
        test_file = REPO / "tests" / relative.parent / f"test_{module.name}"
        if not test_file.is_file():
            missing.append(f"{relative} -> {test_file.relative_to(REPO)}")
    assert missing == []
