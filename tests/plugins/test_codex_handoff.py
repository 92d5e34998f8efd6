"""The Codex skill's ``handoff`` action in a real ``codex exec`` session (both pinned releases): a
night with no API key, answered by the session's own sub-agents.

Codex runs with the sandbox a person's session in a project has by default, ``workspace-write``
(``codex exec`` alone would be read-only), and the person has allowed the engine's launcher once in
their Codex rules, as the skill's other writing commands need. The model is scripted and does what
the skill's row for ``handoff`` says: it runs the prescribed command; for each ``prompt:`` line the
engine prints it starts a sub-agent (``spawn_agent``, a fresh context) told only to read that prompt
file and do what it says, waits for them and closes them, then runs the command again until the
engine stops saying prompts wait. Each sub-agent reads its prompt with the shell tool and writes its
reply to the answer file the prompt names, the reply made from the prompt's text alone
(``tests/support/handoff_answers.py``). The sub-agents' writes happen inside Codex's sandbox.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.plugins.test_codex_session import REAL_HOME_SANDBOX, allow_launcher
from tests.support.codex_session import (
    SKILL_MENTION,
    CodexSession,
    function_outputs,
    prescribed_command,
    shell_call,
    skill_block,
)
from tests.support import handoff_answers as handoff
from tests.support.http_base import Reply, ToolCall
from tests.support.openai_server import FakeOpenAI
from tests.support.real_clients import RELEASES, real_cli
from tests.support.tasks import make_tasks, write_tasks_file

pytestmark = [pytest.mark.slow, pytest.mark.real_clis]

AGENT_ID = re.compile(r'"(?:agent_id|id)"\s*:\s*"([^"]+)"')
AT_ONCE = 4  # sub-agents the skill allows at a time
AGENTS = "multi_agent_v1"


def _user_texts(body: dict[str, Any]) -> list[str]:
    texts = []
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("role") == "user":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("text"):
                    texts.append(str(part["text"]))
    return texts


def _calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The function calls the model made in this conversation so far, in order."""
    return [i for i in body.get("input") or [] if isinstance(i, dict) and i.get("type") == "function_call"]


