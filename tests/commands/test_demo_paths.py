"""The demo's transcripts name the demo project's real path wherever the bundled ones name their
sample project, as valid JSON whatever the path holds: a ``"`` or ``\\`` in the demo directory
once left lines that were no JSON (and that every reader skipped)."""

from __future__ import annotations

import json
from pathlib import Path

from skillopt_sleep.cli import main
from skillopt_sleep.commands.demo import PLACEHOLDER_CWD


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_a_demo_directory_with_quotes_and_backslashes(tmp_path: Path, capsys) -> None:
    root = tmp_path / 'my "demo" \\ dir'
    assert main(["demo", "--dir", str(root), "--quiet", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    project = str(root.resolve() / "acme-invoices")
    lines = [
        line
        for f in sorted((root / "claude" / "projects").glob("*/*.jsonl"))
        for line in f.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    assert len(lines) > 100
    records = [json.loads(line) for line in lines]  # every line is JSON
    texts = [s for r in records for s in _strings(r)]
    assert not any(PLACEHOLDER_CWD in s for s in texts)  # the sample path is gone everywhere ...
    assert any(s.startswith(project + "/") for s in texts)  # ... file paths name the demo project
    assert {r["cwd"] for r in records if "cwd" in r} == {project}
    # and the night saw every session and staged a proposal in the demo project
    assert data["n_sessions"] >= 15 and data["staging_dir"].startswith(project)
