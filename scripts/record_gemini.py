#!/usr/bin/env python3
"""Record genuine Gemini CLI sessions for the harvest tests (installs nothing).

Drives the real ``gemini`` CLI (``--gemini PATH``, else ``SKILLOPT_GEMINI_CLI``, else the copy
``scripts/agent_clis.versions`` names in the npm cache) against ``tests/support/gemini_server.py``
on 127.0.0.1, in a throwaway HOME: an interactive TUI session through tmux (typed prompts, a file
read, a file write, a complaint, ``/compress``, a pasted secret, sub-agents, an ``@file``
reference), the same session resumed in the TUI (``gemini --resume``), then headless runs
(``gemini -p --resume`` on it, ``gemini -p``). The session files the CLI wrote under
``~/.gemini/tmp/<project>/`` are copied, gzipped, into ``tests/fixtures/real/gemini/`` (with the
project's ``logs.json`` and ``.project_root``) and described in
``tests/fixtures/real/gemini_ground_truth.json``: for each file whether it is interactive,
headless or a sub-agent's, and the prompts a person typed into it, once each, in order.

The throwaway root is replaced by ``/tmp/skillopt-rec`` in names and contents. The API key and the
pasted secret are generated here at random: nothing secret is real or written in this file.

    python scripts/record_gemini.py [--out tests/fixtures/real] [--gemini PATH] [--keep]
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.cli_run import run_cli, sample_project  # noqa: E402
from tests.support.gemini_server import (  # noqa: E402
    FakeGemini,
    has_function_response,
    json_schema,
    last_user_text,
    tool_names,
)
from tests.support.http_base import Reply, ToolCall, sample_for_schema  # noqa: E402
from tests.support.real_clients import client_env  # noqa: E402
from tests.support import recording  # noqa: E402
from tests.support.tui import Tmux, settle, wait_until  # noqa: E402

GEMINI_MARKER = "USER-GEMINI-MD-MARKER"
# stands for the pasted secret in the ground truth, which names it only by its sha-256
SECRET_PLACEHOLDER = "<planted secret>"
HELPER_REPLY = "The helper is on it."
TOOL_REPLY = "The tool came back."


# -- the scripted model ---------------------------------------------------------------------------


def _declaration(body: dict[str, Any], name: str) -> dict[str, Any]:
    for tool in body.get("tools") or []:
        for declaration in (tool or {}).get("functionDeclarations") or []:
            if isinstance(declaration, dict) and declaration.get("name") == name:
                return declaration
    return {}


def _answered(body: dict[str, Any]) -> str:
    """The name of the function whose response ends the request."""
    last = (body.get("contents") or [{}])[-1]
    for part in last.get("parts") or []:
        if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            return str(part["functionResponse"].get("name", ""))
    return ""


def typed_text(body: dict[str, Any]) -> str:
    """The person's words in the last user content: its first text part that is not the CLI's
    ``<session_context>`` (``@file`` contents and ``<system_note>`` parts follow them)."""
    for content in reversed(body.get("contents") or []):
        if not isinstance(content, dict) or content.get("role", "user") != "user":
            continue
        for part in content.get("parts") or []:
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str) and not text.startswith("<session_context>"):
                return text
    return ""


def gemini_model(body: dict[str, Any]) -> str | Reply | None:
    """Reads, writes or delegates when asked to; answers everything else with a short echo."""
    if json_schema(body):
        return None  # the CLI's routing / next-speaker checks: a value of their schema
    if "state_snapshot" in last_user_text(body) or "state_snapshot" in json.dumps(body.get("systemInstruction")):
        return "<state_snapshot>The user asked for release notes and a TODO count.</state_snapshot>"  # /compress
    tools = tool_names(body)
    if "complete_task" in tools:  # a sub-agent's loop: finish at once with a schema-valid result
        schema = _declaration(body, "complete_task").get("parametersJsonSchema") or {}
        return Reply(tool_calls=[ToolCall("complete_task", sample_for_schema(schema))])
    if has_function_response(body):
        return HELPER_REPLY if _answered(body) == "invoke_agent" else TOOL_REPLY
    text = typed_text(body).strip()
    if text.startswith("read src/app.py") and "read_file" in tools:
        return Reply(text="Reading it.", tool_calls=[ToolCall("read_file", {"file_path": "src/app.py"})])
    if text.startswith("write the changelog") and "write_file" in tools:
        entry = {"file_path": "CHANGELOG.md", "content": "## 1.2\n- retry on timeouts\n"}
        return Reply(tool_calls=[ToolCall("write_file", entry)])
    if "delegate" in last_user_text(body) + text and "invoke_agent" in tools:  # asked, or the @agent note
        request = {"agent_name": "generalist", "prompt": "Count the TODO markers under src/ and report the number."}
        return Reply(text="Delegating that.", tool_calls=[ToolCall("invoke_agent", request)])
    return "Done: " + " ".join(text.split())[:80]


# -- driving the CLI ------------------------------------------------------------------------------


def gemini_env(root: Path, fake: FakeGemini) -> dict[str, str]:
    """A throwaway HOME whose settings pick API-key auth against ``fake`` and switch off every
    call the CLI would make elsewhere (update checks, usage statistics, telemetry)."""
    env = client_env(
        root,
        GOOGLE_GEMINI_BASE_URL=fake.root,
        GEMINI_API_KEY=fake.key,
        GEMINI_CLI_TRUST_WORKSPACE="true",
        GEMINI_TELEMETRY_ENABLED="false",
    )
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "general": {
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
            "defaultApprovalMode": "auto_edit",
            # On by default, it deletes every file of a session id whose stray twin it judges
            # empty (``gemini -p --resume`` leaves one): the recorded session itself.
            "sessionRetention": {"enabled": False},
        },
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "ide": {"enabled": False, "hasSeenNudge": True},
        "ui": {"theme": "Default"},
    }
    gemini_dir = Path(env["HOME"]) / ".gemini"
    gemini_dir.mkdir(parents=True, exist_ok=True)
    (gemini_dir / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    return env


def chat_files(gemini_dir: Path) -> list[Path]:
    return sorted(p for p in (gemini_dir / "tmp").rglob("*.json*") if "/chats/" in p.as_posix())


def files_containing(gemini_dir: Path, needle: str) -> list[Path]:
    return [p for p in chat_files(gemini_dir) if needle in p.read_text(encoding="utf-8", errors="replace")]


class Recorder:
    def __init__(self, root: Path, gemini: str) -> None:
        self.root = root
        self.gemini = gemini
        self.project = sample_project(root)
        self.secret = recording.pasted_secret()
        self.fake = FakeGemini(key="AIza" + secrets.token_urlsafe(26)).start()
        self.fake.responder = gemini_model
        self.env = gemini_env(root / "gemini-user", self.fake)
        self.gemini_dir = Path(self.env["HOME"]) / ".gemini"
        # even --version writes to ~/.gemini: only ever the throwaway one
        self.version = subprocess.run(
            [gemini, "--version"],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.strip()
        (self.gemini_dir / "GEMINI.md").write_text(f"# {GEMINI_MARKER}\nAlways answer briefly.\n")
        (self.project / "GEMINI.md").write_text("# Project rules\nCommit messages carry a Refs: trailer.\n")
        self.truth = recording.GroundTruth()  # session file (relative to HOME) -> facts

    def close(self) -> None:
        self.fake.stop()

    def key(self, path: Path) -> str:
        return path.relative_to(self.gemini_dir.parent).as_posix()

    def note(self, path: Path, **facts: Any) -> None:
        self.truth.note(self.key(path), **facts)

    def run(self, *args: str) -> str:
        return run_cli([self.gemini, *args], self.project, self.env, timeout=180)

    def tui(self, name: str, typed: list[str], *args: str) -> None:
        """Type ``typed`` into a fresh TUI (``args`` on its command line), each once its reply is
        written, then quit."""
        tui = Tmux(name, [self.gemini, *args], self.project, self.env)
        try:
            wait_until("the gemini prompt", lambda: "Type your message" in tui.screen(), 90)
            time.sleep(2)
            for prompt in typed:
                before = len(self.fake.model_requests())
                tui.type_line(prompt)
                wait_until("a model call", lambda b=before: len(self.fake.model_requests()) > b)
                settle(self.fake, quiet=4.0)
            tui.type_line("/quit")
            wait_until("gemini to exit", lambda: not tui.alive(), 30)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; the screen:\n{tui.screen()}") from None
        finally:
            tui.kill()

    def interactive(self) -> Path:
        typed = [
            "write the release notes for v1.2",
            "read src/app.py and count the TODO markers",
            "no — you forgot the ticket number again",
            "/compress",
            f"use the deploy token {self.secret} for the release job",
            "write the changelog entry for the retry fix",
            "please delegate counting the TODO markers to a helper",
            "summarize @src/app.py for me",  # sent with the file's contents, logged as typed
            "@generalist count the TODO markers",  # sent with a <system_note> naming the agent
        ]
        self.tui("skillopt-rec-gemini", typed)
        [path] = [p for p in files_containing(self.gemini_dir, typed[0]) if p.name.startswith("session-")]
        self.note(path, kind="interactive", typed=[t for t in typed if not t.startswith("/")])
        return path

    def resumed(self, path: Path) -> None:
        """The same session resumed in the TUI: new prompts land in the same file."""
        session_id = json.loads(path.read_text(encoding="utf-8").split("\n", 1)[0])["sessionId"]
        typed = ["and put the ticket number ACME-42 in the release notes"]
        self.tui("skillopt-rec-gemini-resume", typed, "--resume", session_id)
        [again] = files_containing(self.gemini_dir, typed[0])
        self.note(again, kind="interactive", typed=typed)

    def headless(self, path: Path) -> None:
        session_id = json.loads(path.read_text(encoding="utf-8").split("\n", 1)[0])["sessionId"]
        self.run("-p", "headless follow-up through resume", "--resume", session_id)
        self.run("-p", "a headless one-off question")
        for chat in chat_files(self.gemini_dir):
            if self.key(chat) in self.truth:
                continue
            head = json.loads(chat.read_text(encoding="utf-8").split("\n", 1)[0])
            self.note(chat, kind="subagent" if head.get("kind") == "subagent" else "headless")

    def record(self) -> None:
        first = self.interactive()
        self.resumed(first)
        self.headless(first)
        unknown = self.fake.unknown()
        if unknown:
            raise RuntimeError(f"the CLI asked the fake for what it does not serve: {unknown[:3]}")


def write_fixtures(recorder: Recorder, out: Path) -> None:
    """Copy the session files and each project's prompt log (gzipped, the throwaway root
    replaced) and write the ground truth."""
    portable = recording.replacing((str(recorder.root), recording.PLACEHOLDER_ROOT))
    recording.fresh_dir(out / "gemini")

    def hidden(facts: dict[str, Any]) -> dict[str, Any]:
        return dict(facts, typed=[t.replace(recorder.secret, SECRET_PLACEHOLDER) for t in facts["typed"]])

    truth: dict[str, Any] = {
        "cli": "gemini",
        "package": "@google/gemini-cli",
        "version": recorder.version,
        "placeholder_root": recording.PLACEHOLDER_ROOT,
        "project": portable(str(recorder.project)),
        "secret_placeholder": SECRET_PLACEHOLDER,
        "secret_sha256": hashlib.sha256(recorder.secret.encode()).hexdigest(),
        "sessions": {},
    }
    home = recorder.gemini_dir.parent
    keep = set(recorder.truth)
    for project_dir in sorted((recorder.gemini_dir / "tmp").iterdir()):
        for name in ("logs.json", ".project_root"):
            if (project_dir / name).is_file():
                keep.add((project_dir / name).relative_to(home).as_posix())
    for key in sorted(keep):
        data = portable((home / key).read_text(encoding="utf-8")).encode("utf-8")
        recording.write_gzipped(out / (portable(key).removeprefix(".") + ".gz"), data)
        if key in recorder.truth:
            truth["sessions"][portable(key).removeprefix(".")] = hidden(recorder.truth[key])
    recording.write_ground_truth(out / "gemini_ground_truth.json", truth)


def default_gemini() -> str:
    configured = os.environ.get("SKILLOPT_GEMINI_CLI")
    if configured:
        return configured
    from tests.support.agent_clis import installed_bin

    found = installed_bin("gemini")
    return str(found) if found else ""


def main(argv: list[str] | None = None) -> int:
    parser = recording.recorder_parser(__doc__)
    parser.add_argument("--gemini", default=None, help="the gemini executable")
    args = parser.parse_args(argv)
    gemini = args.gemini or default_gemini()
    if not gemini or not os.access(gemini, os.X_OK) or not shutil.which("tmux"):
        print("record_gemini: needs tmux and the gemini CLI (--gemini PATH or SKILLOPT_GEMINI_CLI)", file=sys.stderr)
        return 2
    recorder = recording.record(lambda root: Recorder(root, gemini), write_fixtures, args.out, args.keep)
    print(json.dumps({"out": str(args.out), "sessions": len(recorder.truth), "version": recorder.version}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
