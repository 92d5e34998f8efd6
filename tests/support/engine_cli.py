"""The engine's CLI as a person runs it: a new ``python -m skillopt_sleep`` process with its own
SKILLOPT_SLEEP_HOME and PATH, and none of the provider keys or backend of the developer's shell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_cli(*args: str, home: Path, path: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SKILLOPT_SLEEP_BACKEND", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")
    }
    env.update({"SKILLOPT_SLEEP_HOME": str(home), "PATH": path, **(extra or {})})
    return subprocess.run(
        [sys.executable, "-m", "skillopt_sleep", *args], capture_output=True, text=True, env=env, timeout=300
    )
