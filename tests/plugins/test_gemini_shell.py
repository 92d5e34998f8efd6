"""The Gemini CLI extension (``plugins/gemini``) in the real ``gemini`` TUI: installed with
``gemini extensions install`` into a throwaway HOME, the person types ``/skillopt-sleep status``,
the scripted model receives the command's expanded prompt and answers with the one shell call it
prescribes, the person approves that call in the CLI's default approval mode (Enter on "Allow
once"), and the engine's own status text comes back to the model as the tool's result.

The engine runs through the extension's launcher with ``SKILLOPT_SLEEP_PYTHON`` (the test's own
interpreter), so no virtualenv is built.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, published as tomli for older Pythons
    import tomli as tomllib

from skillopt_sleep import __version__
from scripts.record_gemini import gemini_env, typed_text
from scripts.record_transcripts import Tmux, wait_until
from tests.support.agent_clis import real_agent_cli
from tests.support.gemini_server import FakeGemini, has_function_response, json_schema, tool_names
from tests.support.http_base import Reply, ToolCall
from tests.support.plugin_launcher import load_launcher
from tests.support.shell_session import DONE, REPO, ShellCalls, install_codex_skill, open_tui

pytestmark = [pytest.mark.slow, pytest.mark.real_clis]

EXTENSION = REPO / "plugins" / "gemini"
HEADER = "# skillopt-sleep for Gemini CLI"
LAUNCHER = re.compile(r"`(~/\.gemini/extensions/skillopt-sleep/bin/skillopt-sleep)`")
REQUEST = re.compile(r"The user's request \(the words after `/skillopt-sleep`; none means `status`\): (.*)\s*\Z")


class ScriptedModel(ShellCalls):
    """Runs the launcher the expanded prompt names with the action the person typed."""

    def __init__(self) -> None:
        super().__init__(HEADER)

    def __call__(self, body: dict[str, Any]) -> str | Reply | None:
        if json_schema(body):
            return None  # the CLI's routing and next-speaker checks
        if has_function_response(body):
            for part in body["contents"][-1]["parts"]:
                if "functionResponse" in part:
                    self.outputs.append(json.dumps(part["functionResponse"]))
            return DONE
        text = typed_text(body)
        if HEADER not in text or "run_shell_command" not in tool_names(body):
            return "Done."
        launcher = LAUNCHER.search(text)
        command = self.plan(text, launcher.group(1) if launcher else None, REQUEST)
        return Reply(tool_calls=[ToolCall("run_shell_command", {"command": command, "description": "skillopt-sleep"})])


@pytest.fixture
def session(tmp_path):
    gemini = real_agent_cli("gemini")
    with FakeGemini(key="AIza-test-key") as fake:
        model = ScriptedModel()
        fake.responder = model
        env = gemini_env(tmp_path / "user", fake)
        # the CLI's default approval mode: every shell command asks the person first
        settings_path = Path(env["HOME"]) / ".gemini" / "settings.json"
        settings = json.loads(settings_path.read_text(encoding="utf-8"))
        del settings["general"]["defaultApprovalMode"]
        settings_path.write_text(json.dumps(settings, indent=2), encoding="utf-8")
        env["SKILLOPT_SLEEP_PYTHON"] = sys.executable
        project = tmp_path / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=60)
        (project / "GEMINI.md").write_text("# Project rules\n\nKeep it short.\n", encoding="utf-8")
        yield gemini, fake, model, env, project


def install(gemini: str, env: dict[str, str], project: Path) -> subprocess.CompletedProcess:
    """What a person runs from a clone: ``gemini extensions install <clone>/plugins/gemini``
    (``--consent`` answers the CLI's one security question)."""
    return subprocess.run(
        [gemini, "extensions", "install", str(EXTENSION), "--consent"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def tui(gemini: str, env: dict[str, str], project: Path) -> Tmux:
    return open_tui([gemini], project, env, name="skillopt-gemini-shell", ready="Type your message")


def run_approved(gemini: str, env: dict[str, str], project: Path, model: ScriptedModel, line: str) -> str:
    """Type ``line``, approve the shell command the way a person does (Enter on the highlighted
    "Allow once") and wait for the model's answer to its result. Returns the question's screen."""
    screen = tui(gemini, env, project)
    try:
        screen.type_line(line)
        wait_until("the approval question", lambda: "Allow once" in screen.screen(), 180)
        asked = screen.screen()
        screen.keys("Enter")
        wait_until("the tool's result to reach the model", lambda: bool(model.outputs), 180)
        wait_until("the model's last answer on screen", lambda: DONE in screen.screen(), 60)
        return asked
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; the screen:\n{screen.screen()}") from None
    finally:
        screen.kill()


def test_the_installed_command_runs_the_engine_once_the_person_approves(session):
    gemini, fake, model, env, project = session
    out = install(gemini, env, project)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    installed = Path(env["HOME"]) / ".gemini" / "extensions" / "skillopt-sleep"
    assert (installed / "commands" / "skillopt-sleep.toml").is_file()
    assert os.access(installed / "bin" / "skillopt-sleep", os.X_OK)
    # without SKILLOPT_SLEEP_PYTHON the launcher sets the engine up from the package source the
    # installed copy reaches through engine/ (the install copies symlinks as absolute links)
    assert load_launcher(installed / "bin" / "skillopt-sleep").package_source(installed / "bin") == installed / "engine"

    asked = run_approved(gemini, env, project, model, "/skillopt-sleep status")
    (prompt,) = model.prompts
    assert "--agent gemini" in prompt and "<launcher> run --detach --agent gemini" in prompt
    assert prompt.rstrip().endswith("none means `status`): status")  # {{args}} filled in
    assert model.commands == ["~/.gemini/extensions/skillopt-sleep/bin/skillopt-sleep status"]
    assert "Allow execution of [Shell]?" in asked and model.commands[0] in asked, asked
    output = model.output
    assert f"skillopt-sleep status for {project}" in output, output
    assert "latest proposal: none" in output, output


def test_the_codex_skill_installed_beside_it_leaves_the_command_as_it_is(session):
    """Gemini CLI makes skills slash commands too and reads ``~/.agents/skills/``; a skill named
    ``skillopt-sleep`` there would rename both. ``plugins/codex/install.sh`` puts the Codex skill in
    Codex's own folder instead, so ``/skillopt-sleep`` stays this extension's command."""
    gemini, fake, model, env, project = session
    install_codex_skill(env)
    out = install(gemini, env, project)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    run_approved(gemini, env, project, model, "/skillopt-sleep status")
    (prompt,) = model.prompts
    assert "--agent gemini" in prompt and "--agent codex" not in prompt
    assert f"skillopt-sleep status for {project}" in model.output, model.output


def test_without_the_extension_the_command_does_not_exist(session):
    """The control: without the extension the typed line is no command; the CLI sends it to the
    model as it is, and no prompt of ours reaches the model."""
    gemini, fake, model, env, project = session
    screen = tui(gemini, env, project)
    try:
        screen.type_line("/skillopt-sleep status")
        wait_until("the model's answer on screen", lambda: "Done." in screen.screen(), 120)
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; the screen:\n{screen.screen()}") from None
    finally:
        screen.kill()
    sent = [typed_text(r.body) for r in fake.model_requests() if not json_schema(r.body)]
    assert sent and sent[-1].strip() == "/skillopt-sleep status", sent
    assert model.prompts == [] and model.commands == []


def test_the_extension_is_the_engines_version_and_prescribes_every_action():
    manifest = json.loads((EXTENSION / "gemini-extension.json").read_text(encoding="utf-8"))
    assert manifest["name"] == "skillopt-sleep" and manifest["version"] == __version__
    prompt = tomllib.loads((EXTENSION / "commands" / "skillopt-sleep.toml").read_text(encoding="utf-8"))["prompt"]
    for action in ("status", "review", "run --estimate --agent gemini", "run --detach --agent gemini", "adopt"):
        assert f"<launcher> {action}" in prompt
    for action in ("revert", "schedule", "unschedule"):
        assert f"<launcher> {action}" in prompt
    assert prompt.count("{{args}}") == 1 and "!{" not in prompt and "@{" not in prompt
