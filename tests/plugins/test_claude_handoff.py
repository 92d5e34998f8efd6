"""``/skillopt-sleep handoff`` in a real Claude Code session, both releases, default permission mode:
a night with no API key, answered by the session's own sub-agents.

The model is scripted and does what the plugin's skill says for ``handoff``: it runs the command
the skill's table prescribes; for each ``prompt:`` line the engine prints it starts one sub-agent
(the Agent tool, not in the background) told to read that prompt file and do what it says; the
sub-agent reads the file and writes the reply to the answer file the prompt names, the reply made
from the prompt's text alone (``tests/support/handoff_answers.py``); once every prompt has its
answer the model runs the command again, until the engine stops saying prompts wait. Claude Code
denies whatever would need a permission prompt, so a session that finishes needed none.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.anthropic_server import FakeAnthropic
from tests.support import handoff_answers as handoff
from tests.support.http_base import Reply, ToolCall
from tests.support.real_clients import RELEASES, client_env, real_cli
from tests.support.scripted_claude import prescribed, skill_text
from tests.support.tasks import make_tasks, write_tasks_file

pytestmark = [pytest.mark.slow, pytest.mark.real_clis]

PLUGIN = Path(__file__).resolve().parents[2] / "plugins" / "claude-code"
AT_ONCE = 10  # sub-agents the skill allows in one message


def _blocks(body: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [
        block
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == kind
    ]


def _text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


class HandoffModel:
    """The main conversation and each sub-agent's, told apart by their first message."""

    def __call__(self, body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            return Reply("ok")
        first = json.dumps((body.get("messages") or [{}])[0].get("content"))
        asked = handoff.asked_prompt(first)
        if asked:
            return self.sub_agent(body, asked)
        text = skill_text(body)
        if not text:
            return Reply("There is no skillopt-sleep request here.")
        return self.main(body, prescribed(text)[0])

    def sub_agent(self, body: dict[str, Any], prompt_file: str) -> Reply:
        results = _blocks(body, "tool_result")
        if not results:
            return Reply("", [ToolCall("Read", {"file_path": prompt_file})])
        if len(results) == 1:
            prompt = re.sub(r"^\s*\d+\t", "", _text(results[0]), flags=re.M)  # the Read tool numbers lines
            answer, reply = handoff.answer_to(prompt)
            return Reply("", [ToolCall("Write", {"file_path": answer, "content": reply})])
        return Reply("Answered.")

    def main(self, body: dict[str, Any], command: str) -> Reply:
        uses = {u["id"]: u for u in _blocks(body, "tool_use")}
        results = _blocks(body, "tool_result")
        bash = [r for r in results if uses.get(r.get("tool_use_id"), {}).get("name") == "Bash"]
        if not bash:
            return self.run(command)
        last_run = _text(bash[-1])
        listed = handoff.listed_prompts(last_run)
        if not listed:
            return Reply("The night is done: " + last_run[-200:])
        since = results[results.index(bash[-1]) + 1 :]
        started = [
            handoff.asked_prompt(uses[r["tool_use_id"]]["input"]["prompt"])
            for r in since
            if uses.get(r.get("tool_use_id"), {}).get("name") == "Agent"
        ]
        left = [path for path in listed if path not in started]
        if left:
            return Reply(
                "",
                [
                    ToolCall(
                        "Agent",
                        {
                            "description": "Answer a skillopt-sleep prompt",
                            "prompt": handoff.sub_agent_task(path),
                            "subagent_type": "general-purpose",
                            "run_in_background": False,
                        },
                    )
                    for path in left[:AT_ONCE]
                ],
            )
        return self.run(command)

    def run(self, command: str) -> Reply:
        return Reply(
            "", [ToolCall("Bash", {"command": command, "description": "Run skillopt-sleep", "timeout": 600000})]
        )


@pytest.mark.parametrize("release", RELEASES)
def test_a_handoff_night_is_answered_by_the_sessions_own_sub_agents(tmp_path, engine_dir, release):
    project = tmp_path / "my project"
    project.mkdir()
    (project / "CLAUDE.md").write_text("# Project rules\n", encoding="utf-8")
    write_tasks_file(project / "tasks.json", make_tasks(per_kind=3))
    env = client_env(
        tmp_path,
        SKILLOPT_SLEEP_ENGINE_DIR=str(engine_dir),
        SKILLOPT_SLEEP_HOME=os.environ["SKILLOPT_SLEEP_HOME"],
        # a small night: few prompts a round, so a round trip through the CLI stays short
        SKILLOPT_SLEEP_K="1",
        SKILLOPT_SLEEP_VAL_SAMPLES="1",
        SKILLOPT_SLEEP_MAX_VAL_SAMPLES="2",
        SKILLOPT_SLEEP_MAX_EDITS="1",
    )
    with FakeAnthropic(key="k") as server:
        server.responder = HandoffModel()
        out = subprocess.run(
            [
                real_cli("claude", release),
                "-p",
                "/skillopt-sleep handoff --tasks-file tasks.json",
                "--output-format",
                "stream-json",
                "--verbose",
                "--max-turns",
                "60",
                "--plugin-dir",
                str(PLUGIN),
            ],
            capture_output=True,
            text=True,
            env=dict(env, ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="k"),
            cwd=str(project),
            timeout=1500,
            stdin=subprocess.DEVNULL,
        )
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    denials = [d for e in events if e.get("type") == "result" for d in e.get("permission_denials") or []]
    assert denials == [], denials
    runs = [
        _text(b)
        for e in events
        if e.get("type") == "user"
        for b in e.get("message", {}).get("content") or []
        if isinstance(b, dict) and b.get("type") == "tool_result" and "skillopt-sleep" in _text(b)
    ]
    waits = handoff.stopped_rounds(runs)
    assert len(waits) >= 2, f"rounds that stopped for answers: {len(waits)}\n{out.stderr[-2000:]}"
    done = [r for r in runs if handoff.FINISHED in r]
    assert done, runs[-1][-2000:] if runs else out.stderr[-2000:]
    assert handoff.finished_line(sum(map(len, waits)), len(waits) + 1) in done[-1]
    assert not (project / ".skillopt-sleep" / "handoff").exists(), "a finished night clears its prompts"
