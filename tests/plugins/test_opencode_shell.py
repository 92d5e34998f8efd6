"""The OpenCode command (``plugins/opencode``) in the real ``opencode`` TUI: installed with the
plugin's ``install.sh`` into a throwaway HOME's ``~/.config/opencode/commands/``, the person types
``/skillopt-sleep status``, the scripted model receives the command's expanded template and answers
with the one bash call it prescribes, and the engine's own status text comes back to the model as
the tool's result — in OpenCode's default permissions.

The engine runs through the plugin's launcher with ``SKILLOPT_SLEEP_PYTHON`` (the test's own
interpreter), so no virtualenv is built.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from scripts.record_transcripts import Tmux, wait_until
from tests.support.agent_clis import real_agent_cli
from tests.support.chat_server import FakeChat, last_role, last_user_message, message_text
from tests.support.http_base import Reply, ToolCall
from tests.support.plugin_launcher import load_launcher
from tests.support.shell_session import DONE, REPO, ShellCalls, install_codex_skill, open_tui
from tests.support.opencode_session import opencode_env

pytestmark = [pytest.mark.slow, pytest.mark.real_clis]

PLUGIN = REPO / "plugins" / "opencode"
HEADER = "# skillopt-sleep for OpenCode"
LAUNCHER = re.compile(r"^launcher: `(.+)`$", re.M)
REQUEST = re.compile(r"The user's request \(the words after `/skillopt-sleep`; none means `status`\): (.*)\s*\Z")


def tool_names(body: dict[str, Any]) -> set[str]:
    return {t.get("function", {}).get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)}


class ScriptedModel(ShellCalls):
    """Runs the launcher the expanded template names with the action the person typed."""

    def __init__(self) -> None:
        super().__init__(HEADER)

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        system = " ".join(message_text(m) for m in body.get("messages") or [] if m.get("role") == "system")
        if "title generator" in system:
            return "skillopt-sleep status"
        if last_role(body) == "tool":
            self.outputs.append(message_text(body["messages"][-1]))
            return DONE
        text = last_user_message(body)
        if HEADER not in text or "bash" not in tool_names(body):
            return "Done."
        launcher = LAUNCHER.search(text)
        command = self.plan(text, launcher.group(1) if launcher else None, REQUEST)
        return Reply(tool_calls=[ToolCall("bash", {"command": command, "description": "Run skillopt-sleep"})])


@pytest.fixture
def session(tmp_path):
    opencode = real_agent_cli("opencode")
    with FakeChat(key="k") as fake:
        model = ScriptedModel()
        fake.responder = model
        home = tmp_path / "user" / "home"
        env = opencode_env(home, fake)
        env["SKILLOPT_SLEEP_PYTHON"] = sys.executable
        project = tmp_path / "my project"  # a space in the project's path
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=60)
        (project / "AGENTS.md").write_text("# Project rules\n\nKeep it short.\n", encoding="utf-8")
        yield opencode, fake, model, env, project


def tui(opencode: str, env: dict[str, str], project: Path) -> Tmux:
    return open_tui([opencode], project, env, name="skillopt-opencode-shell", ready="ctrl+p")


def type_command(screen: Tmux, fake: FakeChat, line: str) -> None:
    before = len(fake.requests)
    screen.type_line(line)
    try:
        wait_until("a model call", lambda: len(fake.requests) > before, 20)
    except TimeoutError:
        # on a loaded machine the TUI may take the Enter as part of the typing: press it again
        screen.keys("Enter")
        wait_until("a model call", lambda: len(fake.requests) > before, 120)


def install(env: dict[str, str]) -> None:
    """What a person runs from a clone: ``<clone>/plugins/opencode/install.sh``."""
    out = subprocess.run(
        [str(PLUGIN / "install.sh")], env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert out.returncode == 0, out.stderr
    installed = Path(env["XDG_CONFIG_HOME"]) / "opencode" / "commands" / "skillopt-sleep.md"
    assert installed.is_file(), out.stdout


def run_status(opencode: str, fake: FakeChat, model: ScriptedModel, env: dict[str, str], project: Path) -> str:
    """Type ``/skillopt-sleep status`` and wait until the model answered the tool's result; the screen."""
    screen = tui(opencode, env, project)
    try:
        type_command(screen, fake, "/skillopt-sleep status")
        wait_until("the tool's result to reach the model", lambda: bool(model.outputs), 180)
        wait_until("the model's last answer on screen", lambda: DONE in screen.screen(), 60)
        return screen.screen()
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; the screen:\n{screen.screen()}") from None
    finally:
        screen.kill()


