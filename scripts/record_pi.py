#!/usr/bin/env python3
"""Record genuine pi (``@mariozechner/pi-coding-agent``) sessions for the harvest tests.

Drives the real ``pi`` CLI (``--pi PATH``, or the install ``tests/support/agent_clis.py`` finds)
against ``FakeAnthropic`` on 127.0.0.1, configured as a custom ``anthropic-messages`` provider in
the throwaway ``~/.pi/agent/models.json``, offline (no version check, no telemetry). Records:

- an interactive session in tmux: a file read and a file written (tools the CLI runs), a skill
  invoked with ``/skill:``, a complaint, a pasted secret, ``/compact``, ``/quit``;
- that session resumed interactively (``pi --continue``) with one more typed prompt;
- headless runs: a one-off ``pi -p`` and its headless continuation ``pi -p --continue``.

Writes the session files gzipped under ``tests/fixtures/real/pi/`` and
``tests/fixtures/real/pi_ground_truth.json``. The throwaway root is replaced by
``/tmp/skillopt-rec`` in names and contents (also in pi's ``--<cwd>--`` directory names). The API
key and the pasted secret are generated here at random.

    python scripts/record_pi.py [--out tests/fixtures/real] [--pi PATH] [--keep]
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.anthropic_server import FakeAnthropic, last_user_text  # noqa: E402
from tests.support.cli_run import run_cli  # noqa: E402
from tests.support.http_base import Reply, ToolCall  # noqa: E402
from tests.support.pi_env import pi_env, pi_version  # noqa: E402
from tests.support import recording  # noqa: E402
from tests.support.tui import Tmux, files_containing, settle, wait_until  # noqa: E402

AGENTS_MARKER = "USER-PI-AGENTS-MD-MARKER"
SKILL = "release-notes"


def pi_slug(path: str) -> str:
    """pi's session directory for a cwd: ``--`` + the path without its leading slash, ``/`` as ``-``."""
    return "--" + path.lstrip("/\\").replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def _last_is_tool_result(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    content = messages[-1].get("content") if messages and isinstance(messages[-1], dict) else None
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def pi_model(body: dict[str, Any]) -> str | Reply:
    """Reads or writes a file when asked to, answers everything else with a short echo."""
    if _last_is_tool_result(body):
        return "Done with the file."
    text = last_user_text(body).strip()
    if "summar" in str(body.get("system", "")).lower() and "<conversation>" in text:
        return "## Goal\nRelease notes for v1.2."
    if text.startswith("<skill name="):
        return "Done: the skill " + text.split('"')[1]
    if text.startswith("read "):
        return Reply(text="Reading it.", tool_calls=[ToolCall("read", {"path": "src/app.py"})])
    if text.startswith("write "):
        notes = "# v1.2\n- retry fix\n"
        return Reply(text="Writing it.", tool_calls=[ToolCall("write", {"path": "NOTES.md", "content": notes})])
    return "Done: " + " ".join(text.split())[:80]


class PiRecorder:
    def __init__(self, root: Path, pi: str) -> None:
        self.root = root
        self.pi = pi
        self.project = root / "work" / "acme-invoices"
        (self.project / "src").mkdir(parents=True)
        (self.project / "src" / "app.py").write_text("# TODO: retry\n# TODO: log\n")
        (self.project / "AGENTS.md").write_text(f"# {AGENTS_MARKER}\nRelease notes carry the ticket number.\n")
        self.fake = FakeAnthropic(key="sk-ant-api03-" + secrets.token_urlsafe(30)).start()
        self.fake.responder = pi_model
        self.env = pi_env(root / "pi-user", self.fake)
        self.agent_dir = Path(self.env["HOME"]) / ".pi" / "agent"
        skill = self.agent_dir / "skills" / SKILL
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            f"---\nname: {SKILL}\ndescription: Write release notes.\n---\nList changes; cite the ticket.\n"
        )
        self.secret = recording.pasted_secret()
        self.truth = recording.GroundTruth()  # session file (relative to the sessions folder) -> facts

    def close(self) -> None:
        self.fake.stop()

    @property
    def sessions(self) -> Path:
        return self.agent_dir / "sessions"

    def key(self, path: Path) -> str:
        return "pi/" + path.relative_to(self.sessions).as_posix()

    def note(self, path: Path, **facts: Any) -> None:
        self.truth.note(self.key(path), **facts)

    def _tui(self, name: str, args: list[str], prompts: list[str]) -> None:
        tui = Tmux(name, [self.pi, *args], self.project, self.env)
        try:
            wait_until("the pi prompt", lambda: "claude-sonnet-4-5" in tui.screen(), 60)
            time.sleep(4)  # keys typed while the TUI still starts can be lost
            for prompt in prompts:
                before = len(self.fake.requests)
                tui.type_line(prompt)
                if prompt == "/compact":
                    wait_until("the compaction", lambda: bool(files_containing(self.sessions, '"type":"compaction"')))
                else:
                    wait_until("a model call", lambda b=before: len(self.fake.requests) > b)
                settle(self.fake, quiet=3.0)
            tui.type_line("/quit")
            wait_until("pi to exit", lambda: not tui.alive(), 30)
        finally:
            tui.kill()

    def interactive(self) -> Path:
        typed = [
            "read src/app.py and count the TODO markers",
            "write the release notes for v1.2 into NOTES.md",
            "no - you forgot the ticket number again",
            f"/skill:{SKILL} for v1.3",
            f"the deploy check needs this token: {self.secret} - keep it out of the notes",
        ]
        self._tui("skillopt-rec-pi", [], [*typed[:4], "/compact", typed[4]])
        [path] = files_containing(self.sessions, typed[0])
        self.note(path, kind="interactive", typed=typed)
        return path

    def resumed(self, path: Path) -> None:
        typed = ["thanks - now add the ticket number ACME-42 to NOTES.md"]
        self._tui("skillopt-rec-pi-resume", ["--continue"], typed)
        self.note(path, typed=typed)

    def run(self, *args: str) -> str:
        return run_cli([self.pi, *args], self.project, self.env, timeout=120)

    def headless(self) -> None:
        self.run("-p", "a headless one-off question")
        self.run("-p", "--continue", "a headless follow-up through continue")
        for path in self.sessions.rglob("*.jsonl"):
            if self.key(path) not in self.truth:
                self.note(path, kind="headless")

    def record(self) -> None:
        path = self.interactive()
        self.resumed(path)
        self.headless()


