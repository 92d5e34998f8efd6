"""The handoff tests' reading of what the engine writes and prints, checked against the engine's own
prompt files, progress lines and finished report line."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from skillopt_sleep.backends.base import AnswerPending, Request
from skillopt_sleep.backends.handoff import HandoffBackend
from skillopt_sleep.commands.run import progress_printer
from tests.support.handoff_answers import (
    answer_to,
    asked_prompt,
    finished_line,
    listed_prompts,
    stopped_rounds,
    sub_agent_task,
)

SCHEMA = {"type": "object", "required": ["edits"], "properties": {"edits": {"type": "array"}}}


def waiting_prompt(folder: Path, **fields) -> tuple[Path, Path]:
    """A prompt file the engine wrote for one call, and the answer file it expects."""
    backend = HandoffBackend(folder)
    with pytest.raises(AnswerPending) as info:
        backend.complete(Request(purpose="attempt", system="Be brief.", user="write the commit message", **fields))
    return backend.prompts / f"{info.value.key}.md", backend.answers / f"{info.value.key}.md"


def printed(*messages: str) -> str:
    """What the engine's progress printer writes for ``messages``."""
    out = io.StringIO()
    with redirect_stderr(out):
        for message in messages:
            progress_printer()(message)
    return out.getvalue()


def test_a_prompt_names_its_answer_file_and_gets_the_smallest_reply_its_schema_accepts(tmp_path: Path):
    prompt, answer = waiting_prompt(tmp_path / "my folder", json_schema=SCHEMA)
    path, reply = answer_to(prompt.read_text(encoding="utf-8"))
    assert path == str(answer) and json.loads(reply) == {"edits": []}
    prompt, answer = waiting_prompt(tmp_path / "plain")
    assert answer_to(prompt.read_text(encoding="utf-8")) == (str(answer), "Done.")


def test_a_text_naming_no_answer_file_is_refused():
    with pytest.raises(ValueError, match="no answer file"):
        answer_to("Reply with the answer itself, and nothing else.")


def test_the_prompts_a_stopped_run_lists_in_order_and_nothing_else(tmp_path: Path):
    first, _ = waiting_prompt(tmp_path / "a b")
    second, _ = waiting_prompt(tmp_path / "c", sample=1)
    stopped = printed("night: harvest", f"prompt: {first}", f"prompt: {second}", "stopped for answers")
    assert listed_prompts(stopped) == [str(first), str(second)]
    finished = printed("night: done")
    assert listed_prompts(finished) == []
    assert stopped_rounds([stopped, stopped, finished]) == [[str(first), str(second)]] * 2


def test_a_sub_agents_task_names_its_prompt_file(tmp_path: Path):
    prompt, _ = waiting_prompt(tmp_path / "with space")
    assert asked_prompt(json.dumps([{"type": "text", "text": sub_agent_task(str(prompt))}])) == str(prompt)
    assert asked_prompt("Read the notes and do exactly what it says") is None


def test_the_finished_line_is_the_one_a_finished_night_reports(tmp_path: Path):
    backend = HandoffBackend(tmp_path)
    for night in ("n1", "n2"):
        with pytest.raises(AnswerPending) as info:
            backend.complete(Request(purpose="attempt", system="s", user=night))
        backend.stopped(night)
        (backend.answers / f"{info.value.key}.md").write_text("ok", encoding="utf-8")
    assert backend.finished() == finished_line(2, 3)
