"""The Codex plugin in a real ``codex exec`` session (both pinned releases), installed from a clone
the way a person installs it, with a scripted model that runs exactly the command the skill's text
prescribes for each action — so a skill that prescribes something codex will not run fails here.

``codex exec`` runs with its defaults: sandbox ``read-only``, approval policy ``never``. Measured:
the sandbox lets nothing be written (under ``workspace-write`` the user's state directory and the
project's ``.agents/`` stay read-only too) and an escalation request is rejected under ``never``;
a command the user's Codex rules allow runs outside the sandbox. So ``status`` and ``review`` run
as they are; a command that writes says how to allow the engine (one rules line), and once the
user has put that line in their rules every action runs.

The throwaway HOME lives under /tmp, which ``workspace-write`` leaves writable; the config excludes
/tmp from the writable roots so the sandbox treats that HOME as it treats a real one.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.codex_session import CodexSession, events
from tests.support.openai_server import FakeOpenAI
from tests.support.real_clients import RELEASES, real_cli
from tests.support.staged_project import stage_memory

pytestmark = pytest.mark.slow

AGENTS_OLD = b"# Project rules\n\nKeep it short.\n"
AGENTS_NEW = b"# Project rules\n\nKeep it short.\n- Use conventional commits.\n"
REAL_HOME_SANDBOX = "[sandbox_workspace_write]\nexclude_slash_tmp = true\nexclude_tmpdir_env_var = true\n"
RULE_LINE = re.compile(r"put the line (prefix_rule\(.*?\)) in (\S+)")


@pytest.fixture(params=RELEASES)
def session(request, tmp_path):
    codex = real_cli("codex", request.param)
    with FakeOpenAI(key="k") as server:
        yield CodexSession(codex, tmp_path, server).install(
            config=REAL_HOME_SANDBOX, SKILLOPT_SLEEP_PYTHON=sys.executable, SKILLOPT_SLEEP_BACKEND="sim")


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    (root / "AGENTS.md").write_bytes(AGENTS_OLD)
    return root


def ran(model, out) -> str:
    """The one command the model asked for and what codex sent back: it ran (not refused by the
    sandbox or the approval policy) — the output has the process's exit code."""
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert len(model.commands) == 1, (model.commands, model.skill_texts)
    output = model.output
    assert "approval policy" not in output and "rejected" not in output, output
    assert re.search(r"Process exited with code \d+", model.outputs[-1]), output
    commands = [e["item"] for e in events(out) if e.get("type") == "item.completed"
                and e["item"].get("type") == "command_execution"]
    assert len(commands) == 1 and model.commands[0] in commands[0]["command"], commands
    return output


def exit_code(output: str) -> int:
    return int(re.findall(r"Process exited with code (\d+)", output)[-1])


def allow_engine(session: CodexSession, refusal: str) -> Path:
    """What the person does once: the rules line the engine's refusal gave, in the file it names."""
    line, where = RULE_LINE.search(refusal).groups()
    path = Path(where.replace("~", session.env["HOME"], 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(line + "\n", encoding="utf-8")
    return path


def test_status_runs_in_the_default_sandbox(session, project):
    model, out = session.ask(project, "status")
    output = ran(model, out)
    assert exit_code(output) == 0, output
    assert f"skillopt-sleep status for {project}" in output
    assert "latest proposal: none" in output


def test_review_shows_the_staged_proposal(session, project):
    stage_memory(project, AGENTS_NEW, rules=1, name="AGENTS.md")
    model, out = session.ask(project, "review")
    output = ran(model, out)
    assert exit_code(output) == 0, output
    assert "# skillopt-sleep proposal: night n1 (staged)" in output
    assert "+- Use conventional commits." in output


def test_adopt_says_how_to_allow_the_engine_then_adopt_and_revert_run(session, project):
    """In the read-only sandbox adopt changes nothing and says, in one line, which rules line lets
    Codex run the engine outside it; with that line in the user's rules, adopt writes AGENTS.md
    and revert restores its exact bytes."""
    stage_memory(project, AGENTS_NEW, rules=1, name="AGENTS.md")
    model, out = session.ask(project, "adopt")
    refusal = ran(model, out)
    assert exit_code(refusal) == 9, refusal
    assert "Codex's sandbox keeps it read-only" in refusal and "Traceback" not in refusal
    assert (project / "AGENTS.md").read_bytes() == AGENTS_OLD
    assert not (project / ".skillopt-sleep" / "adoptions.jsonl").exists()

    allow_engine(session, refusal)
    model, out = session.ask(project, "adopt")
    output = ran(model, out)
    assert exit_code(output) == 0, output
    assert "Adopted night n1: wrote 1 file(s)" in output
    assert (project / "AGENTS.md").read_bytes() == AGENTS_NEW

    model, out = session.ask(project, "revert")
    output = ran(model, out)
    assert exit_code(output) == 0, output
    assert "n1" in output
    assert (project / "AGENTS.md").read_bytes() == AGENTS_OLD


def test_the_model_sees_the_engine_output_codex_sent(session, project):
    """The tool result codex hands the model is the engine's own text (not a summary)."""
    model, out = session.ask(project, "status")
    output = ran(model, out)
    final = [e["item"]["text"] for e in events(out) if e.get("item", {}).get("type") == "agent_message"]
    assert final == ["skillopt-sleep status: done."]
    assert json.dumps(output)  # plain text
    assert "schedule: none" in output
