"""The Copilot CLI skill (``plugins/copilot``) in the real ``copilot`` TUI: registered with
``copilot skill add <clone>/plugins/copilot/skills`` in a throwaway HOME, the person types
``/skillopt-sleep status``, the scripted model (``FakeAnthropic`` through the CLI's BYOK provider)
receives the skill's text with the typed words and answers with the one ``bash`` call it
prescribes, the person approves it in the CLI's default mode ("Manual Approval"): first access to
the launcher's path (it lies outside the project), then running the command — and the engine's own
status text comes back to the model as the tool's result.

The engine runs through the plugin's launcher with ``SKILLOPT_SLEEP_PYTHON`` (the test's own
interpreter), so no virtualenv is built.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from scripts.record_transcripts import Tmux, wait_until
from tests.support.anthropic_server import FakeAnthropic
from tests.support.copilot_cli import copilot_cli, copilot_env
from tests.support.http_base import Reply, ToolCall
from tests.support.plugin_launcher import load_launcher
from tests.support.shell_session import DONE, REPO, ShellCalls, install_codex_skill, open_tui

pytestmark = [pytest.mark.slow, pytest.mark.real_clis]

SKILLS = REPO / "plugins" / "copilot" / "skills"
HEADER = "# skillopt-sleep for GitHub Copilot CLI"
BASE = re.compile(r"Base directory for this skill: (.+)")
REQUEST = re.compile(r"ARGUMENTS: (.*)")
RETRY = "changed after permission evaluation"
QUESTIONS = ("Do you want to run this command?", "Do you want to allow this?")


def user_texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def tool_results(message: dict[str, Any]) -> list[str]:
    found = []
    for block in message.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            inner = block.get("content")
            found.append(inner if isinstance(inner, str) else "\n".join(user_texts({"content": inner})))
    return found


class ScriptedModel(ShellCalls):
    """Runs the launcher beside the skill's base directory with the action the person typed."""

    def __init__(self) -> None:
        super().__init__(HEADER)

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        results = tool_results(last) if isinstance(last.get("content"), list) else []
        if results:
            self.outputs.extend(results)
            if RETRY in results[-1] and len(self.commands) == 1:  # as the skill says: once more
                self.commands.append(self.commands[0])
                return Reply(tool_calls=[ToolCall("bash", self.call(self.commands[0]))])
            return DONE
        text = "\n".join(user_texts(last))
        tools = {t.get("name") for t in body.get("tools") or []}
        if HEADER not in text or "bash" not in tools:
            return "Done."
        base = BASE.search(text)
        launcher = base.group(1).strip().removesuffix("skills/skillopt-sleep") + "bin/skillopt-sleep" if base else ""
        command = self.plan(text, shlex.quote(launcher) if launcher else None, REQUEST)
        return Reply(tool_calls=[ToolCall("bash", self.call(command))])

    @staticmethod
    def call(command: str) -> dict[str, str]:
        return {"command": command, "description": "Run skillopt-sleep", "mode": "sync"}


@pytest.fixture
def session(tmp_path):
    copilot = copilot_cli()
    with FakeAnthropic(key="k") as fake:
        model = ScriptedModel()
        fake.responder = model
        project = tmp_path / "my project"  # a space in the project's path
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=60)
        env = copilot_env(tmp_path / "user", fake, trust=(project,))
        env["SKILLOPT_SLEEP_PYTHON"] = sys.executable
        # Copilot lets a command reach the temp dir without asking: a temp dir of its own, so a
        # checkout under /tmp (as in CI) is outside it, as a person's clone in their home is
        (tmp_path / "tmp").mkdir()
        env["TMPDIR"] = str(tmp_path / "tmp")
        yield copilot, fake, model, env, project


def tui(copilot: str, env: dict[str, str], project: Path, *args: str) -> Tmux:
    return open_tui([copilot, *args], project, env, name="skillopt-copilot-shell", ready="/ commands")


