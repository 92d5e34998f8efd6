"""Every command in the README's code blocks is exercised by a test.

Each engine command (``skillopt-sleep …``, ``python -m skillopt_sleep …``) is parsed by the real
argument parser: its verb and every flag must exist. Every other command must stand in a section whose lines a
named test runs as written (``RUN_AS_WRITTEN``), or be a ``pipx`` command checked against this
repository's package. The commands that change nothing outside a temporary directory run here too:
the demo night, the terminal install into a virtualenv, and review → adopt → revert.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt_sleep.cli import build_parser, main
from tests.support import readme
from tests.support.staged_project import project_with_memory, stage_memory

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO = readme.REPO

# Verbs and flags that other parts of the product are adding: the README documents them already.
# (verb, flag) allows one flag; (verb, None) allows the verb itself. Remove each entry once the
# CLI has it — the test then checks it like any other.

# Sections whose commands a test runs as written: heading -> (the test, the programs it runs there).
RUN_AS_WRITTEN = {
    "## Quick start": ("tests/test_readme_commands.py::test_quick_start_commands", {"python3", ".", "pip", "python"}),
    "## Install": ("tests/plugins/test_real_plugins.py::test_claude_readme_install_commands", {"git"}),
    "### Install in Claude Code": (
        "tests/plugins/test_real_plugins.py::test_claude_readme_install_commands",
        {"/plugin"},
    ),
    "### Install in Codex": ("tests/plugins/test_real_plugins.py::test_codex_readme_install_commands", {"codex"}),
    "### Install in Gemini CLI, Copilot CLI or OpenCode": (
        "tests/plugins/test_real_plugins.py::test_the_other_agents_readme_install_commands",
        {"gemini", "copilot", "sh"},
    ),
    "### Install in a terminal": (
        "tests/test_readme_commands.py::test_terminal_install_in_a_virtualenv",
        {
            "python3",
            "~/.local/share/skillopt-sleep/venv/bin/pip",
            "~/.local/share/skillopt-sleep/venv/bin/skillopt-sleep",
        },
    ),
    "## Scheduling": ("tests/commands/test_schedule_readme.py::test_readme_scheduling_commands", {"umask", "echo"}),
    "## Uninstall": (
        "tests/plugins/test_real_plugins.py::test_readme_uninstall_removes_the_plugins",
        {"claude", "codex", "rm"},
    ),
}

# The one name a person types in Claude Code (kept in one place in the README).
SLASH_COMMAND = "/skillopt-sleep"


def _parts(line: str) -> list[list[str]]:
    """A command line's simple commands: ``a && b`` and ``(a && b)`` -> [[a…], [b…]]."""
    line = line.strip()
    if line.startswith("(") and line.endswith(")"):
        line = line[1:-1]
    return [shlex.split(part.split(">")[0]) for part in line.split("&&") if part.strip()]


def _engine_argv(words: list[str]) -> list[str] | None:
    """The engine's arguments when ``words`` run the engine, else None."""
    if words and Path(words[0]).name == "skillopt-sleep":
        return words[1:]
    if words[:3] in (["python", "-m", "skillopt_sleep"], ["python3", "-m", "skillopt_sleep"]):
        return words[3:]
    return None


