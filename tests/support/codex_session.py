"""A real ``codex exec`` session with the skillopt-sleep plugin installed the way a person installs
it, and a scripted Responses API that plays the model.

``ScriptedModel`` is the model: on a request that has no tool result yet it reads the skill text
codex put in front of it (the ``<skill>`` block of an explicitly invoked skill), takes the command
that text prescribes for one action, and answers with a call of the shell tool codex offers
(``exec_command``, ``shell`` or ``local_shell``, whichever is in the request's ``tools``); after
codex sends the call's output back it answers with text. It records every output codex sent, so a
test reads what really ran and what the engine printed.

``CodexSession`` is the throwaway install: a copy of the repository's marketplace and plugins,
``codex plugin marketplace add`` + ``codex plugin add`` into a private CODEX_HOME, and a
``config.toml`` whose only provider is the fake server. Nothing else of codex's configuration is
set: ``codex exec`` runs with its own default sandbox and approval policy.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.http_base import Reply, ToolCall
from tests.support.openai_server import FakeOpenAI
from tests.support.real_clients import client_env
from tests.support.repo_clone import clone_of_repo

REPO = Path(__file__).resolve().parents[2]
MARKETPLACE = "skillopt-sleep"
PLUGIN_ID = f"skillopt-sleep@{MARKETPLACE}"
SKILL_MENTION = "$skillopt-sleep:skillopt-sleep"
SHELL_TOOLS = ("exec_command", "shell", "local_shell")
RUNNING = re.compile(r"Process running with session ID (\d+)")


class SkillTextError(AssertionError):
    """The skill the model received does not prescribe a runnable command for the action."""


def skill_block(body: dict[str, Any]) -> str:
    """The text of the ``<skill>`` block codex sent for the invoked skill ('' when there is none)."""
    for item in body.get("input") or []:
        for part in item.get("content") or [] if isinstance(item, dict) else []:
            text = part.get("text", "") if isinstance(part, dict) else ""
            if text.startswith("<skill>") and "skillopt-sleep" in text:
                return text
    return ""


def _code_spans(text: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", text)


def skill_path(skill_text: str) -> str:
    """The installed SKILL.md's path, as codex names it in the ``<skill>`` block."""
    match = re.search(r"<path>([^<]+)</path>", skill_text)
    return match.group(1).strip() if match else ""


def launcher_for(skill_text: str) -> str:
    """What the skill calls ``<launcher>``: its own path with ``skills/skillopt-sleep/SKILL.md``
    replaced by ``bin/skillopt-sleep``, quoted for the shell — worked out as the text tells the
    model to."""
    path = skill_path(skill_text)
    tail = "skills/skillopt-sleep/SKILL.md"
    if "<launcher>" not in skill_text or not path.endswith(tail):
        return "skillopt-sleep"
    return shlex.quote(path[: -len(tail)] + "bin/skillopt-sleep")


def prescribed_command(skill_text: str, action: str, must_have: tuple[str, ...] = ()) -> str:
    """The first command in ``skill_text`` (a code span) that runs ``action``: its words include the
    action as a word of its own after the program, and every word of ``must_have``. Optional parts
    written ``[--flag VALUE]`` are left out and ``<launcher>`` is filled in, as a model following
    the text does when the user gave no option."""
    for span in _code_spans(skill_text):
        command = re.sub(r"\s*\[[^\]]*\]", "", span).strip()
        command = command.replace("<launcher>", launcher_for(skill_text))
        try:
            words = shlex.split(command)
        except ValueError:
            continue
        if (
            len(words) >= 2
            and action in words[1:]
            and not words[0].startswith("-")
            and all(word in words for word in must_have)
        ):
            return command
    raise SkillTextError(f"the skill prescribes no command for {action!r} with {list(must_have)}")


def function_outputs(body: dict[str, Any]) -> list[str]:
    """The tool results (``function_call_output`` and the like) codex sent since the user's last
    message: what this turn's calls returned."""
    items = [item for item in body.get("input") or [] if isinstance(item, dict)]
    last_user = max(
        (i for i, item in enumerate(items) if item.get("role") == "user" and not _is_context(item)), default=-1
    )
    outputs = []
    for item in items[last_user + 1 :]:
        if item.get("type", "").endswith("call_output"):
            output = item.get("output")
            if isinstance(output, dict):  # {"content": ..., "success": ...} in some releases
                output = output.get("content", json.dumps(output))
            elif isinstance(output, list):
                output = "\n".join(str(p.get("text", "")) for p in output if isinstance(p, dict))
            outputs.append(str(output))
    return outputs


