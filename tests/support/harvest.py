"""Constants and helpers shared by the harvest tests (tests/sources): the fixture transcripts' ids and
builders for records appended to them."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
PROJECT = "/work/demo-app"

CLAUDE_MAIN = "0b5c2d1e-6f7a-4b8c-9d0e-1f2a3b4c5d61"  # commit message + feedback
CLAUDE_BACKEND = "1c6d3e2f-7a8b-4c9d-8e1f-2a3b4c5d6e72"  # subdir cwd, truncated last line
CLAUDE_HEADLESS = "2d7e4f30-8b9c-4dae-9f20-3b4c5d6e7f83"
CLAUDE_REPLAY = "3e8f5041-9cad-4ebf-a031-4c5d6e7f8094"
CLAUDE_LEGACY = "4f906152-adbe-4fc0-b142-5d6e7f8091a5"  # /work/demo-app-legacy
CODEX_MAIN = "019a9f3c-1d2e-7f40-8a1b-2c3d4e5f6071"
CODEX_EXEC = "019a9f3c-2e3f-7051-9b2c-3d4e5f607182"
CODEX_REPLAY = "019a9f3c-3f40-7162-8c3d-4e5f60718293"
CODEX_ARCHIVED = "019a9f3c-4051-7273-9d4e-5f6071829304"

# Prompts planted in sessions that must never be harvested as the user's work.
FORBIDDEN = ("SIDECHAIN", "SUBAGENT", "HEADLESS", "REPLAY PROMPT", "EXEC PROMPT", "OTHER PROJECT")


def claude_file(claude_home: Path, session_id: str) -> Path:
    (match,) = claude_home.glob(f"projects/*/{session_id}.jsonl")
    return match


def codex_file(codex_home: Path, session_id: str) -> Path:
    (match,) = codex_home.glob(f"**/rollout-*-{session_id}.jsonl")
    return match


def append_records(path: Path, *records: object) -> int:
    """Append JSON lines (dicts) or raw strings; return the number of bytes appended."""
    data = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records).encode()
    with open(path, "ab") as handle:
        handle.write(data)
    return len(data)


def claude_user(text: str, ts: str = "2026-11-22T10:00:00.000Z", **extra: object) -> dict:
    record = {
        "type": "user",
        "isSidechain": False,
        "userType": "external",
        "cwd": PROJECT,
        "sessionId": CLAUDE_MAIN,
        "entrypoint": "cli",
        "gitBranch": "main",
        "message": {"role": "user", "content": text},
        "uuid": f"u-{ts}",
        "timestamp": ts,
    }
    record.update(extra)
    return record


def claude_assistant(msg_id: str, text: str, ts: str = "2026-11-22T10:00:05.000Z") -> dict:
    return {
        "type": "assistant",
        "isSidechain": False,
        "cwd": PROJECT,
        "sessionId": CLAUDE_MAIN,
        "entrypoint": "cli",
        "message": {
            "id": msg_id,
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": text}],
        },
        "uuid": f"a-{ts}-{msg_id}",
        "timestamp": ts,
    }


def by_id(result) -> dict:
    return {d.session_id: d for d in result.digests}
