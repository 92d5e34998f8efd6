#!/usr/bin/env python3
"""Record a genuine OpenCode session database for the harvest tests (installs nothing).

Drives the real ``opencode`` CLI (``--cli``, or the release ``scripts/agent_clis.versions`` pins,
from the install cache of ``tests/support/agent_clis.py``) as ``tests/support/opencode_session.py``
does, against a scripted fake model on 127.0.0.1, in a throwaway HOME: two interactive TUI sessions through tmux (typed
prompts, a file read, a file write, a sub-agent through the ``task`` tool, a complaint, a pasted
secret, a ``!`` shell command, ``/compact``), a TUI resume of the first (``opencode --session``), then headless runs: a one-off
(``opencode run``), its continuation (``run --continue``) and a headless turn appended to the
second interactive session (``run --session``).

The database (checkpointed, the throwaway root replaced by ``/tmp/skillopt-rec`` in every text
column) is written gzipped to ``tests/fixtures/real/opencode/opencode.db.gz`` with
``tests/fixtures/real/opencode_ground_truth.json``: for every session, whether it is interactive,
headless or a sub-agent, and the prompts a person typed into it (once each, in order). The API key
and the pasted secret are generated here at random; the ground truth names the secret only by its
SHA-256 and writes ``{SECRET}`` where it was typed.

    python scripts/record_opencode.py [--out tests/fixtures/real] [--cli PATH] [--keep]
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from skillopt_sleep.sources.opencode import snapshot  # noqa: E402
from tests.support.agent_clis import install_command, install_dir, pinned  # noqa: E402
from tests.support.chat_server import FakeChat, last_role, last_user_message, message_text  # noqa: E402
from tests.support.cli_run import sample_project  # noqa: E402
from tests.support.http_base import Reply, ToolCall  # noqa: E402
from tests.support.opencode_session import OpenCodeUser, database  # noqa: E402
from tests.support import recording  # noqa: E402

SECRET_PLACEHOLDER = "{SECRET}"
TITLE = "Release notes work"
AFTER_TOOL = "Tool finished."
COMPACTION_SUMMARY = "SUMMARY: release notes and a changelog entry so far."
SUBAGENT_PROMPT = "Count the TODO markers under src/ and report the number."


def opencode_model(project: Path):
    """The scripted model: reads, writes and delegates when asked to, echoes everything else."""

    def respond(body: dict[str, Any]) -> str | Reply:
        messages = body.get("messages") or []
        system = message_text(messages[0]) if messages else ""
        if "title generator" in system:
            return TITLE
        if "summarization agent" in system:
            return COMPACTION_SUMMARY
        if last_role(body) == "tool":
            return AFTER_TOOL
        text = last_user_message(body).strip()
        if text == SUBAGENT_PROMPT:
            return "3 TODO markers."
        if text.startswith("please read src/app.py"):
            return Reply(text="Reading it.", tool_calls=[ToolCall("read", {"filePath": str(project / "src/app.py")})])
        if text.startswith("add a changelog entry"):
            entry = {"filePath": str(project / "CHANGELOG.md"), "content": "## 1.2\n- Retry failed uploads.\n"}
            return Reply(text="Writing it.", tool_calls=[ToolCall("write", entry)])
        if "delegate" in text:
            task = {"description": "Count TODO markers", "prompt": SUBAGENT_PROMPT, "subagent_type": "general"}
            return Reply(text="Delegating that.", tool_calls=[ToolCall("task", task)])
        return "Done: " + " ".join(text.split())[:80]

    return respond


def sessions(db: Path) -> list[dict[str, Any]]:
    """Every session with its user prompts, oldest first (read from a private copy)."""
    if not db.exists():
        return []
    with snapshot(str(db)) as connection:
        rows = connection.execute("SELECT id, parent_id, permission FROM session ORDER BY time_created, id").fetchall()
        found = []
        for session_id, parent, permission in rows:
            prompts = [
                text
                for (text,) in connection.execute(
                    "SELECT json_extract(p.data, '$.text') FROM message m JOIN part p ON p.message_id = m.id "
                    "WHERE m.session_id = ? AND json_extract(m.data, '$.role') = 'user' "
                    "AND json_extract(p.data, '$.type') = 'text' ORDER BY m.time_created, p.id",
                    (session_id,),
                )
            ]
            found.append({"id": session_id, "parent": parent, "permission": permission, "prompts": prompts})
        return found


class Recorder:
    def __init__(self, root: Path, cli: Path) -> None:
        self.root = root
        self.project = sample_project(
            root, {"AGENTS.md": "# Project rules\nRelease notes have a ## Testing section.\n"}
        )
        self.home = root / "opencode-user"
        self.fake = FakeChat(key="sk-" + secrets.token_urlsafe(30)).start()
        self.fake.responder = opencode_model(self.project)
        self.user = OpenCodeUser(str(cli), self.project, self.home, self.fake)
        self.secret = recording.pasted_secret()
        self.truth = recording.GroundTruth()  # session id -> facts

    def close(self) -> None:
        self.fake.stop()

    def session_typed(self, first_prompt: str) -> dict[str, Any]:
        [found] = [s for s in sessions(database(self.home)) if s["prompts"][:1] == [first_prompt]]
        return found

    def record(self) -> None:
        first = [
            "write the release notes for v1.2",
            "please read src/app.py and list the TODOs",
            "no — you forgot the ticket number again",
            f"here is the deploy token, keep it out of the notes: {self.secret}",
        ]
        self.user.tui(first)
        session_a = self.session_typed(first[0])["id"]
        second = [
            "add a changelog entry for the retry fix",
            "please delegate counting the TODO markers to a helper",
            "thanks, that works",
        ]
        commands = ["!ls src", "/compact"]  # a shell command the TUI runs itself, a compaction
        after_compact = ["now the release notes again, shorter"]
        self.user.tui(second + commands + after_compact)
        session_b = self.session_typed(second[0])["id"]
        resumed = ["and add the ticket number ACME-42 to the notes"]
        self.user.tui(resumed, "--session", session_a)
        self.truth.note(session_a, kind="interactive", typed=first + resumed)
        self.truth.note(session_b, kind="interactive", typed=second + after_compact, commands=commands)

        self.user.run("a headless one-off question")
        self.user.run("--continue", "headless follow-up through continue")
        headless_turn = "headless follow-up through session"
        self.user.run("--session", session_b, headless_turn)
        # `opencode run` wraps an argument holding a space in double quotes
        self.truth.note(session_b, headless_turns=[f'"{headless_turn}"'])
        for found in sessions(database(self.home)):
            if found["id"] in self.truth:
                continue
            kind = "subagent" if found["parent"] else "headless"
            self.truth.note(found["id"], kind=kind, parent=found["parent"] or None)


def write_fixtures(recorder: Recorder, out: Path) -> None:
    """The database (one checkpointed file, the throwaway root replaced) and the ground truth."""
    root = str(recorder.root)
    target = out / "opencode"
    recording.fresh_dir(target)
    target.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "opencode.db"
        with snapshot(str(database(recorder.home))) as connection:
            connection.execute("VACUUM INTO ?", (str(copy),))
        portable = sqlite3.connect(copy)
        try:
            tables = [name for (name,) in portable.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                for column in portable.execute(f"PRAGMA table_info({table})").fetchall():
                    if column[2].lower() == "text":
                        name = column[1]
                        portable.execute(
                            f"UPDATE {table} SET {name} = replace({name}, ?, ?) WHERE {name} LIKE ?",
                            (root, recording.PLACEHOLDER_ROOT, f"%{root}%"),
                        )
            portable.commit()
            portable.execute("VACUUM")
        finally:
            portable.close()
        data = copy.read_bytes()
    if root.encode() in data:
        raise RuntimeError("the throwaway root is still in the database")
    recording.write_gzipped(target / "opencode.db.gz", data)
    portable_text = recording.replacing((root, recording.PLACEHOLDER_ROOT), (recorder.secret, SECRET_PLACEHOLDER))

    truth = {
        "cli": "opencode",
        "package": pinned()["opencode"][0],
        "version": recorder.user.version(),
        "placeholder_root": recording.PLACEHOLDER_ROOT,
        "project": portable_text(str(recorder.project)),
        "database": "opencode/opencode.db",
        "secret_sha256": hashlib.sha256(recorder.secret.encode()).hexdigest(),
        "sessions": {
            session_id: {
                key: [portable_text(p) for p in value] if isinstance(value, list) else value
                for key, value in facts.items()
            }
            for session_id, facts in recorder.truth.items()
        },
    }
    recording.write_ground_truth(out / "opencode_ground_truth.json", truth)


def main(argv: list[str] | None = None) -> int:
    parser = recording.recorder_parser(__doc__)
    parser.add_argument("--cli", type=Path, default=None, help="the opencode executable")
    args = parser.parse_args(argv)
    cli = args.cli or install_dir("opencode") / "node_modules" / ".bin" / "opencode"
    if not cli.exists() or not shutil.which("tmux"):
        print(
            f"record_opencode: needs tmux and the CLI ({install_command('opencode')}, or --cli PATH)", file=sys.stderr
        )
        return 2
    recorder = recording.record(lambda root: Recorder(root, cli), write_fixtures, args.out, args.keep)
    print(json.dumps({"out": str(args.out), "sessions": len(recorder.truth)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