def _is_context(item: dict[str, Any]) -> bool:
    """A user-role item codex adds itself (environment context, an invoked skill's text)."""
    parts = item.get("content") or []
    text = parts[0].get("text", "") if parts and isinstance(parts[0], dict) else ""
    return text.startswith(("<environment_context>", "<skill>"))


def shell_call(tools: list[dict[str, Any]], command: str) -> ToolCall:
    """A call of the shell tool among ``tools`` that runs ``command``."""
    offered = {t.get("name") or t.get("type"): t for t in tools if isinstance(t, dict)}
    for name in SHELL_TOOLS:
        if name not in offered:
            continue
        if name == "exec_command":
            return ToolCall(name, {"cmd": command, "yield_time_ms": 30000})
        return ToolCall(name, {"command": ["bash", "-lc", command], "timeout_ms": 120000})
    raise AssertionError(f"codex offered no shell tool: {sorted(offered)}")


@dataclass
class ScriptedModel:
    """The fake model's script for one turn in which the user asks for ``action``."""

    action: str
    must_have: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()  # the user's own options, passed through as the skill says
    commands: list[str] = field(default_factory=list)  # what the model asked codex to run
    outputs: list[str] = field(default_factory=list)  # what codex sent back
    skill_texts: list[str] = field(default_factory=list)

    @property
    def output(self) -> str:
        """Everything the command printed this turn (its first result and any later polls)."""
        return "\n".join(self.outputs)

    max_polls: int = 40

    def __call__(self, body: dict[str, Any]) -> Reply:
        outputs = function_outputs(body)
        if outputs:
            self.outputs = outputs
            running = RUNNING.search(outputs[-1])
            offered = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
            if running and "write_stdin" in offered and len(outputs) <= self.max_polls:
                # still running after the tool's wait: wait for it, as a model does
                return Reply(
                    tool_calls=[
                        ToolCall(
                            "write_stdin", {"session_id": int(running.group(1)), "chars": "", "yield_time_ms": 30000}
                        )
                    ]
                )
            return Reply(text=f"skillopt-sleep {self.action}: done.")
        skill = skill_block(body)
        self.skill_texts.append(skill)
        if not skill:
            return Reply(text="The skillopt-sleep skill was not in my context.")
        command = prescribed_command(skill, self.action, self.must_have)
        if self.extra:
            command += " " + " ".join(shlex.quote(word) for word in self.extra)
        self.commands.append(command)
        return Reply(tool_calls=[shell_call(body.get("tools") or [], command)])


def repo_copy(root: Path) -> Path:
    """A person's clone of the repository (``tests/support/repo_clone.py``)."""
    return clone_of_repo(root / "repo")