def add_skill(copilot: str, env: dict[str, str], project: Path) -> subprocess.CompletedProcess:
    """What a person runs from a clone: ``copilot skill add <clone>/plugins/copilot/skills``."""
    return subprocess.run(
        [copilot, "skill", "add", str(SKILLS)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def approve(screen: Tmux, model: ScriptedModel, *, remember: bool = False, outputs: int = 1) -> dict[str, str]:
    """What the person does while the command waits: answer each question Copilot asks with "Yes"
    (for the launcher's path: "1. Yes", or the highlighted "2. Yes, and remember this path for this
    session" when ``remember``) until ``outputs`` tool results reached the model. Returns the screen
    of each question, in the order asked."""
    asked: dict[str, str] = {}
    deadline = time.monotonic() + 240
    while len(model.outputs) < outputs:
        if time.monotonic() > deadline:
            raise TimeoutError("timed out waiting for the tool's result to reach the model")
        shown = screen.screen()
        question = next((q for q in QUESTIONS if q in shown), None)
        if question is None:
            time.sleep(0.5)
            continue
        time.sleep(1)  # the dialog listens once drawn
        asked[question] = screen.screen()
        if question == QUESTIONS[1] and not remember:
            screen.keys("Up")  # "1. Yes": for this command only
            time.sleep(0.5)
        screen.keys("Enter")
        time.sleep(3)
    return asked


def test_the_registered_skill_runs_the_engine_once_the_person_approves(session):
    copilot, fake, model, env, project = session
    out = add_skill(copilot, env, project)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]

    screen = tui(copilot, env, project)
    try:
        screen.type_line("/skillopt-sleep status")
        asked = approve(screen, model)
        wait_until("the model's last answer on screen", lambda: DONE in screen.screen(), 60)
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; the screen:\n{screen.screen()}") from None
    finally:
        screen.kill()

    (prompt,) = model.prompts
    assert "<launcher> run --detach --agent copilot" in prompt and "ARGUMENTS: status" in prompt
    launcher = SKILLS.parent / "bin" / "skillopt-sleep"
    assert model.commands == [f"{shlex.quote(str(launcher))} status"]
    assert list(asked) == [QUESTIONS[1], QUESTIONS[0]]  # the path first, then the command
    run, path = asked[QUESTIONS[0]], asked[QUESTIONS[1]]
    assert str(launcher) in run and "❯ 1. Yes" in run, run
    # the launcher lies outside the project: Copilot asks once more, for its path
    assert "Allow path access" in path and "2. Yes, and remember this path for this session" in path, path
    output = model.output
    assert f"skillopt-sleep status for {project}" in output, output
    assert "latest proposal: none" in output, output


def test_remembering_the_launchers_path_costs_one_retry(session):
    """The path question's highlighted answer, "remember this path for this session", changes the
    session's permissions while the command waits: Copilot refuses that run and asks for a retry,
    which the skill prescribes; the retried command asks only whether to run it."""
    copilot, fake, model, env, project = session
    out = add_skill(copilot, env, project)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    screen = tui(copilot, env, project)
    try:
        screen.type_line("/skillopt-sleep status")
        approve(screen, model, remember=True, outputs=2)
        wait_until("the model's last answer on screen", lambda: DONE in screen.screen(), 60)
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; the screen:\n{screen.screen()}") from None
    finally:
        screen.kill()
    refused, output = model.outputs
    assert RETRY in refused and "Retry the command" in refused, refused
    assert len(model.commands) == 2 and model.commands[0] == model.commands[1]
    assert f"skillopt-sleep status for {project}" in output, output


def test_the_documented_flags_run_the_launcher_without_a_question(session):
    """``--add-dir`` for the plugins (the launcher and its symlink's target) and ``--allow-tool``
    for the launcher's shell command: nothing is asked."""
    copilot, fake, model, env, project = session
    out = add_skill(copilot, env, project)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    launcher = SKILLS.parent / "bin" / "skillopt-sleep"
    flags = ("--add-dir", str(SKILLS.parent.parent), f"--allow-tool=shell({launcher}:*)")
    screen = tui(copilot, env, project, *flags)
    seen: list[str] = []

    def answered() -> bool:
        seen.append(screen.screen())  # every screen until the result came: no question among them
        return bool(model.outputs)

    try:
        screen.type_line("/skillopt-sleep status")
        wait_until("the tool's result to reach the model", answered, 180)
        wait_until("the model's last answer on screen", lambda: DONE in screen.screen(), 60)
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; the screen:\n{screen.screen()}") from None
    finally:
        screen.kill()
    assert not any(q in shown for q in QUESTIONS for shown in seen)
    assert f"skillopt-sleep status for {project}" in model.output, model.output


def test_the_codex_skill_installed_beside_it_does_not_shadow_this_one(session):
    """Copilot also reads ``~/.agents/skills/``, where a Codex skill of the same name would win over
    this one; ``plugins/codex/install.sh`` puts the Codex skill in Codex's own folder instead, so
    Copilot lists this one (its description names ``--agent copilot``) and skips nothing."""
    copilot, fake, model, env, project = session
    install_codex_skill(env)
    assert add_skill(copilot, env, project).returncode == 0
    listed = subprocess.run(
        [copilot, "skill", "list"], cwd=project, env=env, capture_output=True, text=True, timeout=180
    )
    shown = listed.stdout + listed.stderr
    assert "Skipped duplicate skill name" not in shown, shown
    assert "Runs the skillopt-sleep engine with --agent copilot" in shown and "--agent codex" not in shown, shown


def test_without_the_skill_the_command_does_not_exist(session):
    """The control: without the registered skill the CLI says the command is unknown and no text of
    ours reaches the model."""
    copilot, fake, model, env, project = session
    screen = tui(copilot, env, project)
    try:
        screen.type_line("/skillopt-sleep status")
        wait_until("the CLI's answer", lambda: "Unknown command" in screen.screen(), 60)
        shown = screen.screen()
    finally:
        screen.kill()
    assert "Unknown command: /skillopt-sleep" in shown, shown
    assert model.prompts == [] and model.commands == []


def test_the_skill_names_itself_and_its_launcher_reaches_the_package_source():
    text = (SKILLS / "skillopt-sleep" / "SKILL.md").read_text(encoding="utf-8")
    front = dict(line.partition(": ")[::2] for line in text.split("---\n")[1].splitlines())
    assert front["name"] == "skillopt-sleep" and 0 < len(front["description"]) <= 1024
    for action in ("status", "review", "run --estimate --agent copilot", "run --detach --agent copilot", "adopt"):
        assert f"<launcher> {action}" in text
    # without SKILLOPT_SLEEP_PYTHON the launcher sets the engine up from the clone it lies in
    bin_dir = SKILLS.parent / "bin"
    assert load_launcher(bin_dir / "skillopt-sleep").package_source(bin_dir) == REPO
