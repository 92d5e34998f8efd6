"""Running a real agent CLI headless, for the recorders and the real-CLI tests."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


def run_cli(argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float = 180) -> str:
    """``argv`` run in ``cwd`` with exactly ``env`` and no stdin; its stdout, or a RuntimeError
    naming the command and the end of its stderr."""
    out = subprocess.run(
        list(argv), cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    if out.returncode != 0:
        name = " ".join([Path(argv[0]).name, *argv[1:3]])
        raise RuntimeError(f"{name} failed ({out.returncode}): {out.stderr[-800:]}")
    return out.stdout
