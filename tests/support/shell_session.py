"""What the tests of the /skillopt-sleep command in Gemini CLI, OpenCode and Copilot CLI share: the
CLI's TUI in tmux, a scripted model that records the command's text and the shell call it made,
and the Codex skill a person may also have installed."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

from scripts.record_transcripts import Tmux, wait_until

REPO = Path(__file__).resolve().parents[2]
CODEX_SKILL = REPO / "plugins" / "codex" / "skills" / "skillopt-sleep" / "SKILL.md"
CODEX_INSTALL = REPO / "plugins" / "codex" / "install.sh"
DONE = "skillopt-sleep status: done."  # the scripted model's answer to the tool's result


def open_tui(argv: list[str], project: Path, env: dict[str, str], *, name: str, ready: str) -> Tmux:
    """The TUI in a tmux session of its own (a unique name: other tests may run tmux too), once
    ``ready`` shows on its screen."""
    screen = Tmux(f"{name}-{os.getpid()}-{time.monotonic_ns()}", argv, project, env)
    try:
        wait_until(f"{ready!r} on screen", lambda: ready in screen.screen(), 180)
    except TimeoutError as exc:
        shown = screen.screen()
        screen.kill()
        raise TimeoutError(f"{exc}; the screen:\n{shown}") from None
    time.sleep(2)  # the input listens a moment after it is drawn
    return screen


def install_codex_skill(env: dict[str, str]) -> Path:
    """The Codex skill installed as a person installs it without the plugin (``plugins/codex/install.sh``,
    into Codex's own skills folder): where it landed."""
    out = subprocess.run(
        ["sh", str(CODEX_INSTALL)], env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert out.returncode == 0, out.stdout + out.stderr
    home = Path(env.get("CODEX_HOME") or Path(env["HOME"]) / ".codex")
    skill = home / "skills" / "skillopt-sleep" / "SKILL.md"
    assert skill.read_bytes() == CODEX_SKILL.read_bytes()
    assert not (Path(env["HOME"]) / ".agents" / "skills" / "skillopt-sleep").exists()
    return skill


class ShellCalls:
    """The scripted model's record: the command texts it was sent (those with ``header``), the
    shell commands it asked for, and the tool results the CLI sent back."""

    def __init__(self, header: str) -> None:
        self.header = header
        self.prompts: list[str] = []
        self.commands: list[str] = []
        self.outputs: list[str] = []

    def plan(self, text: str, launcher: str | None, request: re.Pattern[str]) -> str:
        """Record ``text`` and the command it prescribes: ``launcher`` (else ``skillopt-sleep``
        from PATH) with the action the person typed after the command (none: ``status``)."""
        self.prompts.append(text)
        typed = request.search(text)
        action = (typed.group(1).strip() if typed else "") or "status"
        command = f"{launcher or 'skillopt-sleep'} {action}"
        self.commands.append(command)
        return command

    @property
    def output(self) -> str:
        return "\n".join(self.outputs)
