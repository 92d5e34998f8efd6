"""A CLI's TUI driven in tmux and the waits on the fake model (tests/support/tui.py)."""

from __future__ import annotations

import secrets
import shutil
import threading
from pathlib import Path

import pytest

from tests.support.tui import Tmux, files_containing, settle, wait_until


def test_wait_until_returns_once_the_check_holds_and_names_what_it_waited_for():
    calls = iter([False, True])
    wait_until("the second look", lambda: next(calls), timeout=5)
    with pytest.raises(TimeoutError, match="timed out waiting for the prompt"):
        wait_until("the prompt", lambda: False, timeout=0.6)


class FakeModel:
    def __init__(self) -> None:
        self.requests: list[str] = []


def test_settle_waits_for_the_requests_to_stop():
    fake = FakeModel()
    stop = threading.Event()

    def calls() -> None:
        while not stop.wait(0.2):
            fake.requests.append("call")

    caller = threading.Thread(target=calls)
    caller.start()
    try:
        with pytest.raises(TimeoutError, match="kept calling"):
            settle(fake, quiet=1.0, timeout=2.0)
    finally:
        stop.set()
        caller.join()
    settle(fake, quiet=0.6, timeout=5.0)


def test_files_containing_reads_the_jsonl_files_under_a_root(tmp_path: Path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.jsonl").write_text('{"text":"write the notes"}\n')
    (tmp_path / "b.jsonl").write_text('{"text":"other"}\n')
    (tmp_path / "c.json").write_text('{"text":"write the notes"}\n')
    assert files_containing(tmp_path, "write the notes") == [tmp_path / "p" / "a.jsonl"]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_line_typed_into_tmux_reaches_the_program(tmp_path: Path):
    name = f"skillopt-test-recording-{secrets.token_hex(4)}"
    tui = Tmux(name, ["sh", "-c", f'read line; echo "$line" > {tmp_path / "got"}'], tmp_path, {"PATH": "/usr/bin:/bin"})
    try:
        assert tui.alive()
        tui.type_line("hello there")
        wait_until("the program to exit", lambda: not tui.alive(), 10)
    finally:
        tui.kill()
    assert (tmp_path / "got").read_text() == "hello there\n"


def test_killing_the_session_ends_a_child_that_left_for_a_session_of_its_own(tmp_path: Path):
    """As Gemini CLI relaunches itself: a child in a new session survives the pane's hangup."""
    name = f"skillopt-test-recording-{secrets.token_hex(4)}"
    script = f"setsid sleep 300 & echo $! > {tmp_path / 'child'}; wait"
    tui = Tmux(name, ["sh", "-c", script], tmp_path, {"PATH": "/usr/bin:/bin"})
    try:
        wait_until(
            "the child's pid",
            lambda: (tmp_path / "child").is_file() and bool((tmp_path / "child").read_text().strip()),
            10,
        )
    finally:
        tui.kill()
    child = int((tmp_path / "child").read_text())
    wait_until("the child to end", lambda: not Path(f"/proc/{child}").exists() or "Z" in _state(child), 10)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return "Z"
