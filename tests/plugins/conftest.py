"""What the Claude Code plugin's real-session tests share: its engine, set up once."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

LAUNCHER = Path(__file__).resolve().parents[2] / "plugins" / "claude-code" / "bin" / "skillopt-sleep"


@pytest.fixture(scope="session")
def engine_dir(tmp_path_factory) -> Path:
    """The plugin's engine, set up once by its launcher (a real venv and pip install)."""
    directory = tmp_path_factory.mktemp("plugin-engine")
    env = dict(os.environ, SKILLOPT_SLEEP_ENGINE_DIR=str(directory))
    env.pop("SKILLOPT_SLEEP_PYTHON", None)
    out = subprocess.run(
        [str(LAUNCHER), "--version"], capture_output=True, text=True, env=env, timeout=900, stdin=subprocess.DEVNULL
    )
    assert out.returncode == 0, out.stderr
    return directory
