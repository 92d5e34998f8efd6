"""The real GitHub Copilot CLI (``scripts/agent_clis.versions``) writes a session against the fake
model, and the harvest reads back exactly what was typed into its TUI."""

from __future__ import annotations

import json
import shutil

import pytest

from skillopt_sleep.sources import harvest
from tests.support.copilot_cli import copilot_cli
from tests.support.scripts import script_module

pytestmark = pytest.mark.real_clis  # drives the real copilot CLI (scripts/agent_clis.versions)


@pytest.fixture
def record_copilot():
    yield from script_module("record_copilot")


def test_a_fresh_tui_session_is_harvested_with_its_typed_prompts_only(tmp_path, record_copilot):
    cli = copilot_cli()
    if not shutil.which("tmux"):
        pytest.skip("tmux is not installed")
    recorder = record_copilot.Recorder(tmp_path / "rec", cli)
    typed = ["read src/app.py and count the TODO markers", f"the token is {recorder.secret} - keep it out"]
    try:
        recorder.tui("skillopt-test-copilot", [], typed)
        recorder.run("-p", "a headless question", "--allow-all-tools")
    finally:
        recorder.close()
    result = harvest(str(recorder.project), source="copilot", homes={"copilot": recorder.home})
    (digest,) = result.digests
    assert digest.user_prompts == [typed[0], typed[1].replace(recorder.secret, "[REDACTED:github_token]")]
    assert digest.assistant_finals[0] == "Done with view."
    assert digest.tools_used == ["view"]
    assert result.skipped.get("headless_session") == 1
    assert recorder.secret not in json.dumps(digest.to_dict())