@dataclass
class CodexSession:
    codex: str
    root: Path
    server: FakeOpenAI
    env: dict[str, str] = field(default_factory=dict)

    def install(self, config: str = "", **extra_env: str) -> CodexSession:
        """Install the plugin from a clone and point codex at the fake server only (``config``:
        more of config.toml, e.g. a ``[sandbox_workspace_write]`` table)."""
        self.env = client_env(self.root, FAKE_PROVIDER_KEY=self.server.key, **extra_env)
        clone = repo_copy(self.root)
        for command in (["plugin", "marketplace", "add", str(clone)], ["plugin", "add", PLUGIN_ID]):
            out = self.run_codex(command, cwd=self.root)
            assert out.returncode == 0, out.stdout + out.stderr
        path = Path(self.env["CODEX_HOME"]) / "config.toml"
        path.write_text(
            'model = "fake-model"\nmodel_provider = "fake"\n\n[model_providers.fake]\nname = "fake"\n'
            f'base_url = "{self.server.base_url}"\nwire_api = "responses"\nenv_key = "FAKE_PROVIDER_KEY"\n\n'
            + config
            + "\n"
            + path.read_text(encoding="utf-8"),
            encoding="utf-8",
        )
        return self

    def run_codex(self, args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            [self.codex, *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=str(cwd),
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def ask(
        self,
        project: Path,
        action: str,
        *extra: str,
        must_have: tuple[str, ...] = (),
        codex_args: tuple[str, ...] = (),
        timeout: float = 240,
    ) -> tuple[ScriptedModel, subprocess.CompletedProcess]:
        """``codex exec "$skillopt-sleep:skillopt-sleep <action>"`` in ``project``, the model played by
        a ``ScriptedModel``; returns it (with what ran and what came back) and codex's result."""
        model = ScriptedModel(action, must_have, extra)
        self.server.responder = model
        prompt = " ".join([SKILL_MENTION, action, *map(shlex.quote, extra)])
        out = self.run_codex(["exec", *codex_args, "--json", prompt], cwd=project, timeout=timeout)
        return model, out

    def answer(
        self,
        project: Path,
        action: str,
        reply: str,
        must_have: tuple[str, ...] = (),
        extra: tuple[str, ...] = (),
        timeout: float = 240,
    ) -> tuple[ScriptedModel, subprocess.CompletedProcess]:
        """The user's next message in the same session (``codex exec resume --last``): the model
        runs the skill's command for ``action`` that has ``must_have``, with the options ``extra``
        the user gave."""
        model = ScriptedModel(action, must_have, extra)
        self.server.responder = model
        out = self.run_codex(["exec", "resume", "--last", "--json", reply], cwd=project, timeout=timeout)
        return model, out


def events(out: subprocess.CompletedProcess) -> list[dict[str, Any]]:
    """``codex exec --json``'s events."""
    rows = []
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    return rows


def app_server_call(
    session: CodexSession, cwd: Path, requests: list[tuple[str, dict[str, Any]]], timeout: float = 60
) -> list[dict[str, Any]]:
    """Send ``requests`` (method, params) to ``codex app-server`` over stdio (JSON-RPC, one object
    a line) after the initialize handshake; return their results in order."""
    proc = subprocess.Popen(
        [session.codex, "app-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=session.env,
        cwd=str(cwd),
        text=True,
    )
    results: list[dict[str, Any]] = []
    try:

        def send(message: dict[str, Any]) -> None:
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
            proc.stdin.flush()

        def call(number: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
            send({"id": number, "method": method, "params": params})
            for line in proc.stdout:
                message = json.loads(line)
                if message.get("id") == number:
                    assert "error" not in message, message
                    return message["result"]
            raise AssertionError(f"codex app-server ended before answering {method}")

        call(0, "initialize", {"clientInfo": {"name": "skillopt-sleep-tests", "version": "1"}})
        send({"method": "initialized"})
        for number, (method, params) in enumerate(requests, start=1):
            results.append(call(number, method, params))
    finally:
        proc.kill()
        proc.wait(timeout=timeout)
    return results


def plugin_hooks(session: CodexSession, project: Path) -> list[dict[str, Any]]:
    """The plugin's hooks as codex lists them for ``project`` (``hooks/list``), with their trust."""
    (listed,) = app_server_call(session, project, [("hooks/list", {"cwds": [str(project)]})])
    return [hook for entry in listed["data"] for hook in entry["hooks"] if hook.get("pluginId") == PLUGIN_ID]


def trust_plugin_hooks(session: CodexSession, project: Path) -> list[dict[str, Any]]:
    """What a person does in codex's ``/hooks`` review: trust the plugin's hooks as they are now —
    through the app-server calls the TUI makes (``hooks/list``, then ``config/batchWrite`` of
    ``hooks.state`` with each hook's current hash). Returns the hooks as listed afterwards."""
    hooks = plugin_hooks(session, project)
    assert hooks, "codex lists no hook of the plugin"
    trusted = {hook["key"]: {"trusted_hash": hook["currentHash"]} for hook in hooks}
    app_server_call(
        session,
        project,
        [("config/batchWrite", {"edits": [{"keyPath": "hooks.state", "mergeStrategy": "upsert", "value": trusted}]})],
    )
    return plugin_hooks(session, project)
