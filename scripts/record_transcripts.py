#!/usr/bin/env python3
"""Record genuine Claude Code / Codex transcripts for the harvest tests (installs nothing).

Drives the real ``claude`` and ``codex`` CLIs (``SKILLOPT_REAL_CLIS`` or ``--clis``; see
``scripts/install_real_clis.sh``) against the fake providers of ``tests/support`` on 127.0.0.1, in a
throwaway HOME / CODEX_HOME: interactive TUI sessions through tmux (typed prompts, a sub-agent,
``/compact``, exit), then headless continuations (``claude -p --resume``, ``claude -p -c``,
``codex exec resume``) and headless one-offs (``claude -p``, ``codex exec``). The transcripts the
CLIs wrote are copied, gzipped, into ``tests/fixtures/real/`` with ``ground_truth.json``: for
every session file, whether it is interactive, headless or a sub-agent thread, and the prompts a
person typed into it (once each, in order).

The throwaway root is replaced by ``/tmp/skillopt-rec`` in names and contents (its Claude project
slug likewise), so fixtures do not depend on the machine. The API keys, and the secret a prompt
pastes, are generated here at random: nothing secret is real or written in this file.

    python scripts/record_transcripts.py [--out tests/fixtures/real] [--clis DIR] [--keep]
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.anthropic_server import FakeAnthropic, last_user_text  # noqa: E402
from tests.support.cli_run import run_cli, sample_project  # noqa: E402
from tests.support.http_base import Reply, ToolCall  # noqa: E402
from tests.support.openai_server import FakeOpenAI, last_input_text  # noqa: E402
from tests.support.provider_env import claude_env, codex_env  # noqa: E402
from tests.support import recording  # noqa: E402
from tests.support.tui import Tmux, files_containing, settle, wait_until  # noqa: E402

CLAUDE_MARKER = "USER-CLAUDE-MD-MARKER"
CODEX_MARKER = "USER-AGENTS-MD-MARKER"


def claude_slug(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", path)


# -- the scripted models --------------------------------------------------------------------------


def _has_tool_result(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    content = last.get("content") if isinstance(last, dict) else None
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def claude_model(body: dict[str, Any]) -> str | Reply:
    """Delegates when asked to (``Agent`` tool), answers everything else with a short echo."""
    tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    if _has_tool_result(body):
        return "The helper is on it."
    text = last_user_text(body).strip()
    messages = body.get("messages") or []
    if messages and "<task-notification>" in json.dumps(messages[-1].get("content")):
        return "The helper reported back: 3 TODO markers."
    if "detailed summary of the conversation" in text or "summary of the conversation so far" in text:
        return "<summary>The user asked for release notes and a TODO count.</summary>"
    if "Agent" in tools and re.match(r"(please|and) delegate", text):
        return Reply(
            text="Delegating that.",
            tool_calls=[
                ToolCall(
                    "Agent",
                    {
                        "description": "Count TODO markers",
                        "prompt": "Count the TODO markers under src/ and report the number.",
                        "subagent_type": "general-purpose",
                        "run_in_background": "background" in text,
                    },
                )
            ],
        )
    return "Done: " + " ".join(text.split())[:80]


def codex_model(body: dict[str, Any]) -> str | Reply:
    """Spawns a sub-agent when asked to, answers everything else with a short echo."""
    items = body.get("input") or []
    last = items[-1] if items and isinstance(items[-1], dict) else {}
    if last.get("type") == "function_call_output":
        return "The helper is on it."
    text = last_input_text(body)
    if "sub-agent" in text.lower():
        return Reply(
            tool_calls=[
                ToolCall("spawn_agent", {"message": "List the TODO markers under src/."}, namespace="multi_agent_v1")
            ]
        )
    return "Done: " + " ".join(text.split())[:80]


class Recorder:
    def __init__(self, root: Path, clis: Path) -> None:
        self.root = root
        self.claude = str(clis / "claude")
        self.codex = str(clis / "codex")
        self.project = sample_project(root)
        self.truth = recording.GroundTruth()  # session file (relative) -> facts
        self.anthropic = FakeAnthropic(key="sk-ant-api03-" + secrets.token_urlsafe(30)).start()
        self.anthropic.responder = claude_model
        self.openai = FakeOpenAI(key="sk-proj-" + secrets.token_urlsafe(30)).start()
        self.openai.responder = codex_model
        self.claude_env = claude_env(root / "claude-user", self.anthropic, trust=(self.project,))
        trust = f'\n[projects."{self.project}"]\ntrust_level = "trusted"\n'
        self.codex_env = codex_env(root / "codex-user", self.openai, config_extra=trust)
        self.claude_home = Path(self.claude_env["HOME"]) / ".claude"
        self.codex_home = Path(self.codex_env["CODEX_HOME"])
        self._user_context()

    def _user_context(self) -> None:
        """A user's own CLAUDE.md / AGENTS.md (global and project): injected context, never prompts."""
        self.claude_home.mkdir(parents=True, exist_ok=True)
        # auto mode's safety check is a server-side classifier the fake does not offer: ask instead
        (self.claude_home / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "acceptEdits"}}))
        (self.claude_home / "CLAUDE.md").write_text(f"# {CLAUDE_MARKER}\nAlways answer briefly.\n")
        (self.project / "CLAUDE.md").write_text("# Project rules\nCommit messages carry a Refs: trailer.\n")
        (self.codex_home / "AGENTS.md").write_text(f"# {CODEX_MARKER}\nAlways answer briefly.\n")
        (self.project / "AGENTS.md").write_text("# Project rules\nRelease notes have a ## Testing section.\n")

    def kill_leftovers(self) -> None:
        """End any process still running an executable from our throwaway root (the daemon's helpers)."""
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                exe = os.readlink(proc / "exe")
            except OSError:
                continue
            if exe.startswith(str(self.root) + os.sep):
                try:
                    os.kill(int(proc.name), 15)
                except OSError:
                    continue

    def stop_codex_daemon(self) -> None:
        """The TUI leaves an app-server daemon running (it holds the thread open for writing)."""
        subprocess.run(
            [self.codex, "app-server", "daemon", "stop"],
            cwd=self.project,
            env=self.codex_env,
            capture_output=True,
            timeout=60,
        )

    def close(self) -> None:
        self.stop_codex_daemon()
        self.kill_leftovers()
        self.anthropic.stop()
        self.openai.stop()

    def note(self, home: Path, path: Path, **facts: Any) -> None:
        self.truth.note(path.relative_to(home.parent).as_posix(), **facts)

    def run(self, command: list[str], env: dict[str, str], timeout: float = 120) -> str:
        return run_cli(command, self.project, env, timeout=timeout)

    def record(self) -> None:
        self.claude_headless(self.claude_interactive())
        self.codex_headless(self.codex_interactive())

    # -- Claude Code ------------------------------------------------------------------------------

    def claude_interactive(self) -> Path:
        typed = [
            "write the release notes for v1.2",
            "please delegate counting the TODO markers to a helper",
            "and delegate another count in the background please",
        ]
        after_compact = ["now make the release notes shorter, max 300 chars"]
        tui = Tmux("skillopt-rec-claude", [self.claude], self.project, self.claude_env)
        try:
            wait_until("the claude prompt", lambda: "accept edits on" in tui.screen(), 60)
            time.sleep(3)
            for prompt in typed:
                before = len(self.anthropic.requests)
                tui.type_line(prompt)
                wait_until("a model call", lambda b=before: len(self.anthropic.requests) > b)
                settle(self.anthropic, quiet=4.0)
            tui.type_line("/compact")
            wait_until("the compaction", lambda: bool(files_containing(self.claude_home, '"isCompactSummary":true')))
            settle(self.anthropic)
            for prompt in after_compact:
                tui.type_line(prompt)
                wait_until("the reply", lambda p=prompt: bool(files_containing(self.claude_home, "Done: " + p[:40])))
                settle(self.anthropic)
            tui.type_line("/exit")
            wait_until("claude to exit", lambda: not tui.alive(), 30)
        finally:
            tui.kill()
        [path] = files_containing(self.claude_home / "projects", typed[0])
        self.note(self.claude_home, path, kind="interactive", typed=typed + after_compact)
        for sub in path.parent.glob(f"{path.stem}/subagents/*.jsonl"):
            self.note(self.claude_home, sub, kind="subagent")
        return path

    def claude_headless(self, interactive: Path) -> None:
        session_id = interactive.stem
        self.run([self.claude, "-p", "--resume", session_id, "headless follow-up through resume"], self.claude_env)
        self.run([self.claude, "-p", "-c", "headless follow-up through continue"], self.claude_env)
        self.run([self.claude, "-p", "a headless one-off question"], self.claude_env)
        for path in (self.claude_home / "projects").rglob("*.jsonl"):
            key = path.relative_to(self.claude_home.parent).as_posix()
            if key not in self.truth:
                self.note(self.claude_home, path, kind="subagent" if "/subagents/" in key else "headless")

    # -- Codex ------------------------------------------------------------------------------------

    def codex_interactive(self) -> Path:
        typed = ["add a changelog entry for the retry fix", "start a sub-agent to list the TODO markers"]
        after_compact = ["thanks - no TODOs in the release notes, please"]
        tui = Tmux("skillopt-rec-codex", [self.codex], self.project, self.codex_env)
        try:
            wait_until("the codex prompt", lambda: "for shortcuts" in tui.screen(), 60)
            time.sleep(3)
            for prompt in typed:
                tui.type_line(prompt)
                wait_until("the reply", lambda p=prompt: bool(files_containing(self.codex_home / "sessions", p)))
                settle(self.openai, quiet=4.0)
            tui.type_line("/compact")
            settle(self.openai, quiet=4.0)
            for prompt in after_compact:
                tui.type_line(prompt)
                wait_until(
                    "the reply",
                    lambda p=prompt: bool(files_containing(self.codex_home / "sessions", "Done: " + p[:30])),
                )
                settle(self.openai)
            tui.type_line("/quit")
            wait_until("codex to exit", lambda: not tui.alive(), 30)
        finally:
            tui.kill()
            self.stop_codex_daemon()
        sessions = self.codex_home / "sessions"
        [path] = [p for p in files_containing(sessions, typed[0]) if '"thread_source":"subagent"' not in p.read_text()]
        self.note(self.codex_home, path, kind="interactive", typed=typed + after_compact)
        return path

    def codex_headless(self, interactive: Path) -> None:
        named = re.search(r"([0-9a-f-]{36})\.jsonl$", interactive.name)
        assert named is not None, f"no session id in {interactive.name}"
        session_id = named.group(1)
        self.run([self.codex, "exec", "resume", session_id, "headless turn through exec resume"], self.codex_env)
        self.run([self.codex, "exec", "a headless codex question"], self.codex_env)
        for path in (self.codex_home / "sessions").rglob("*.jsonl"):
            key = path.relative_to(self.codex_home.parent).as_posix()
            if key in self.truth:
                continue
            head = path.read_text(encoding="utf-8").split("\n", 1)[0]
            self.note(self.codex_home, path, kind="subagent" if "subagent" in head else "headless")


