"""Regenerate the demo's bundled Claude Code transcripts (skillopt_sleep/data/demo/claude/).

The demo project is a small invoicing service, ``acme-invoices``. Over two weeks the developer
asked Claude Code for the same few kinds of work again and again — commit messages, PR
descriptions, release notes, unit tests — and complained when the reply missed the team's
conventions. A few one-off requests are mixed in. The files are written in Claude Code's
transcript format (DESIGN §9) with the placeholder cwd below; ``demo`` rewrites it to the
throwaway project it creates.

    python scripts/make_demo_transcripts.py
"""

from __future__ import annotations

import json
import random
import re
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

PLACEHOLDER_CWD = "/home/dev/acme-invoices"
OUT = Path(__file__).resolve().parent.parent / "skillopt_sleep" / "data" / "demo" / "claude"

# (kind, request, first reply, complaint or None, praise or None)
SESSIONS = [
    (
        "commit",
        "Write a commit message for the changes to invoice_pdf.py (the new footer layout).",
        "Improve invoice PDF footer layout\n\nMove the totals block above the footer and align the VAT line.",
        'You forgot the "Refs: ACME-" ticket trailer again. Every commit needs it.',
        None,
    ),
    (
        "commit",
        "Can you write the commit message for the currency rounding fix in money.py?",
        "Fix currency rounding in money.py\n\nUse Decimal quantize with ROUND_HALF_EVEN.",
        'Missing the "Refs: ACME-" trailer. Please add it.',
        None,
    ),
    (
        "commit",
        "commit message please for the retry logic I added to the mailer",
        "Add retry with backoff to the invoice mailer",
        'Again: the commit message needs the "Refs: ACME-" ticket trailer.',
        None,
    ),
    (
        "commit",
        "Write a commit message for the migration that adds the due_date index.",
        "Add index on invoices.due_date\n\nSpeeds up the overdue report.\n\nRefs: ACME-412",
        None,
        "Perfect, thanks!",
    ),
    (
        "commit",
        "write a commit message for the customer export CSV changes",
        "Export customers as CSV with UTF-8 BOM",
        'You forgot "Refs: ACME-" at the end.',
        None,
    ),
    (
        "pr",
        "Write the PR description for the tax rounding branch.",
        "This PR fixes tax rounding for multi-line invoices. TODO: add screenshots.",
        'The PR description needs a "## Testing" section, and don\'t include "TODO" items in it.',
        None,
    ),
    (
        "pr",
        "Please write a PR description for the PDF footer work.",
        "## Summary\nReworks the PDF footer.\n\nTODO: check RTL languages.",
        'Where is the "## Testing" section? Also do not leave "TODO" notes in PR descriptions.',
        None,
    ),
    (
        "pr",
        "Draft the pull request description for the mailer retries.",
        "## Summary\nAdds retries to the mailer.\n\n## Testing\nUnit tests for the backoff schedule.",
        None,
        "Great, that's exactly it.",
    ),
    (
        "pr",
        "write a PR description for the customer CSV export branch",
        "## Summary\nCSV export for customers.",
        'Missing the "## Testing" section again.',
        None,
    ),
    (
        "pr",
        "Can you write up the PR description for the due_date index migration?",
        "Adds an index. TODO: benchmark on staging.",
        'Please never put "TODO" in a PR description, and it needs a "## Testing" section.',
        None,
    ),
    (
        "release",
        "Draft the release notes for v1.4.0.",
        "# v1.4.0\n\n## Fixes\n- Currency rounding\n\nThanks to all contributors!",
        'The release notes are missing the "## Breaking changes" section; we always list it, even if empty.',
        None,
    ),
    (
        "release",
        "Write release notes for v1.4.1 from the merged PRs.",
        "# v1.4.1\n\nSmall release with a footer fix.",
        'You forgot the "## Fixes" section and the "## Breaking changes" section.',
        None,
    ),
    (
        "release",
        "Please draft the v1.5.0 release notes.",
        "# v1.5.0\n\n## Fixes\n- Mailer retries\n\n## Breaking changes\nNone.",
        None,
        "lgtm, thanks",
    ),
    (
        "release",
        "release notes for v1.5.1 please",
        "# v1.5.1\n\n## Fixes\n- CSV export encoding",
        'Needs the "## Breaking changes" section.',
        None,
    ),
    (
        "test",
        "Add a unit test for parse_amount in money.py.",
        "def test_parse_amount():\n    assert parse_amount('1.50') == Decimal('1.50')",
        'Use "pytest.mark.parametrize" for the cases, like the rest of tests/.',
        None,
    ),
    (
        "test",
        "Write a unit test for the invoice number formatter.",
        "def test_format_number():\n    assert format_number(7) == 'INV-0007'",
        'We always use "pytest.mark.parametrize" in this repo. You forgot it again.',
        None,
    ),
    (
        "test",
        "add a unit test for the overdue filter in reports.py",
        "@pytest.mark.parametrize('days', [0, 1, 30])\ndef test_overdue(days): ...",
        None,
        "Thanks, works.",
    ),
    (
        "test",
        "Please add a unit test for the VAT calculation helper.",
        "def test_vat():\n    assert vat(Decimal('100')) == Decimal('21')",
        'Missing "pytest.mark.parametrize" again.',
        None,
    ),
    (
        "oneoff",
        "Why does the docker build take so long on CI?",
        "The pip install layer is not cached because requirements.txt is copied after the source.",
        None,
        "Ah, makes sense, thanks.",
    ),
    (
        "oneoff",
        "Rename the variable tmp in exporter.py to something clearer.",
        "Renamed tmp to rows_buffer in exporter.py.",
        None,
        None,
    ),
    (
        "oneoff",
        "What's the difference between ROUND_HALF_UP and ROUND_HALF_EVEN?",
        "ROUND_HALF_EVEN rounds ties to the nearest even digit (banker's rounding).",
        None,
        None,
    ),
]