def test_the_installed_command_runs_the_engine(session):
    opencode, fake, model, env, project = session
    install(env)
    shown = run_status(opencode, fake, model, env, project)

    (prompt,) = model.prompts
    assert "<launcher> run --detach --agent opencode" in prompt
    assert prompt.rstrip().endswith("none means `status`): status")  # $ARGUMENTS filled in
    launcher = PLUGIN / "bin" / "skillopt-sleep"
    assert model.commands == [f"'{launcher}' status"]  # the checkout's launcher, as install.sh quoted it
    assert model.commands[0] in shown and "Permission required" not in shown  # no question asked
    output = model.output
    assert f"skillopt-sleep status for {project}" in output, output
    assert "latest proposal: none" in output, output


def test_the_command_runs_beside_the_codex_skill(session):
    """OpenCode makes skills slash commands too, and reads ``~/.agents/skills/``;
    ``plugins/codex/install.sh`` puts the Codex skill ``skillopt-sleep`` in Codex's own folder, and
    the installed command is what ``/skillopt-sleep`` runs."""
    opencode, fake, model, env, project = session
    install_codex_skill(env)
    install(env)
    run_status(opencode, fake, model, env, project)
    (prompt,) = model.prompts
    assert "--agent opencode" in prompt and "--agent codex" not in prompt
    assert f"skillopt-sleep status for {project}" in model.output, model.output


def test_without_the_command_the_line_is_no_command(session):
    """The control: without the installed command the typed line is no command; OpenCode sends it
    to the model as it is, and no template of ours reaches the model."""
    opencode, fake, model, env, project = session
    screen = tui(opencode, env, project)
    try:
        type_command(screen, fake, "/skillopt-sleep status")
        time.sleep(5)
        shown = screen.screen()
    finally:
        screen.kill()
    sent = {last_user_message(r.body) for r in fake.requests}
    assert sent == {"/skillopt-sleep status"}, (sent, shown)  # sent to the model as typed
    assert model.prompts == [] and model.commands == []


def test_install_names_the_launcher_as_one_shell_word(tmp_path):
    """A checkout whose path holds a space and a quote: the installed template's launcher word
    still runs that launcher; a second run changes nothing."""
    checkout = tmp_path / "it's a clone" / "plugins" / "opencode"
    (checkout / "bin").mkdir(parents=True)
    (checkout / "commands").mkdir()
    shutil.copy(PLUGIN / "install.sh", checkout / "install.sh")
    shutil.copy(PLUGIN / "commands" / "skillopt-sleep.md", checkout / "commands" / "skillopt-sleep.md")
    launcher = checkout / "bin" / "skillopt-sleep"
    launcher.write_text('#!/bin/sh\necho "launched with $*"\n', encoding="utf-8")
    launcher.chmod(0o755)
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    first = subprocess.run([str(checkout / "install.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0 and "installed the /skillopt-sleep command" in first.stdout, first.stderr
    installed = tmp_path / "config" / "opencode" / "commands" / "skillopt-sleep.md"
    (word,) = LAUNCHER.findall(installed.read_text(encoding="utf-8"))
    ran = subprocess.run(["sh", "-c", f"{word} status"], capture_output=True, text=True, timeout=60)
    assert ran.stdout == "launched with status\n", (word, ran.stderr)
    again = subprocess.run([str(checkout / "install.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "already up to date" in again.stdout, again.stderr


def test_the_template_prescribes_every_action_and_its_launcher_reaches_the_package_source():
    text = (PLUGIN / "commands" / "skillopt-sleep.md").read_text(encoding="utf-8")
    for action in ("status", "review", "run --estimate --agent opencode", "run --detach --agent opencode", "adopt"):
        assert f"<launcher> {action}" in text
    assert text.count("$ARGUMENTS") == 1 and "!`" not in text
    assert LAUNCHER.findall(text) == ["skillopt-sleep"]  # the line install.sh replaces
    # without SKILLOPT_SLEEP_PYTHON the launcher sets the engine up from the clone it lies in
    bin_dir = PLUGIN / "bin"
    assert load_launcher(bin_dir / "skillopt-sleep").package_source(bin_dir) == REPO
