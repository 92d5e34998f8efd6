"""The real GitHub Copilot CLI (``scripts/agent_clis.versions``) in a project with instruction files
of every kind: what it puts into its own request is what a night's replays carry as the agent's
context (documents/context.py), no more and no less."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from skillopt_sleep.documents.managed_block import load_documents
from tests.documents.test_context import INSTRUCTION_FILES, copilot_project, markers
from tests.support.anthropic_server import FakeAnthropic
from tests.support.copilot_cli import copilot_cli, copilot_env

pytestmark = pytest.mark.real_clis  # drives the real copilot CLI (scripts/agent_clis.versions)


def test_the_cli_loads_exactly_the_instruction_files_a_replay_carries(tmp_path: Path):
    cli = copilot_cli()
    project = copilot_project(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)  # instruction files are found in a repository
    with FakeAnthropic(key="sk-ant-fake-" + "k" * 24) as fake:
        fake.responder = lambda body: "ok"
        env = copilot_env(tmp_path, fake, trust=(project,))
        env["PATH"] = os.environ.get("PATH", "")
        out = subprocess.run(
            [cli, "-p", "say hi", "--output-format", "json"],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        sent = fake.seen("/v1/messages")
    assert sent, "the CLI made no model request"
    request = json.dumps(sent[0].body, ensure_ascii=False).replace("\\n", "\n")
    loaded = markers(request)
    assert "MARK_PY" not in loaded and ".github/instructions/py.instructions.md" in request  # listed, not loaded
    carried = markers(load_documents(project, "copilot").prompt_prefix())
    assert loaded == carried
    assert len(carried) == 2 + sum(on for _, _, on in INSTRUCTION_FILES)
