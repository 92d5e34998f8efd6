"""The copilot-cli backend driving the REAL GitHub Copilot CLI (``scripts/agent_clis.versions``)
against a ``FakeAnthropic`` through its BYOK provider variables, in a throwaway HOME that holds a
user's own context with marker strings: their ``copilot-instructions.md``, an AGENTS.md and
``.github/copilot-instructions.md`` in the working directory, a skill, a custom agent, an MCP server
and hooks that would leave evidence of having run.

Both ways of running it are driven: the SDK server (``mode=server``, the document replaces the
CLI's system prompt) and prompt mode (``mode=prompt``, the document is its instruction file). A
replay must carry the document and the task and none of the markers, offer no tool, run no hook
or MCP server, fail fast on a 401 / 429, report a cut-off answer as truncated, and leave HOME, the
project and TMPDIR byte-identical. A control shows the same context does reach a plain run.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest
from tests.support.anthropic_server import FakeAnthropic
from tests.support.copilot_cli import copilot_cli, copilot_env
from tests.support.http_base import Fail, Reply
from tests.support.agent_night import attempts, reviewed_night
from tests.support.tree_hash import differences, fingerprint

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.copilot_cli import CopilotCliBackend
from skillopt_sleep.backends.copilot_home import login_config

pytestmark = pytest.mark.real_clis  # drives the real copilot CLI (tests/support/agent_clis.py)

MARKER = "SKILLOPT-MARKER"
DOCUMENT = "## Rules\n- Keep every answer under 300 characters.\n- Ünïcødé is fine — ✓\n"
REQUEST = Request(purpose="attempt", system=DOCUMENT, user="Summarize the PR.")


def _script(path: Path, body: str) -> Path:
    path.write_text(body, encoding="utf-8")
    path.chmod(0o755)
    return path


def user_context(home: Path, project: Path) -> Path:
    """A user's own Copilot context, every piece of it marked; returns where hooks and MCP servers
    would leave evidence of having run."""
    evidence = home / "ran"
    evidence.mkdir()
    mcp = _script(home / "marker-mcp.sh", f"#!/bin/sh\ntouch {evidence}/mcp\n")  # exits: no handshake wait
    hook = _script(home / "marker-hook.sh", f"#!/bin/sh\ntouch {evidence}/hook-$1\ncat >/dev/null\n")
    copilot = home / ".copilot"
    (copilot / "copilot-instructions.md").write_text(f"{MARKER}-home-instructions: answer like a pirate\n")
    (copilot / "mcp-config.json").write_text(
        json.dumps({"mcpServers": {"marker": {"type": "local", "command": str(mcp), "args": [], "tools": ["*"]}}})
    )
    hooks = {
        "version": 1,
        "hooks": {
            event: [{"type": "command", "bash": f"{hook} {event}", "timeoutSec": 5}]
            for event in ("sessionStart", "userPromptSubmitted", "sessionEnd")
        },
    }
    (copilot / "hooks").mkdir()
    (copilot / "hooks" / "marker.json").write_text(json.dumps(hooks))
    (copilot / "skills" / "marker-skill").mkdir(parents=True)
    (copilot / "skills" / "marker-skill" / "SKILL.md").write_text(
        f"---\nname: marker-skill\ndescription: {MARKER}-skill use it always\n---\n{MARKER}-skill-body\n"
    )
    (copilot / "agents").mkdir()
    (copilot / "agents" / "marker.agent.md").write_text(
        f"---\nname: marker\ndescription: {MARKER}-agent\n---\n{MARKER}-agent-prompt\n"
    )
    (project / "AGENTS.md").write_text(f"{MARKER}-agents-md\n")
    (project / ".github").mkdir()
    (project / ".github" / "copilot-instructions.md").write_text(f"{MARKER}-repo-instructions\n")
    (project / ".github" / "hooks").mkdir()
    (project / ".github" / "hooks" / "marker.json").write_text(json.dumps(hooks))
    return evidence


@pytest.fixture(params=["server", "prompt"])
def setup(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    command = copilot_cli()
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    with FakeAnthropic(key="sk-ant-fake-" + "k" * 24) as fake:
        env = copilot_env(tmp_path, fake, trust=(project,))
        home = Path(env["HOME"])
        evidence = user_context(home, project)
        for name in list(os.environ):
            if name.startswith(("COPILOT_", "ANTHROPIC_", "OPENAI_", "GH_", "GITHUB_")):
                monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("TMPDIR", str(private_tmp))
        monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
        monkeypatch.chdir(project)
        yield (
            CopilotCliBackend(command=command, timeout=180, mode=request.param),
            fake,
            home,
            project,
            evidence,
            private_tmp,
        )


def plain_copilot(command: str, project: Path, prompt: str) -> None:
    """``copilot -p`` as the person runs it, in their project."""
    out = subprocess.run(
        [command, "-p", prompt, "--output-format", "json"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
        env=os.environ.copy(),
    )
    assert out.returncode == 0, out.stderr


def _bodies(fake: FakeAnthropic) -> str:
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in fake.seen("/v1/messages"))


def _system(body: dict) -> str:
    system = body.get("system")
    return system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system or [])


def test_replay_carries_the_document_and_none_of_the_users_context_and_leaves_nothing(setup):
    backend, fake, home, project, evidence, private_tmp = setup
    fake.responder = lambda body: "short summary"
    before = fingerprint(home, project, private_tmp)
    completion = backend.complete(REQUEST)
    assert completion.ok, completion.error_message
    assert completion.text == "short summary"
    assert completion.usage.output_tokens > 0 and completion.model == "claude-sonnet-4-5"
    assert differences(before, fingerprint(home, project, private_tmp)) == []

    (turn,) = fake.seen("/v1/messages")
    assert MARKER not in _bodies(fake)  # no instruction file, skill, agent, hook output or MCP tool
    assert not turn.body.get("tools")  # no tool offered at all
    system = _system(turn.body)
    if backend.mode == "server":  # the document is the whole system prompt
        assert system == DOCUMENT.strip()
    else:  # the CLI's own prompt, with the document as its instruction file
        assert f"<custom_instruction>\n{DOCUMENT}" in system
    assert "Summarize the PR." in json.dumps(turn.body["messages"])
    assert str(project) not in system and str(home) not in system  # cwd and session folder are private
    assert list(evidence.iterdir()) == []  # no hook ran, no MCP server started


def test_a_cut_off_answer_is_truncated(setup):
    backend, fake, *_ = setup
    fake.responder = lambda body: Reply("half an ans", cut_off=True)
    completion = backend.complete(REQUEST)
    assert completion.ok and completion.truncated and completion.text == "", completion.error_message


@pytest.mark.parametrize("status,kind", [(401, "auth"), (429, "rate_limit")])
def test_fails_fast_on_401_and_429(setup, status, kind):
    backend, fake, *_ = setup
    fake.push(*[Fail(status, "scripted")] * 20)
    completion = backend.complete(REQUEST)
    assert completion.error == kind, completion.error_message
    assert completion.latency < 20  # the CLI's own retries would take a minute for a 429
    assert len(fake.seen("/v1/messages")) <= 2


def test_control_plain_copilot_carries_the_markers_and_offers_tools(setup):
    backend, fake, home, project, evidence, _ = setup
    if backend.mode != "server":
        pytest.skip("one control is enough")
    fake.responder = lambda body: "plain"
    plain_copilot(backend.command, project, "Summarize the PR.")
    turn = fake.seen("/v1/messages")[0]
    system = _system(turn.body)
    for piece in ("home-instructions", "agents-md", "repo-instructions", "skill", "agent"):
        assert f"{MARKER}-{piece}" in _bodies(fake), piece
    assert turn.body.get("tools") and MARKER in system
    assert {"mcp", "hook-sessionStart", "hook-userPromptSubmitted"} <= {p.name for p in evidence.iterdir()}
    assert any((home / ".copilot" / "session-state").iterdir())  # a session the harvest would read


def test_a_fifty_thousand_character_document_arrives_whole(setup):
    backend, fake, *_ = setup
    fake.responder = lambda body: "ok"
    document = "Überprüfe jede Änderung — ✓ " * 1900
    completion = backend.complete(Request(purpose="attempt", system=document, user="task"))
    assert completion.ok, completion.error_message
    assert document.strip() in _system(fake.seen("/v1/messages")[-1].body)


def test_calls_share_nothing(setup):
    backend, fake, *_ = setup
    fake.responder = lambda body: "ok"
    assert backend.complete(Request(purpose="attempt", system=DOCUMENT, user="first task")).ok
    assert backend.complete(Request(purpose="attempt", system=DOCUMENT, user="second task")).ok
    first, second = fake.seen("/v1/messages")
    assert "first task" not in json.dumps(second.body)  # no resumed session, no memory
    assert len(second.body["messages"]) == 1


def test_a_night_after_the_person_used_copilot_leaves_their_home_byte_identical(setup):
    """The person has run copilot before (their session, session database, logs and config exist,
    with a signed-in account in config.json); several replays later every file is as it was."""
    backend, fake, home, project, _, private_tmp = setup
    fake.responder = lambda body: "theirs"
    plain_copilot(backend.command, project, "hello")
    config = home / ".copilot" / "config.json"
    text = config.read_text(encoding="utf-8")
    assert text.startswith("// ")  # the CLI writes comment lines above its JSON
    account = '"lastLoggedInUser": {"host": "https://github.com", "login": "octo"},\n  '
    config.write_text(text.replace('"trustedFolders"', account + '"trustedFolders"', 1), encoding="utf-8")
    assert login_config(home / ".copilot")["lastLoggedInUser"]["login"] == "octo"
    assert any((home / ".copilot" / "session-state").iterdir())
    fake.responder = lambda body: "replayed"
    before = fingerprint(home, project, private_tmp)
    for task in ("first task", "second task", "third task"):
        completion = backend.complete(Request(purpose="attempt", system=DOCUMENT, user=task))
        assert completion.ok and completion.text == "replayed", completion.error_message
    assert differences(before, fingerprint(home, project, private_tmp)) == []


def test_stopped_at_the_timeout_leaves_nothing_behind(setup):
    backend, fake, home, project, _, private_tmp = setup
    before = fingerprint(home, project, private_tmp)
    release = threading.Event()
    fake.responder = lambda body: release.wait(60) and "too late"
    backend.timeout = 8.0
    try:
        completion = backend.complete(REQUEST)
    finally:
        release.set()
    assert completion.error == "timeout", completion.error_message
    assert differences(before, fingerprint(home, project, private_tmp)) == []


def test_a_whole_night_on_a_reviewed_tasks_file_runs_through_the_cli_and_leaves_nothing(setup, tmp_path):
    backend, fake, home, project, evidence, private_tmp = setup
    fake.responder = lambda body: "Refs: ACME-1 short summary"
    before = fingerprint(home, project, private_tmp)
    spec = f"copilot-cli:command={backend.command},timeout=180,mode={backend.mode}"
    report = reviewed_night(tmp_path, spec, "copilot")
    assert report.status in ("staged", "no-change", "budget"), (report.status, report.notes)
    assert attempts(report) >= report.splits["train"] > 0 and len(fake.seen("/v1/messages")) >= attempts(report)
    assert differences(before, fingerprint(home, project, private_tmp)) == []
    assert MARKER not in _bodies(fake) and list(evidence.iterdir()) == []
