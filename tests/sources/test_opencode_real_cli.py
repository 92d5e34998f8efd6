"""The real OpenCode CLI writes a session now, and the harvest reads it: typed prompts in order, the
tool it ran, the secret pasted into it redacted, and a headless ``opencode run`` left out."""

from __future__ import annotations

import json
import secrets
import shutil
import string
from pathlib import Path

import pytest

from skillopt_sleep.sources import harvest
from tests.support.agent_clis import real_agent_cli
from tests.support.chat_server import FakeChat, last_role, last_user_message
from tests.support.http_base import Reply, ToolCall
from tests.support.opencode_session import OpenCodeUser, data_dir

pytestmark = [pytest.mark.real_clis, pytest.mark.slow]


def test_a_fresh_tui_session_is_harvested_and_a_headless_run_is_not(tmp_path: Path):
    cli = real_agent_cli("opencode")
    if not shutil.which("tmux"):
        pytest.skip("tmux is not installed")
    project = tmp_path / "work" / "acme"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("# TODO: retry\n")
    secret = "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))

    def model(body):
        if "title generator" in json.dumps(body.get("messages", [])[:1]):
            return "A title"
        if last_role(body) == "tool":
            return "Tool finished."
        text = last_user_message(body).strip()
        if text.startswith("please read"):
            return Reply(tool_calls=[ToolCall("read", {"filePath": str(project / "src" / "app.py")})])
        return "Done: " + text[:40]

    typed = ["please read src/app.py", f"no, keep {secret} out of it"]
    with FakeChat(key="sk-" + secrets.token_urlsafe(24)) as fake:
        fake.responder = model
        user = OpenCodeUser(cli, project, tmp_path / "home", fake, tmux_name=f"skillopt-test-{tmp_path.name}")
        user.tui(typed)
        user.run("a headless question")
        assert fake.unknown() == []
        assert fake.seen("/v1/chat/completions")

    result = harvest(project, source="opencode", homes={"opencode": data_dir(user.home)})
    [digest] = result.digests
    assert digest.user_prompts[0] == typed[0]
    assert digest.user_prompts[1].startswith("no, keep [REDACTED")
    assert secret not in json.dumps(digest.to_dict())
    assert digest.tools_used == ["read"]
    assert digest.assistant_finals[0] == "Tool finished."
    assert [(f.polarity, f.prompt_index) for f in digest.feedback] == [("negative", 0)]
    assert result.skipped.get("headless_session") == 1
    assert not (user.home / ".cache" / "opencode" / "node_modules").exists()  # no provider fetched from npm
