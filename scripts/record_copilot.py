#!/usr/bin/env python3
"""Record genuine GitHub Copilot CLI sessions for the harvest tests (installs nothing).

Drives the real ``copilot`` (``--cli``, or the cache install of the version named in
``scripts/agent_clis.versions``) against a scripted ``FakeAnthropic`` on 127.0.0.1 through its
"bring your own key" provider settings, offline, in a throwaway HOME: an interactive TUI session
in tmux (a file read, a file written, a complaint, a pasted secret, a sub-agent), that session
resumed interactively, then headless runs (``-p``; ``-p --resume=<id>`` on the interactive
session; ``-p --continue``), then the interactive session resumed in the TUI once more. Each session's ``events.jsonl`` is copied, gzipped, into
``tests/fixtures/real/copilot/`` and described in ``tests/fixtures/real/copilot_ground_truth.json``:
interactive or headless, the prompts a person typed into it (once each, in order), and how many
sub-agents ran inside it (they write into their parent's file).

The throwaway root is replaced by ``/tmp/skillopt-rec``. The API key and the pasted secret are
generated here at random.

    python scripts/record_copilot.py [--out tests/fixtures/real] [--cli PATH] [--keep]
"""

from __future__ import annotations

import json
import secrets
import shutil
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.agent_clis import install_command  # noqa: E402
from tests.support.anthropic_server import FakeAnthropic  # noqa: E402
from tests.support.cli_run import run_cli, sample_project  # noqa: E402
from tests.support.copilot_cli import copilot_env, copilot_model, find_cli, version  # noqa: E402
from tests.support import recording  # noqa: E402
from tests.support.tui import Tmux, settle, wait_until  # noqa: E402

PROJECT_MARKER = "PROJECT-COPILOT-INSTRUCTIONS-MARKER"
USER_MARKER = "USER-COPILOT-INSTRUCTIONS-MARKER"
AGENTS_MARKER = "PROJECT-AGENTS-MD-MARKER"


class Recorder:
    def __init__(self, root: Path, cli: str) -> None:
        self.root = root
        self.cli = cli
        self.project = sample_project(root)
        self.fake = FakeAnthropic(key="sk-ant-api03-" + secrets.token_urlsafe(30)).start()
        self.fake.responder = copilot_model(self.project)
        self.env = copilot_env(root / "copilot-user", self.fake, trust=(self.project,))
        self.home = Path(self.env["HOME"]) / ".copilot"
        self.secret = recording.pasted_secret()
        self.truth = recording.GroundTruth()  # session id -> facts
        # The person's own instruction files: injected context, never prompts.
        (self.home / "copilot-instructions.md").write_text(f"# {USER_MARKER}\nAlways answer briefly.\n")
        (self.project / ".github").mkdir()
        (self.project / ".github" / "copilot-instructions.md").write_text(f"# {PROJECT_MARKER}\nUse Refs: trailers.\n")
        (self.project / "AGENTS.md").write_text(f"# {AGENTS_MARKER}\nRelease notes have a ## Testing section.\n")

    def close(self) -> None:
        self.fake.stop()

    def sessions(self) -> dict[str, Path]:
        return {p.parent.name: p for p in (self.home / "session-state").glob("*/events.jsonl")}

    def run(self, *args: str) -> str:
        return run_cli([self.cli, *args], self.project, self.env, timeout=180)

    def tui(self, name: str, args: list[str], typed: list[str]) -> None:
        tui = Tmux(name, [self.cli, "--allow-all-tools", *args], self.project, self.env)
        try:
            wait_until("the copilot prompt", lambda: "/ commands" in tui.screen(), 90)
            time.sleep(3)
            for prompt in typed:
                before = len(self.fake.requests)
                tui.type_line(prompt)
                wait_until("a model call", lambda b=before: len(self.fake.requests) > b)
                settle(self.fake, quiet=4.0)
            tui.type_line("/exit")
            wait_until("copilot to exit", lambda: not tui.alive(), 60)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; the screen:\n{tui.screen()}") from None
        finally:
            tui.kill()

    def interactive(self) -> str:
        typed = [
            "read src/app.py and count the TODO markers",
            "write NOTES.md with the release notes for v1.2",
            "no - you forgot the ticket number again, it is ACME-42",
            f"the deploy check needs this token: {self.secret} - keep it out of the notes",
            "please delegate counting the TODO markers to a helper",
        ]
        before = set(self.sessions())
        self.tui("skillopt-rec-copilot", [], typed)
        [session_id] = set(self.sessions()) - before
        self.truth.note(session_id, kind="interactive", typed=typed)
        return session_id

    def resumed(self, session_id: str, typed: list[str]) -> None:
        self.tui("skillopt-rec-copilot-resume", [f"--resume={session_id}"], typed)
        self.truth.note(session_id, kind="interactive", typed=typed)

    def headless(self, session_id: str) -> None:
        self.run("-p", "headless follow-up through resume", f"--resume={session_id}", "--allow-all-tools")
        before = set(self.sessions())
        self.run("-p", "a headless one-off question", "--allow-all-tools")
        [one_off] = set(self.sessions()) - before
        self.truth.note(one_off, kind="headless")
        self.run("-p", "headless follow-up through continue", "--continue", "--allow-all-tools")
        for other in set(self.sessions()) - set(self.truth):
            self.truth.note(other, kind="headless")

    def record(self) -> None:
        session_id = self.interactive()
        self.resumed(session_id, ["add a Testing section to NOTES.md"])
        self.headless(session_id)
        # back in the TUI after a headless turn: the session's mode switches back
        self.resumed(session_id, ["now bump the version in NOTES.md to v1.3"])


def write_fixtures(recorder: Recorder, out: Path) -> None:
    """Copy each session's events.jsonl (gzipped, the throwaway root replaced) and the ground truth."""
    portable = recording.replacing((str(recorder.root), recording.PLACEHOLDER_ROOT))
    recording.fresh_dir(out / "copilot")
    truth: dict[str, Any] = {
        "cli": "copilot",
        "package": "@github/copilot",
        "version": version(),
        "placeholder_root": recording.PLACEHOLDER_ROOT,
        "project": portable(str(recorder.project)),
        "secret": recorder.secret,
        "injected_markers": [USER_MARKER, PROJECT_MARKER, AGENTS_MARKER],
        "sessions": {},
    }
    for session_id, path in sorted(recorder.sessions().items()):
        key = f"copilot/session-state/{session_id}/events.jsonl"
        data = portable(path.read_text(encoding="utf-8")).encode("utf-8")
        recording.write_gzipped(out / (key + ".gz"), data)
        # sub-agents write into their parent's file (events with an agentId), never a file of their own
        subagents = sum(1 for line in data.splitlines() if b'"type":"subagent.started"' in line)
        truth["sessions"][key] = {**recorder.truth[session_id], "inline_subagents": subagents}
    recording.write_ground_truth(out / "copilot_ground_truth.json", truth)


def main(argv: list[str] | None = None) -> int:
    parser = recording.recorder_parser(__doc__)
    parser.add_argument("--cli", default=find_cli())
    args = parser.parse_args(argv)
    if not args.cli or not shutil.which("tmux"):
        print(
            f"record_copilot: needs tmux and the real copilot CLI (--cli, or {install_command('copilot')})",
            file=sys.stderr,
        )
        return 2
    recorder = recording.record(lambda root: Recorder(root, args.cli), write_fixtures, args.out, args.keep)
    print(json.dumps({"out": str(args.out), "sessions": len(recorder.truth)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