def write_fixtures(recorder: Recorder, out: Path) -> None:
    """Copy the written transcripts (gzipped, the throwaway root replaced) and the ground truth."""
    root = str(recorder.root)
    portable = recording.replacing(
        (root, recording.PLACEHOLDER_ROOT), (claude_slug(root), claude_slug(recording.PLACEHOLDER_ROOT))
    )
    recording.fresh_dir(out)
    out.mkdir(parents=True)
    truth: dict[str, Any] = {
        "placeholder_root": recording.PLACEHOLDER_ROOT,
        "project": portable(str(recorder.project)),
        "sessions": {},
    }
    for home in (recorder.claude_home, recorder.codex_home):
        for path in sorted(home.rglob("*.jsonl")):
            key = path.relative_to(home.parent).as_posix()
            if key not in recorder.truth:
                continue  # history.jsonl and other state: not transcripts
            recording.write_gzipped(
                out / (portable(key).lstrip(".") + ".gz"), portable(path.read_text(encoding="utf-8")).encode()
            )
            truth["sessions"][portable(key).lstrip(".")] = recorder.truth[key]
    recording.write_ground_truth(out / "ground_truth.json", truth)


def main(argv: list[str] | None = None) -> int:
    parser = recording.recorder_parser(__doc__)
    parser.add_argument(
        "--clis", type=Path, default=Path(os.environ.get("SKILLOPT_REAL_CLIS", "").split(os.pathsep)[0])
    )
    args = parser.parse_args(argv)
    if not (args.clis / "claude").exists() or not (args.clis / "codex").exists() or not shutil.which("tmux"):
        print("record_transcripts: needs tmux and the real CLIs (--clis DIR or SKILLOPT_REAL_CLIS)", file=sys.stderr)
        return 2
    recorder = recording.record(lambda root: Recorder(root, args.clis), write_fixtures, args.out, args.keep)
    print(json.dumps({"out": str(args.out), "sessions": len(recorder.truth)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
