"""The plugins' ``bin/skillopt-sleep`` launcher: it sets up a private engine from the package
source the plugin carries, on first use, and then runs it. These tests give it a small package of
the same name (no dependencies) so each setup is a real virtualenv and a real pip install in a few
seconds; the real engine's setup is in tests/plugins/test_claude_front_door.py."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "plugins" / "codex" / "bin" / "skillopt-sleep"
FIRST_USE = "skillopt-sleep: setting up its engine (first use)…"
CHANGED = "skillopt-sleep: setting up its engine (the plugin changed)…"

FAKE_MAIN = """\
import sys


def main():
    print("fake engine", {version!r}, "args=" + " ".join(sys.argv[1:]), "prefix=" + sys.prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
"""


def _load_launcher():
    loader = importlib.machinery.SourceFileLoader("skillopt_sleep_launcher", str(LAUNCHER))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _write_package(source: Path, version: str = "9.9.1", pyproject_extra: str = "") -> None:
    (source / "skillopt_sleep").mkdir(parents=True, exist_ok=True)
    (source / "pyproject.toml").write_text(
        textwrap.dedent(f"""\
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "skillopt-sleep"
        version = "{version}"
        {pyproject_extra}
        [project.scripts]
        skillopt-sleep = "skillopt_sleep.__main__:main"

        [tool.setuptools.packages.find]
        include = ["skillopt_sleep*"]
        """),
        encoding="utf-8",
    )
    (source / "skillopt_sleep" / "__init__.py").write_text(f"__version__ = {version!r}\n", encoding="utf-8")
    (source / "skillopt_sleep" / "__main__.py").write_text(FAKE_MAIN.format(version=version), encoding="utf-8")


def _plugin(tmp_path: Path, layout: str = "claude") -> Path:
    """A plugin directory with the launcher in bin/ and the package source where that plugin
    keeps it: ``engine/`` (Claude Code) or the plugin root three levels up (Codex)."""
    root = tmp_path / "plugin"
    if layout == "claude":
        bin_dir, source = root / "bin", root / "engine"
    else:
        bin_dir, source = root / "plugins" / "codex" / "bin", root
    bin_dir.mkdir(parents=True)
    shutil.copy2(LAUNCHER, bin_dir / "skillopt-sleep")
    _write_package(source)
    return root


def _launcher_in(root: Path) -> Path:
    (found,) = root.rglob("bin/skillopt-sleep")
    return found


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SKILLOPT_SLEEP_PYTHON", "CLAUDE_PLUGIN_DATA", "SKILLOPT_SLEEP_ENGINE_DIR", "PYTHONPATH")
    }
    env["SKILLOPT_SLEEP_ENGINE_DIR"] = str(tmp_path / "data")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    env.update(extra)
    return env


def _run(launcher: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """Run from this repository's root: a project holding a ``skillopt_sleep/`` directory must not
    shadow the engine the launcher set up (``python -m`` would import the project's)."""
    return subprocess.run(
        [sys.executable, str(launcher), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        stdin=subprocess.DEVNULL,
        cwd=str(REPO),
    )


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["claude", "codex"])
def test_first_use_sets_up_the_engine_once_then_runs_it(tmp_path, layout):
    root = _plugin(tmp_path, layout)
    launcher, env = _launcher_in(root), _env(tmp_path)
    first = _run(launcher, env, "status", "--last", "2")
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == [FIRST_USE]
    venv = tmp_path / "data" / "engine"
    assert first.stdout.split() == ["fake", "engine", "9.9.1", "args=status", "--last", "2", f"prefix={venv}"]
    marker = json.loads((venv / "skillopt-sleep-engine.json").read_text(encoding="utf-8"))
    assert marker["installer"] == "pip" and marker["source"] == str(root / "engine" if layout == "claude" else root)
    again = _run(launcher, env, "review")
    assert again.returncode == 0 and again.stderr == ""
    assert "args=review" in again.stdout
    assert not list(root.rglob("*.egg-info")) and not (root / "build").exists()  # the plugin dir is untouched


@pytest.mark.slow
def test_a_changed_package_source_is_set_up_again_in_the_same_place(tmp_path):
    root = _plugin(tmp_path)
    launcher, env = _launcher_in(root), _env(tmp_path)
    assert _run(launcher, env, "status").returncode == 0
    _write_package(root / "engine", version="9.9.2")
    out = _run(launcher, env, "status")
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [CHANGED]
    assert out.stdout.split()[:3] == ["fake", "engine", "9.9.2"]
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["engine", "engine-install.log", "engine.lock"]


@pytest.mark.slow
def test_a_failed_setup_says_why_in_one_line_and_leaves_nothing_trusted(tmp_path):
    root = _plugin(tmp_path)
    launcher, env = _launcher_in(root), _env(tmp_path)
    _write_package(root / "engine", pyproject_extra='dependencies = ["skillopt-sleep-no-such-dependency==0.0.1"]\n')
    out = _run(launcher, env, "status")
    assert out.returncode == 1
    (setup, why) = out.stderr.splitlines()
    assert setup == FIRST_USE
    assert why.startswith("skillopt-sleep: could not set up its engine: pip install failed: ")
    assert "skillopt-sleep-no-such-dependency" in why and str(tmp_path / "data" / "engine-install.log") in why
    assert out.stdout == ""
    assert not (tmp_path / "data" / "engine").exists()
    _write_package(root / "engine")  # fixed: the next use sets it up from scratch
    out = _run(launcher, env, "status")
    assert out.returncode == 0 and out.stderr.splitlines() == [FIRST_USE]


@pytest.mark.slow
def test_an_unfinished_setup_is_not_trusted(tmp_path):
    """A venv without the marker (a setup killed half-way) is rebuilt, not run."""
    root = _plugin(tmp_path)
    launcher, env = _launcher_in(root), _env(tmp_path)
    assert _run(launcher, env, "status").returncode == 0
    (tmp_path / "data" / "engine" / "skillopt-sleep-engine.json").unlink()
    out = _run(launcher, env, "status")
    assert out.returncode == 0 and out.stderr.splitlines() == [FIRST_USE]
    assert (tmp_path / "data" / "engine" / "skillopt-sleep-engine.json").is_file()


@pytest.mark.slow
def test_concurrent_first_uses_set_up_once(tmp_path):
    root = _plugin(tmp_path)
    launcher, env = _launcher_in(root), _env(tmp_path)
    procs = [
        subprocess.Popen(
            [sys.executable, str(launcher), "status", str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        for i in range(3)
    ]
    results = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    assert [code for code, _, _ in results] == [0, 0, 0], results
    assert sum(err.count(FIRST_USE) for _, _, err in results) == 1
    assert [out.split()[3] for _, out, _ in results] == ["args=status", "args=status", "args=status"]
    assert sorted(out.split()[4] for _, out, _ in results) == ["0", "1", "2"]


@pytest.mark.slow
def test_uv_is_used_when_it_is_on_path(tmp_path):
    """A ``uv`` on PATH does the setup: here a stand-in that logs its arguments and does what
    ``uv venv`` / ``uv pip install`` do with the standard tools."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "uv").write_text(
        textwrap.dedent(f"""\
        #!{sys.executable}
        import json, os, subprocess, sys
        args = sys.argv[1:]
        with open({str(tmp_path / "uv.log")!r}, "a") as log:
            log.write(json.dumps(args) + "\\n")
        if args[0] == "venv":
            sys.exit(subprocess.call([args[args.index("--python") + 1], "-m", "venv", args[-1]]))
        if args[:2] == ["pip", "install"]:
            sys.exit(subprocess.call([args[args.index("--python") + 1], "-m", "pip", "install", "-q", args[-1]]))
        sys.exit(2)
        """),
        encoding="utf-8",
    )
    (tools / "uv").chmod(0o755)
    root = _plugin(tmp_path)
    env = _env(tmp_path)
    env["PATH"] = f"{tools}{os.pathsep}{env['PATH']}"
    out = _run(_launcher_in(root), env, "status")
    assert out.returncode == 0, out.stderr
    calls = [json.loads(line) for line in (tmp_path / "uv.log").read_text().splitlines()]
    assert [c[:2] for c in calls] == [["venv", "--quiet"], ["pip", "install"]]
    venv = tmp_path / "data" / "engine"
    assert calls[0][-1] == str(venv) and calls[1][calls[1].index("--python") + 1] == str(venv / "bin" / "python")
    assert json.loads((venv / "skillopt-sleep-engine.json").read_text())["installer"] == "uv"


def test_skillopt_sleep_python_is_used_as_it_is(tmp_path):
    root = _plugin(tmp_path)
    env = _env(tmp_path, SKILLOPT_SLEEP_PYTHON=sys.executable)
    out = _run(_launcher_in(root), env, "--version")
    assert out.returncode == 0 and out.stderr == ""
    assert out.stdout.startswith("skillopt-sleep ")  # this test environment's engine, not the plugin's package
    assert not (tmp_path / "data").exists()
    env["SKILLOPT_SLEEP_PYTHON"] = str(tmp_path / "no-python")
    out = _run(_launcher_in(root), env, "status")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr == f"skillopt-sleep: SKILLOPT_SLEEP_PYTHON={tmp_path / 'no-python'} is not an executable\n"


def test_a_plugin_without_its_package_source_says_so(tmp_path):
    root = _plugin(tmp_path)
    shutil.rmtree(root / "engine")
    out = _run(_launcher_in(root), _env(tmp_path), "status")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.startswith("skillopt-sleep: could not set up its engine: the plugin's package source is missing")
    assert out.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (
            "home/.claude/plugins/cache/skillopt-sleep/skillopt-sleep/0.1.0/bin",
            "home/.claude/plugins/data/skillopt-sleep-skillopt-sleep",
        ),
        (
            "home/.codex/plugins/cache/my.market/skillopt-sleep/0.1.0/plugins/codex/bin",
            "home/.codex/plugins/data/skillopt-sleep-my-market",
        ),
    ],
)
def test_the_data_directory_of_an_installed_plugin(tmp_path, monkeypatch, where, expected):
    """Claude Code's plugin data directory (``${CLAUDE_PLUGIN_DATA}``: ``plugins/data/<id>`` with
    the id's other characters as ``-``), and the same place under CODEX_HOME."""
    launcher = _load_launcher()
    for variable in ("SKILLOPT_SLEEP_ENGINE_DIR", "CLAUDE_PLUGIN_DATA"):
        monkeypatch.delenv(variable, raising=False)
    assert launcher.data_dir(tmp_path / where) == tmp_path / expected
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "given"))
    assert launcher.data_dir(tmp_path / where) == tmp_path / "given"
    monkeypatch.setenv("SKILLOPT_SLEEP_ENGINE_DIR", str(tmp_path / "chosen"))
    assert launcher.data_dir(tmp_path / where) == tmp_path / "chosen"


def test_the_data_directory_of_a_claude_plugin_run_where_it_is(tmp_path, monkeypatch):
    """Claude Code runs a directory marketplace's plugin from that directory, and a ``--plugin-dir``
    plugin from wherever it is; its data directory is then ``<plugin>-<marketplace>`` or
    ``<plugin>-inline`` (the Bash tool's environment has no ``CLAUDE_PLUGIN_DATA``)."""
    launcher = _load_launcher()
    for variable in ("SKILLOPT_SLEEP_ENGINE_DIR", "CLAUDE_PLUGIN_DATA"):
        monkeypatch.delenv(variable, raising=False)
    config = tmp_path / "config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    plugin = tmp_path / "clone" / "plugins" / "claude-code"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "skillopt-sleep"}', encoding="utf-8")
    assert launcher.data_dir(plugin / "bin") == config / "plugins" / "data" / "skillopt-sleep-inline"
    (config / "plugins").mkdir(parents=True)
    (config / "plugins" / "known_marketplaces.json").write_text(
        json.dumps(
            {
                "other": {"installLocation": str(tmp_path / "elsewhere")},
                "my.market": {"installLocation": str(tmp_path / "clone")},
            }
        ),
        encoding="utf-8",
    )
    assert launcher.data_dir(plugin / "bin") == config / "plugins" / "data" / "skillopt-sleep-my-market"


def test_the_repository_layouts_find_the_package_source():
    launcher = _load_launcher()
    assert (
        launcher.package_source(REPO / "plugins" / "claude-code" / "bin") == REPO / "plugins" / "claude-code" / "engine"
    )
    assert launcher.package_source(REPO / "plugins" / "codex" / "bin") == REPO
    assert (REPO / "plugins" / "claude-code" / "bin" / "skillopt-sleep").resolve() == LAUNCHER