@dataclass
class HandoffModel:
    """The main conversation and each sub-agent's, told apart by their first message."""

    commands: list[str] = field(default_factory=list)  # what the main conversation ran
    outputs: list[str] = field(default_factory=list)  # what each of its runs printed
    spawned: list[str] = field(default_factory=list)  # prompt files given to sub-agents
    written: list[str] = field(default_factory=list)  # answer files the sub-agents wrote
    pending: list[str] = field(default_factory=list)  # listed prompts not given to a sub-agent yet
    batch: list[str] = field(default_factory=list)  # the prompts of the sub-agents started last
    started: list[str] = field(default_factory=list)  # their agent ids
    running: list[str] = field(default_factory=list)  # those not finished yet

    def __call__(self, body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            return Reply(text="ok")
        asked = next((m for t in _user_texts(body) if (m := handoff.asked_prompt(t))), None)
        if asked and not skill_block(body):
            return self.sub_agent(body, asked)
        skill = skill_block(body)
        if not skill:
            return Reply(text="There is no skillopt-sleep request here.")
        command = prescribed_command(skill, "handoff") + " --tasks-file tasks.json"
        return self.main(body, command)

    def sub_agent(self, body: dict[str, Any], prompt_file: str) -> Reply:
        outputs = function_outputs(body)
        tools = body.get("tools") or []
        if not outputs:
            return Reply(tool_calls=[shell_call(tools, f"cat {shlex.quote(prompt_file)}")])
        if len(outputs) == 1:
            prompt = outputs[0].split("Output:\n", 1)[-1]
            answer, reply = handoff.answer_to(prompt)
            self.written.append(answer)
            write = f"cat > {shlex.quote(answer)} <<'SKILLOPT_ANSWER'\n{reply}\nSKILLOPT_ANSWER"
            return Reply(tool_calls=[shell_call(tools, write)])
        return Reply(text="Answered.")

    def main(self, body: dict[str, Any], command: str) -> Reply:
        calls = _calls(body)
        last = calls[-1] if calls else None
        outputs = function_outputs(body)
        if last is None:
            return self.run(body, command)
        name = last.get("name")
        if name in ("exec_command", "write_stdin"):
            printed = outputs[-1] if outputs else ""
            if "Process running with session ID" in printed:
                running = re.search(r"session ID (\d+)", printed).group(1)
                return Reply(
                    tool_calls=[
                        ToolCall("write_stdin", {"session_id": int(running), "chars": "", "yield_time_ms": 30000})
                    ]
                )
            self.outputs.append(printed)
            listed = handoff.listed_prompts(printed)
            if not listed:
                return Reply(text="The night is done.")
            self.pending = list(listed)
            return self.spawn()
        if name == "spawn_agent":
            self.running = self.started = [m for out in outputs[-len(self.batch) :] for m in AGENT_ID.findall(out)]
            return self.wait()
        if name == "wait_agent":
            status = json.loads(outputs[-1]).get("status") or {} if outputs and outputs[-1].startswith("{") else {}
            self.running = [i for i in self.running if "completed" not in (status.get(i) or {})]
            if self.running:
                return self.wait()
            return Reply(tool_calls=[ToolCall("close_agent", {"target": i}, AGENTS) for i in self.started])
        if name == "close_agent":
            return self.spawn() if self.pending else self.run(body, command)
        return Reply(text=f"unexpected call {name}")

    def wait(self) -> Reply:
        return Reply(tool_calls=[ToolCall("wait_agent", {"targets": self.running, "timeout_ms": 300000}, AGENTS)])

    def spawn(self) -> Reply:
        batch, self.pending = self.pending[:AT_ONCE], self.pending[AT_ONCE:]
        self.batch = batch
        self.spawned.extend(batch)
        return Reply(
            tool_calls=[ToolCall("spawn_agent", {"message": handoff.sub_agent_task(path)}, AGENTS) for path in batch]
        )

    def run(self, body: dict[str, Any], command: str) -> Reply:
        self.commands.append(command)
        return Reply(tool_calls=[shell_call(body.get("tools") or [], command)])


@pytest.mark.parametrize("release", RELEASES)
def test_a_handoff_night_is_answered_by_the_sessions_own_sub_agents(tmp_path, release):
    project = tmp_path / "my project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=60)
    (project / "AGENTS.md").write_text("# Project rules\n", encoding="utf-8")
    write_tasks_file(project / "tasks.json", make_tasks(per_kind=3))
    with FakeOpenAI(key="k") as server:
        session = CodexSession(real_cli("codex", release), tmp_path, server).install(
            config=REAL_HOME_SANDBOX,
            SKILLOPT_SLEEP_PYTHON=sys.executable,
            # a small night: few prompts a round, so a round trip through the CLI stays short
            SKILLOPT_SLEEP_K="1",
            SKILLOPT_SLEEP_VAL_SAMPLES="1",
            SKILLOPT_SLEEP_MAX_VAL_SAMPLES="2",
            SKILLOPT_SLEEP_MAX_EDITS="1",
        )
        # once, as for the skill's other writing commands: the person allows the launcher it names
        seen: list[str] = []
        server.responder = lambda body: Reply(text="ok") if seen.append(skill_block(body)) is None else Reply()
        session.run_codex(["exec", "--json", f"{SKILL_MENTION} status"], cwd=project, timeout=300)
        allow_launcher(session, prescribed_command(next(filter(None, seen)), "handoff"))
        model = HandoffModel()
        server.responder = model
        out = session.run_codex(
            ["exec", "-s", "workspace-write", "--json", f"{SKILL_MENTION} handoff --tasks-file tasks.json"],
            cwd=project,
            timeout=1500,
        )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    waits = handoff.stopped_rounds(model.outputs)
    assert len(waits) >= 2, f"rounds that stopped for answers: {len(waits)}\n{model.outputs[-1:]}"
    prompts = sum(map(len, waits))
    assert sorted(model.spawned) == sorted(p for listed in waits for p in listed)
    assert len(model.written) == prompts
    done = [o for o in model.outputs if handoff.FINISHED in o]
    assert done, model.outputs[-1][-2000:] if model.outputs else out.stderr[-2000:]
    assert handoff.finished_line(prompts, len(waits) + 1) in done[-1]
    assert not (project / ".skillopt-sleep" / "handoff").exists(), "a finished night clears its prompts"