def _subparsers():
    parser = build_parser()
    (action,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return parser, dict(action.choices)


def engine_problems(argv: list[str]) -> list[str]:
    """Why the engine's parser would not accept ``argv`` (verb, flags, values), allowlist aside."""
    parser, verbs = _subparsers()
    if argv in (["--version"], ["--help"], ["-h"]):
        return []
    verb = argv[0] if argv else ""
    if verb not in verbs:
        return [f"no verb {verb!r}"]
    known = {s for a in verbs[verb]._actions for s in a.option_strings}
    problems, kept = [], [verb]
    for word in argv[1:]:
        flag = word.split("=", 1)[0]
        if flag.startswith("--") and flag not in known:
            problems.append(f"{verb} has no flag {flag}")
            continue
        kept.append(word)
    if not problems:
        try:
            parser.parse_args([os.path.expanduser(w) for w in kept])
        except SystemExit:
            problems.append(f"the parser refuses {' '.join(kept)!r}")
    return problems


def _covered(heading: str, line: str) -> list[str]:
    """Why the command ``line`` under ``heading`` is not covered by a test (empty: it is)."""
    problems = []
    for words in _parts(line):
        argv = _engine_argv(words)
        if argv is not None:
            problems += [f"{line!r}: {p}" for p in engine_problems(argv)]
            continue
        if words[0] == "pipx":
            problems += [f"{line!r}: {p}" for p in _pipx_problems(words)]
            continue
        _, programs = RUN_AS_WRITTEN.get(heading, ("", set()))
        if words[0] not in programs:
            problems.append(f"{line!r} (under {heading!r}): no test runs it; add it to a test and RUN_AS_WRITTEN")
    return problems


def _pipx_problems(words: list[str]) -> list[str]:
    """pipx is not part of the test machine: its two commands are checked against the repository."""
    name = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
    clone_dir = shlex.split(readme.clone_line())[-1]
    if words[1:2] == ["install"]:
        return [] if words[2:] == [f"./{clone_dir}"] else [f"pipx install of {words[2:]}, not the clone ./{clone_dir}"]
    if words[1:2] == ["uninstall"]:
        return [] if words[2:] == [name] else [f"pipx uninstall of {words[2:]}, not the package {name}"]
    return [f"pipx {words[1:2]} is not a command this test knows"]


def test_every_readme_command_is_covered():
    commands = readme.all_commands()
    assert len(commands) >= 20, "the README's code blocks were not found"
    problems = [p for heading, line in commands for p in _covered(heading, line)]
    assert problems == []


@pytest.mark.parametrize(
    "line, expected",
    [
        ("skillopt-sleep run --project . --no-such-flag", "run has no flag --no-such-flag"),
        ("skillopt-sleep frobnicate --project .", "no verb 'frobnicate'"),
        ("skillopt-sleep schedule --at", "the parser refuses"),
        ("rm -rf ~/somewhere", "no test runs it"),
        ("pipx install skillopt-sleep", "not the clone"),
    ],
)
def test_the_coverage_check_catches(line, expected):
    """The check above fails for a README command that a test would not catch."""
    assert any(expected in p for p in _covered("## Your first real night", line))


def test_the_tests_named_as_running_sections_exist():
    for test, _ in RUN_AS_WRITTEN.values():
        path, name = test.split("::")
        tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
        assert name in {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}, test


def test_the_slash_command_is_named_in_one_place():
    """The name a person types in Claude Code appears once, so it can change in one place."""
    text = readme.text()
    uses = re.findall(r"(?:(?<=[`\s(\"'])|^)/skillopt-sleep[\w:-]*", text, re.M)
    assert uses == [SLASH_COMMAND]


def test_the_readme_cites_no_missing_file():
    text = readme.text()
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert (REPO / target).exists(), target
    for doc in (REPO / "docs").glob("*.md"):
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            if "://" not in target:
                assert (doc.parent / target).exists(), f"{doc.name}: {target}"
    assert "DESIGN" not in text


def test_config_examples_name_real_settings():
    """Every key of a TOML example in the README and docs/ is a setting the config file accepts:
    a setting at the top, or a section holding only its own settings."""
    from skillopt_sleep.config import SECTION_OF, SECTIONS

    for path in [readme.README, *sorted((REPO / "docs").glob("*.md"))]:
        for lang, body in readme.code_blocks(path.read_text(encoding="utf-8")):
            if lang != "toml":
                continue
            table = tomllib.loads(body.replace("# max_calls", "max_calls"))
            for key, value in table.items():
                if key in SECTIONS:
                    misplaced = {name for name in value if SECTION_OF.get(name) != key}
                    assert not misplaced, (path.name, key, misplaced)
                else:
                    assert key in SECTION_OF, (path.name, key)


# --------------------------------------------------------------------------- run as written


def test_quick_start_commands(tmp_path):
    """(2) is what .ci/run runs; (1) installs the same way and its demo night runs."""
    one, two = readme.commands("## Quick start")
    install_two = [" ".join(w) for w in _parts(two)]
    assert install_two == [
        "python3 -m venv .venv",
        ". .venv/bin/activate",
        "pip install -e .[test]",
        "python -m pytest -q",
    ]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert 'python3 -m venv "$venv" && . "$venv/bin/activate" && pip install -e \'.[test]\'' in ci
    assert re.search(r"^python -m pytest -q( |$)", ci, re.M)
    parts_one = [" ".join(w) for w in _parts(one)]
    assert parts_one[:2] == install_two[:2] and parts_one[2] == "pip install -e ."
    assert parts_one[3] == "python -m skillopt_sleep demo"
    env = {**os.environ, "TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "skillopt_sleep", "demo"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    assert "To review the proposal:" in out.stdout and "accepted" in out.stdout


@pytest.mark.slow  # a real virtualenv and pip install
def test_terminal_install_in_a_virtualenv(tmp_path):
    """The terminal route without pipx, run as written in a throwaway HOME from a clone's files."""
    lines = readme.commands("### Install in a terminal", block=1)
    assert [shlex.split(line)[0] for line in lines] == [
        "python3",
        "~/.local/share/skillopt-sleep/venv/bin/pip",
        "~/.local/share/skillopt-sleep/venv/bin/skillopt-sleep",
    ]
    clone = tmp_path / shlex.split(readme.clone_line())[-1]
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60).stdout
    for rel in filter(None, files.decode().split("\0")):
        if (REPO / rel).is_file():
            (clone / rel).parent.mkdir(parents=True, exist_ok=True)
            (clone / rel).write_bytes((REPO / rel).read_bytes())
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")),
    }
    out = None
    for line in lines:
        out = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, line + "\n" + out.stdout + out.stderr
    from skillopt_sleep import __version__

    assert out.stdout.strip() == f"skillopt-sleep {__version__}"


