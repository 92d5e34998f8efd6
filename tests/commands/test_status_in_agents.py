"""``status`` run by the real agents' tools names the agent's command: a scripted model asks the
real ``claude`` (Bash tool) and the real ``codex`` (shell tool) to run it, against fake providers
on 127.0.0.1, and the tool result the agent sends back is what this test reads."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt_sleep.store.history import History
from skillopt_sleep.types import Edit, NightReport
from tests.support import provider_env
from tests.support.anthropic_server import FakeAnthropic
from tests.support.http_base import Reply, ToolCall
from tests.support.openai_server import FakeOpenAI
from tests.support.real_clients import RELEASES, real_cli
from tests.support.staged_project import project_with_memory, stage_memory

pytestmark = pytest.mark.real_clis  # drives the real claude / codex CLIs (scripts/install_real_clis.sh)


def _project(tmp_path: Path) -> Path:
    project = project_with_memory(tmp_path, b"old\n")
    report = NightReport(
        night_id="n1",
        project=str(project),
        mode="run",
        status="staged",
        baseline=0.4,
        candidate=0.6,
        accepted_edits=[Edit("memory", "add", "r")],
    )
    stage_memory(project, b"new\n", report=report)
    History().record(report)
    return project


def _status_command(project: Path) -> str:
    return f"{shlex.quote(sys.executable)} -m skillopt_sleep status --project {shlex.quote(str(project))}"


def _tool_output(body: dict) -> str:
    """Every tool result an agent sent back in a request (Anthropic or Responses API)."""
    texts = []
    for message in body.get("messages", []):
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if block.get("type") == "tool_result":
                content = block.get("content")
                texts += [content] if isinstance(content, str) else [c.get("text", "") for c in content or []]
    for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
        if item.get("type") == "function_call_output":
            output = item.get("output")
            texts.append(output if isinstance(output, str) else json.dumps(output))
    return "\n".join(texts)


@pytest.mark.parametrize("release", RELEASES)
def test_status_in_claude_codes_bash_tool_names_the_slash_command(tmp_path: Path, home: Path, release: str) -> None:
    claude = real_cli("claude", release)
    project = _project(tmp_path)
    command = _status_command(project)
    with FakeAnthropic(key="k") as fake:
        fake.responder = lambda body: (
            Reply(tool_calls=[ToolCall("Bash", {"command": command, "description": "status"})])
            if not _tool_output(body)
            else "done"
        )
        env = provider_env.claude_env(tmp_path, fake, trust=(project,), SKILLOPT_SLEEP_HOME=str(home))
        out = subprocess.run(
            [claude, "-p", "show the status", "--allowedTools", f"Bash({command})", "--max-turns", "3"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        results = [_tool_output(seen.body) for seen in fake.seen("/v1/messages")]
    result = next((r for r in results if r), "")
    assert "skillopt-sleep status for" in result, (out.stdout, out.stderr, results)
    assert "review with: /skillopt-sleep review" in result
    assert "adopt with: /skillopt-sleep adopt --night n1" in result
    assert "skillopt-sleep review --project" not in result


@pytest.mark.parametrize("release", RELEASES)
def test_status_in_codexs_shell_tool_names_the_skill(tmp_path: Path, home: Path, release: str) -> None:
    codex = real_cli("codex", release)
    project = _project(tmp_path)
    command = _status_command(project)

    def responder(body: dict) -> Reply | str:
        if _tool_output(body):
            return "done"
        tools = {t.get("name") for t in body.get("tools") or []}
        if "exec_command" in tools:
            return Reply(tool_calls=[ToolCall("exec_command", {"cmd": command})])
        return Reply(tool_calls=[ToolCall("shell", {"command": ["bash", "-lc", command]})])

    with FakeOpenAI() as fake:
        fake.responder = responder
        env = provider_env.codex_env(tmp_path, fake, SKILLOPT_SLEEP_HOME=str(home))
        out = subprocess.run(
            [codex, "exec", "--skip-git-repo-check", "--sandbox", "workspace-write", "show the status"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        results = [_tool_output(seen.body) for seen in fake.seen("/v1/responses")]
    result = next((r for r in results if r), "")
    assert "skillopt-sleep status for" in result, (out.stdout, out.stderr, results)
    assert (
        'review with: ask Codex: \\"skillopt-sleep review\\"' in result
        or 'review with: ask Codex: "skillopt-sleep review"' in result
    )
    assert "skillopt-sleep review --project" not in result