FIXED_REPLY = "Updated as requested."
TOOLS = {
    "commit": [("Bash", {"command": "git diff --staged"})],
    "pr": [("Bash", {"command": "git log --oneline main..HEAD"})],
    "release": [("Bash", {"command": "git log --merges --oneline v1.3.0..HEAD"})],
    "test": [
        ("Read", {"file_path": f"{PLACEHOLDER_CWD}/src/acme/money.py"}),
        ("Write", {"file_path": f"{PLACEHOLDER_CWD}/tests/test_money.py", "content": "..."}),
    ],
    "oneoff": [("Read", {"file_path": f"{PLACEHOLDER_CWD}/Dockerfile"})],
}


def slug(cwd: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


class Writer:
    def __init__(self, session_id: str, start: datetime, branch: str):
        self.session_id = session_id
        self.t = start
        self.branch = branch
        self.parent: str | None = None
        self.lines: list[dict] = []

    def _base(self, kind: str) -> dict:
        self.t += timedelta(seconds=random.randint(3, 40))
        rec: dict[str, Any] = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": PLACEHOLDER_CWD,
            "sessionId": self.session_id,
            "version": "2.0.14",
            "gitBranch": self.branch,
            "entrypoint": "cli",
            "type": kind,
            "uuid": str(uuid.uuid4()),
            "timestamp": self.t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.t.microsecond // 1000:03d}Z",
        }
        self.parent = rec["uuid"]
        return rec

    def user(self, content, **extra) -> None:
        rec = self._base("user")
        rec["message"] = {"role": "user", "content": content}
        rec.update(extra)
        self.lines.append(rec)

    def assistant(self, blocks: list[dict]) -> None:
        msg_id = "msg_" + uuid.uuid4().hex[:24]
        for block in blocks:  # one API message spread over several records, as Claude Code does
            rec = self._base("assistant")
            rec["message"] = {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [block],
                "usage": {"input_tokens": 1200, "output_tokens": 90},
            }
            rec["requestId"] = "req_" + uuid.uuid4().hex[:20]
            self.lines.append(rec)

    def tool_round(self, name: str, tool_input: dict) -> None:
        tool_id = "toolu_" + uuid.uuid4().hex[:20]
        self.assistant([{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}])
        self.user(
            [{"type": "tool_result", "tool_use_id": tool_id, "content": "(output omitted)"}],
            toolUseResult={"stdout": "(output omitted)", "stderr": ""},
        )


def main() -> None:
    random.seed(20261101)
    OUT.mkdir(parents=True, exist_ok=True)
    project_dir = OUT / "projects" / slug(PLACEHOLDER_CWD)
    project_dir.mkdir(parents=True, exist_ok=True)
    for old in project_dir.glob("*.jsonl"):
        old.unlink()
    day = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)
    order = list(range(len(SESSIONS)))
    random.shuffle(order)
    for n, i in enumerate(order):
        kind, request, reply, complaint, praise = SESSIONS[i]
        start = day + timedelta(days=n // 2, hours=(n % 2) * 5, minutes=random.randint(0, 50))
        session_id = str(uuid.UUID(int=random.getrandbits(128)))
        w = Writer(session_id, start, branch="main" if kind in ("release", "oneoff") else f"feature/{kind}-{n}")
        w.lines.append({"type": "summary", "summary": f"{kind} work", "leafUuid": str(uuid.uuid4())})
        w.user(
            "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>",
            isMeta=False,
        )
        w.user(
            "Caveat: The messages below were generated by the user while running local commands. "
            "DO NOT respond to these messages or otherwise consider them in your response unless "
            "the user explicitly asks you to.",
            isMeta=True,
        )
        w.user(request)
        for name, tool_input in TOOLS[kind]:
            w.tool_round(name, tool_input)
        w.assistant(
            [
                {"type": "thinking", "thinking": "Let me look at the change.", "signature": "sig"},
                {"type": "text", "text": reply},
            ]
        )
        if complaint:
            w.user(complaint)
            w.assistant([{"type": "text", "text": FIXED_REPLY}])
        if praise:
            w.user(praise)
            w.assistant([{"type": "text", "text": "Glad it helps."}])
        path = project_dir / f"{session_id}.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for rec in w.lines:
                fh.write(json.dumps(rec) + "\n")
    print(f"wrote {len(order)} sessions to {project_dir}")


if __name__ == "__main__":
    main()