def test_review_adopt_revert_as_written(tmp_path, monkeypatch, capsys):
    """The README's review → adopt → revert block, from the project directory, on a staged proposal."""
    lines = readme.commands("## Review, adopt, revert")
    assert [shlex.split(line)[1] for line in lines] == ["review", "adopt", "revert"]
    old, new = b"# rules\n", b"# rules\n- Use conventional commits.\n"
    project = project_with_memory(tmp_path, old)
    stage_memory(project, new, rules=1)
    monkeypatch.chdir(project)
    seen = []
    for line in lines:
        assert main(shlex.split(line)[1:]) == 0, line
        seen.append((project / "CLAUDE.md").read_bytes())
    assert "Use conventional commits." in capsys.readouterr().out
    assert seen == [old, new, old]


def test_every_benchmark_result_is_cited():
    """docs/bench holds only result files docs/benchmarks.md cites, and every docs/bench path named
    in the docs, the README, the scripts or the engine exists."""
    benchmarks = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    for result in (REPO / "docs" / "bench").iterdir():
        assert f"bench/{result.name}" in benchmarks, result.name
    named = [
        readme.README,
        *(REPO / "docs").glob("*.md"),
        *(REPO / "scripts").glob("*.py"),
        *(REPO / "skillopt_sleep").rglob("*.py"),
    ]
    for path in named:
        for cited in re.findall(r"docs/bench/([\w.-]+\.(?:json|svg))", path.read_text(encoding="utf-8")):
            assert (REPO / "docs" / "bench" / cited).is_file(), f"{path.name} cites docs/bench/{cited}"
