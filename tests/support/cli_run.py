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


def sample_project(root: Path, extra: dict[str, str] | None = None) -> Path:
    """``root/work/acme-invoices``: the small git project the recorders' sessions work in (a
    source file with three TODO markers, and ``extra`` files by relative path), committed."""
    project = root / "work" / "acme-invoices"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("# TODO: retry\n# TODO: log\n# TODO: test\n")
    for name, text in (extra or {}).items():
        (project / name).write_text(text)
    git = ["git", "-C", str(project), "-c", "user.name=Rec", "-c", "user.email=rec@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True, timeout=30)
    subprocess.run([*git, "add", "-A"], check=True, timeout=30)
    subprocess.run([*git, "commit", "-qm", "start"], check=True, timeout=30)
    return project
