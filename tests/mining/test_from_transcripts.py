"""From Claude Code transcripts to checks: complaints in people's own words, through the real
harvester (feedback classification) and the miner."""

from __future__ import annotations

import json
import re
from pathlib import Path

from skillopt_sleep.mining import mine
from skillopt_sleep.mining.checks import limit_check
from skillopt_sleep.sources import harvest

SESSIONS = [
    (
        "write the commit message for the staged change",
        "feat: retry uploads",
        "you forgot the Refs: ACME-123 trailer again",
    ),
    (
        "commit msg for what's staged please",
        "fix: handle empty invoices\n\nTODO: tests",
        "no TODOs in commit messages, please. And keep it to 3 lines",
    ),
    (
        "Write a commit message for my staged changes",
        "chore: bump deps " + "x" * 400,
        "way too verbose - max 300 chars",
    ),
]


def _write_session(projects: Path, project: Path, n: int, request: str, reply: str, complaint: str) -> None:
    sid = f"00000000-0000-4000-8000-00000000000{n}"
    folder = projects / re.sub(r"[^A-Za-z0-9]", "-", str(project))
    folder.mkdir(parents=True, exist_ok=True)
    common = {
        "isSidechain": False,
        "cwd": str(project),
        "sessionId": sid,
        "entrypoint": "cli",
        "gitBranch": "main",
        "version": "2.1.0",
    }
    records = []
    for i, (role, text) in enumerate(
        [("user", request), ("assistant", reply), ("user", complaint), ("assistant", "Sorry, fixed.")]
    ):
        ts = f"2026-11-2{n}T10:00:{i:02d}.000Z"
        if role == "user":
            message = {"role": "user", "content": text}
            records.append(
                {
                    **common,
                    "type": "user",
                    "userType": "external",
                    "message": message,
                    "uuid": f"u{n}{i}",
                    "timestamp": ts,
                }
            )
        else:
            message = {
                "id": f"m{n}{i}",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": text}],
            }
            records.append({**common, "type": "assistant", "message": message, "uuid": f"a{n}{i}", "timestamp": ts})
    (folder / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_complaints_in_own_words_become_the_kinds_checks(tmp_path: Path) -> None:
    project = tmp_path / "acme"
    project.mkdir()
    claude = tmp_path / "claude"
    for n, (request, reply, complaint) in enumerate(SESSIONS, 1):
        _write_session(claude / "projects", project, n, request, reply, complaint)
    result = harvest(project, source="claude", claude_home=claude, state_dir=None)
    assert len(result.digests) == 3
    assert all(d.feedback and d.feedback[0].polarity == "negative" for d in result.digests)

    mined = mine(result.digests)
    assert len(mined.tasks) == 3 and mined.groups == 1  # three phrasings, one kind
    checks = mined.tasks[0].judge["checks"]
    for expected in (
        {"op": "regex", "arg": r"Refs: ACME-\d+"},
        {"op": "not_contains", "arg": "TODO"},
        limit_check("lines", 3),
        {"op": "max_chars", "arg": 300},
    ):
        assert expected in checks
    assert all(t.judge == mined.tasks[0].judge for t in mined.tasks)
