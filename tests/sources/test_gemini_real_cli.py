"""A session recorded now, with the real ``gemini`` CLI pinned in ``scripts/agent_clis.versions``
(in tmux, against the fake Gemini API of ``tests/support/gemini_server.py``), is harvested
exactly: the typed prompts in order, their replies, the tool it ran; a headless run beside it is
left out. Catches a CLI release that writes its sessions differently from the committed
recording."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from tests.support.agent_clis import real_agent_cli
from tests.support.scripts import script_module

from skillopt_sleep.sources import harvest

pytestmark = pytest.mark.real_clis  # drives the real gemini CLI (scripts/agent_clis.versions)


@pytest.fixture
def recording() -> Iterator[ModuleType]:
    yield from script_module("record_gemini")


def test_a_fresh_real_session_is_harvested_exactly(recording: ModuleType, tmp_path: Path) -> None:
    gemini = real_agent_cli("gemini")
    if not shutil.which("tmux"):
        reason = "tmux is not installed (the interactive CLI runs in it)"
        if os.environ.get("SKILLOPT_REQUIRE_REAL_CLIS") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    typed = [
        "write the release notes for v1.2",
        "read src/app.py and count the TODO markers",
        "no — you forgot the ticket number again",
    ]
    recorder = recording.Recorder(tmp_path / "rec", gemini)
    try:
        recorder.tui(f"skillopt-test-gemini-{os.getpid()}", typed)
        recorder.run("-p", "a headless one-off question")
    finally:
        recorder.close()
    assert recorder.fake.unknown() == []
    result = harvest(str(recorder.project), source="gemini", homes={"gemini": recorder.gemini_dir})
    [digest] = result.digests
    assert digest.user_prompts == typed
    assert digest.assistant_finals == ["Done: " + typed[0], recording.TOOL_REPLY, "Done: " + typed[2]]
    assert "read_file" in digest.tools_used and "src/app.py" in digest.files_touched
    assert [(f.polarity, f.prompt_index) for f in digest.feedback] == [("negative", 1)]
    assert result.skipped.get("headless_session") == 1