def write_fixtures(recorder: PiRecorder, out: Path) -> None:
    root = str(recorder.root)
    portable = recording.replacing(
        (root, recording.PLACEHOLDER_ROOT), (pi_slug(root)[:-2], pi_slug(recording.PLACEHOLDER_ROOT)[:-2])
    )
    recording.fresh_dir(out / "pi")
    truth: dict[str, Any] = {
        "cli": "pi",
        "package": "@mariozechner/pi-coding-agent",
        "version": pi_version(recorder.pi),
        "placeholder_root": recording.PLACEHOLDER_ROOT,
        "project": portable(str(recorder.project)),
        "secret": recorder.secret,
        "sessions": {},
    }
    for path in sorted(recorder.sessions.rglob("*.jsonl")):
        key = recorder.key(path)
        if key not in recorder.truth:
            continue
        recording.write_gzipped(
            out / (portable(key) + ".gz"), portable(path.read_text(encoding="utf-8")).encode("utf-8")
        )
        truth["sessions"][portable(key)] = recorder.truth[key]
    recording.write_ground_truth(out / "pi_ground_truth.json", truth)


def main(argv: list[str] | None = None) -> int:
    parser = recording.recorder_parser(__doc__)
    parser.add_argument("--pi", default=None, help="the pi executable (default: the pinned install)")
    args = parser.parse_args(argv)
    if args.pi is None:
        from tests.support.pi_env import installed_cli

        args.pi = installed_cli()
    if not args.pi or not os.access(args.pi, os.X_OK) or not shutil.which("tmux"):
        print("record_pi: needs tmux and the pi CLI (--pi PATH)", file=sys.stderr)
        return 2
    recorder = recording.record(lambda root: PiRecorder(root, args.pi), write_fixtures, args.out, args.keep)
    print(json.dumps({"out": str(args.out), "sessions": len(recorder.truth)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
