"""The plugins against the real Claude Code and Codex CLIs (throwaway HOME / CODEX_HOME; the only
server they talk to is a fake on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from scripts.record_gemini import gemini_env
from tests.support.agent_clis import real_agent_cli
from tests.support.anthropic_server import FakeAnthropic
from tests.support.chat_server import FakeChat
from tests.support.copilot_cli import copilot_cli, copilot_env
from tests.support.gemini_server import FakeGemini
from tests.support.opencode_session import opencode_env
from tests.support.openai_server import FakeOpenAI
from tests.support import readme
from tests.support.real_clients import RELEASES, client_env, real_cli
from tests.support.repo_clone import clone_of_repo
from skillopt_sleep import __version__
from skillopt_sleep.staging.stage import StagedFile, stage
from skillopt_sleep.types import Edit, NightReport

REPO = Path(__file__).resolve().parents[2]
CLAUDE_PLUGIN = REPO / "plugins" / "claude-code"
INSTALL_SH = REPO / "plugins" / "codex" / "install.sh"
MARKETPLACE = "skillopt-sleep"


def _run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=str(cwd), timeout=timeout, stdin=subprocess.DEVNULL
    )


def _repo_copy(tmp_path: Path) -> Path:
    """A git repository holding this repository's tracked files (symlinks kept), committed, as the
    one a person clones."""
    copy = clone_of_repo(tmp_path / "origin")
    git = ["git", "-C", str(copy), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for argv in (["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run(git + argv, check=True, timeout=120, capture_output=True)
    return copy


def _readme_clone(tmp_path: Path, env: dict[str, str]) -> Path:
    """Run the README's ``git clone`` line with the copy's path for the repository's URL, in
    ``tmp_path/work``; returns that directory (where the README's later commands run)."""
    origin = _repo_copy(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    argv = shlex.split(readme.clone_line().replace(readme.CLONE_URL, str(origin)))
    assert argv[:2] == ["git", "clone"]
    out = _run(argv, env, work)
    assert out.returncode == 0, out.stdout + out.stderr
    return work


def _readme_commands(heading: str) -> list[list[str]]:
    """The commands of the code blocks under ``heading`` in README.md, split into words."""
    return [shlex.split(line) for line in readme.commands(heading)]


# --------------------------------------------------------------------------- Claude Code


@pytest.mark.real_clis
@pytest.mark.parametrize("target", ["plugins/claude-code", "."])
def test_claude_validate_strict(tmp_path, target):
    claude = real_cli("claude")
    out = _run([claude, "plugin", "validate", "--strict", "--json", target], client_env(tmp_path), REPO)
    report = json.loads(out.stdout)
    assert out.returncode == 0, out.stdout + out.stderr
    assert report["success"] is True and report["strict"] is True
    assert report["manifest"]["errors"] == [] and report["manifest"]["warnings"] == []


def _claude_install_from_readme(claude: str, env: dict[str, str], work: Path) -> None:
    commands = _readme_commands("### Install in Claude Code")
    assert [c[:3] for c in commands] == [
        ["/plugin", "marketplace", "add"],
        ["/plugin", "install", f"skillopt-sleep@{MARKETPLACE}"],
    ]
    for command in commands:  # a slash command, run as its ``claude plugin …`` shell equivalent
        out = _run([claude, "plugin", *command[1:]], env, work)
        assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.real_clis
@pytest.mark.parametrize("release", RELEASES)
def test_claude_readme_install_commands(tmp_path, release):
    """README's clone and its two slash commands (from the directory cloned into)."""
    claude = real_cli("claude", release)
    env = client_env(tmp_path)
    work = _readme_clone(tmp_path, env)
    _claude_install_from_readme(claude, env, work)
    out = _run([claude, "plugin", "list", "--json"], env, tmp_path)
    (installed,) = [p for p in json.loads(out.stdout) if p["id"] == f"skillopt-sleep@{MARKETPLACE}"]
    assert installed["enabled"] is True and installed["version"] == __version__


NOTICE = "skillopt-sleep: last night proposed 2 rules for this project — /skillopt-sleep review"


def _project_with_proposal(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "CLAUDE.md").write_bytes(b"# rules\n")
    report = NightReport(
        night_id="n1",
        project=str(project),
        mode="run",
        status="staged",
        accepted_edits=[Edit("memory", "add", "a"), Edit("memory", "add", "b")],
    )
    stage(project, report, [StagedFile("memory", project / "CLAUDE.md", b"# rules\n", b"# rules\n- a\n")])
    return project


def _events_until_init(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 180) -> list[dict]:
    """The stream-json events up to the ``init`` event (hooks run before it); then the process is
    stopped — the test is about loading the plugin, not about the model turn."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=str(cwd),
        start_new_session=True,
    )
    timer = threading.Timer(timeout, lambda: os.killpg(proc.pid, signal.SIGKILL))
    timer.start()
    events: list[dict] = []
    try:
        for raw in proc.stdout:
            if raw.startswith(b"{"):
                events.append(json.loads(raw))
                if events[-1].get("subtype") == "init":
                    break
    finally:
        timer.cancel()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
        proc.stdout.close()
    return events


@pytest.mark.real_clis
@pytest.mark.parametrize("release", RELEASES)
def test_claude_loads_the_plugin_and_runs_its_session_start_hook(tmp_path, release):
    """``claude -p --plugin-dir``: the command and skill are listed, and the SessionStart hook
    (hook.py, which reads the precomputed notice; no engine on the hook's PATH) hands Claude Code
    the notice of a staged proposal."""
    claude = real_cli("claude", release)
    project = _project_with_proposal(tmp_path)
    with FakeAnthropic(key="the-right-key") as server:  # a wrong key: no turn is ever answered
        env = client_env(
            tmp_path,
            ANTHROPIC_BASE_URL=server.base_url,
            ANTHROPIC_API_KEY="a-wrong-key",
            SKILLOPT_SLEEP_HOME=os.environ["SKILLOPT_SLEEP_HOME"],
        )
        events = _events_until_init(
            [
                claude,
                "-p",
                "hello",
                "--plugin-dir",
                str(CLAUDE_PLUGIN),
                "--output-format",
                "stream-json",
                "--verbose",
                "--max-turns",
                "1",
            ],
            env,
            project,
        )
    (init,) = [e for e in events if e.get("subtype") == "init"]
    assert "skillopt-sleep:skillopt-sleep" in init["slash_commands"]
    assert "skillopt-sleep:skillopt-sleep-guide" in init["skills"]
    assert any(p["name"] == "skillopt-sleep" and p["version"] == __version__ for p in init["plugins"])
    (hook,) = [e for e in events if e.get("subtype") == "hook_response" and e.get("hook_event") == "SessionStart"]
    assert hook["exit_code"] == 0
    answer = json.loads(hook["stdout"])
    assert answer["systemMessage"] == NOTICE
    assert answer["hookSpecificOutput"]["additionalContext"].startswith(NOTICE + "\n")


@pytest.mark.real_clis
@pytest.mark.parametrize("release", RELEASES)
def test_claude_session_end_hook_records_the_session_where_the_engine_reads_it(tmp_path, release):
    """A whole ``claude -p`` turn: at its end the SessionEnd hook (hook.py, no engine) appends the
    project to the sessions record, which the engine then reads."""
    from skillopt_sleep.commands.notice import projects_seen

    claude = real_cli("claude", release)
    project = tmp_path / "proj"
    project.mkdir()
    with FakeAnthropic(key="k") as server:
        env = client_env(
            tmp_path,
            ANTHROPIC_BASE_URL=server.base_url,
            ANTHROPIC_API_KEY="k",
            SKILLOPT_SLEEP_HOME=os.environ["SKILLOPT_SLEEP_HOME"],
        )
        out = _run([claude, "-p", "hello", "--plugin-dir", str(CLAUDE_PLUGIN), "--max-turns", "1"], env, project)
    assert out.returncode == 0, out.stderr
    seen = projects_seen()
    assert list(seen) == [str(project.resolve())] and seen[str(project.resolve())][1] == "claude"


# --------------------------------------------------------------------------- Codex


def _codex_install_from_readme(codex: str, env: dict[str, str], work: Path) -> dict:
    add_marketplace, add_plugin = _readme_commands("### Install in Codex")
    assert add_marketplace[:4] == ["codex", "plugin", "marketplace", "add"]
    assert add_plugin == ["codex", "plugin", "add", f"skillopt-sleep@{MARKETPLACE}"]
    out = _run([codex, *add_marketplace[1:]], env, work)
    assert out.returncode == 0, out.stdout + out.stderr
    out = _run([codex, "plugin", "list", "--json", "--available"], env, work)
    assert out.returncode == 0, out.stderr
    (available,) = [p for p in json.loads(out.stdout)["available"] if p["pluginId"] == f"skillopt-sleep@{MARKETPLACE}"]
    assert available["installed"] is False and available["version"] == __version__
    out = _run([codex, *add_plugin[1:], "--json"], env, work)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


@pytest.mark.real_clis
@pytest.mark.parametrize("release", RELEASES)
def test_codex_readme_install_commands(tmp_path, release):
    """README's clone, ``codex plugin marketplace add`` and ``codex plugin add``, with ``plugin list``."""
    codex = real_cli("codex", release)
    env = client_env(tmp_path)
    work = _readme_clone(tmp_path, env)
    installed_path = Path(_codex_install_from_readme(codex, env, work)["installedPath"])
    assert (installed_path / "plugins" / "codex" / "skills" / "skillopt-sleep" / "SKILL.md").is_file()
    # codex copies no symlinks: the plugin root is the repository, so the package source and the
    # launcher arrive as files
    launcher = installed_path / "plugins" / "codex" / "bin" / "skillopt-sleep"
    assert launcher.is_file() and not launcher.is_symlink() and os.access(launcher, os.X_OK)
    assert (installed_path / "pyproject.toml").is_file() and (installed_path / "skillopt_sleep" / "cli.py").is_file()
    out = _run([codex, "plugin", "list", "--json"], env, work)
    (installed,) = [p for p in json.loads(out.stdout)["installed"] if p["pluginId"] == f"skillopt-sleep@{MARKETPLACE}"]
    assert installed["enabled"] is True


@pytest.mark.real_clis
@pytest.mark.parametrize("release", RELEASES)
def test_readme_uninstall_removes_the_plugins(tmp_path, release):
    """Both plugins installed as the README says, then its Uninstall block's ``claude`` and
    ``codex`` lines, as written: no plugin and no marketplace of ours is left."""
    claude, codex = real_cli("claude", release), real_cli("codex", release)
    env = client_env(tmp_path)
    work = _readme_clone(tmp_path, env)
    _claude_install_from_readme(claude, env, work)
    _codex_install_from_readme(codex, env, work)
    lines = [c for c in _readme_commands("## Uninstall") if c[0] in ("claude", "codex")]
    assert [c[:3] for c in lines] == [
        ["claude", "plugin", "uninstall"],
        ["claude", "plugin", "marketplace"],
        ["codex", "plugin", "remove"],
        ["codex", "plugin", "marketplace"],
    ]
    before = [
        _run([claude, "plugin", "marketplace", "list", "--json"], env, work).stdout,
        _run([codex, "plugin", "marketplace", "list"], env, work).stdout,
    ]
    assert all(MARKETPLACE in listing for listing in before)  # what the checks below look for
    # the plugin's data directory, where the plugin sets up its engine: the README says it goes too
    data = Path(env["HOME"]) / ".claude" / "plugins" / "data" / f"skillopt-sleep-{MARKETPLACE}"
    (data / "venv").mkdir(parents=True)
    (data / "venv" / "marker").write_text("the engine's virtualenv\n")
    codex_data = Path(env["CODEX_HOME"]) / "plugins" / "data" / f"skillopt-sleep-{MARKETPLACE}"
    (codex_data / "engine").mkdir(parents=True)
    for command in lines:
        out = _run([claude if command[0] == "claude" else codex, *command[1:]], env, work)
        assert out.returncode == 0, " ".join(command) + "\n" + out.stdout + out.stderr
    assert codex_data.is_dir()  # codex keeps a removed plugin's data: the README's rm line removes it
    (rm_line,) = [line for line in readme.commands("## Uninstall") if line.startswith("rm ")]
    out = _run(["/bin/sh", "-c", rm_line], env, work)
    assert out.returncode == 0 and not codex_data.exists(), out.stderr
    listed = _run([claude, "plugin", "list", "--json"], env, work)
    assert [p for p in json.loads(listed.stdout) if p["id"].startswith("skillopt-sleep@")] == []
    markets = _run([claude, "plugin", "marketplace", "list", "--json"], env, work)
    assert markets.returncode == 0 and MARKETPLACE not in markets.stdout
    assert not data.exists()
    listed = _run([codex, "plugin", "list", "--json", "--available"], env, work)
    assert listed.returncode == 0 and "skillopt-sleep@" not in listed.stdout
    markets = _run([codex, "plugin", "marketplace", "list"], env, work)
    assert markets.returncode == 0 and MARKETPLACE not in markets.stdout


@pytest.mark.real_clis
def test_the_other_agents_readme_install_commands(tmp_path):
    """README's clone, then its Gemini CLI, Copilot CLI and OpenCode lines as written, each with
    the real CLI in a throwaway HOME: each agent then lists the command it gives ``/skillopt-sleep``."""
    commands = _readme_commands("### Install in Gemini CLI, Copilot CLI or OpenCode")
    assert [c[:2] for c in commands] == [
        ["gemini", "extensions"],
        ["copilot", "skill"],
        ["sh", "skillopt-sleep/plugins/opencode/install.sh"],
    ]
    with (
        FakeGemini(key="AIza-test-key") as gemini_fake,
        FakeAnthropic(key="k") as copilot_fake,
        FakeChat(key="k") as chat,
    ):
        envs = {
            "gemini": gemini_env(tmp_path / "gemini-user", gemini_fake),
            "copilot": copilot_env(tmp_path / "copilot-user", copilot_fake),
            "sh": opencode_env(tmp_path / "opencode-user" / "home", chat),
        }
        work = _readme_clone(tmp_path, envs["gemini"])
        programs = {"gemini": real_agent_cli("gemini"), "copilot": copilot_cli(), "sh": "sh"}
        for words in commands:
            env = envs[words[0]]
            out = subprocess.run(
                [programs[words[0]], *words[1:]],
                input="y\n",  # Gemini CLI asks once to confirm an extension's install
                capture_output=True,
                text=True,
                env=env,
                cwd=str(work),
                timeout=300,
            )
            assert out.returncode == 0, (words, out.stdout[-2000:], out.stderr[-2000:])
        listed = _run([programs["gemini"], "extensions", "list"], envs["gemini"], work)
        assert "skillopt-sleep" in listed.stdout + listed.stderr, listed.stdout + listed.stderr
        listed = _run([programs["copilot"], "skill", "list"], envs["copilot"], work, timeout=180)
        assert "--agent copilot" in listed.stdout + listed.stderr, listed.stdout + listed.stderr
    command = Path(envs["sh"]["XDG_CONFIG_HOME"]) / "opencode" / "commands" / "skillopt-sleep.md"
    assert "--agent opencode" in command.read_text(encoding="utf-8")
    assert str(work / "skillopt-sleep" / "plugins" / "opencode" / "bin" / "skillopt-sleep") in command.read_text(
        encoding="utf-8"
    )


def test_codex_install_sh_is_idempotent(tmp_path):
    assert "`sh skillopt-sleep/plugins/codex/install.sh`" in readme.text()
    env = client_env(tmp_path)
    skill = Path(env["CODEX_HOME"]) / "skills" / "skillopt-sleep" / "SKILL.md"
    first = _run(["sh", str(INSTALL_SH)], env, tmp_path)
    assert first.returncode == 0, first.stderr
    assert "installed the skillopt-sleep skill" in first.stdout
    assert f"install it from this checkout with: pipx install '{REPO}'" in first.stdout  # not on this PATH
    assert skill.read_bytes() == (REPO / "plugins/codex/skills/skillopt-sleep/SKILL.md").read_bytes()
    assert not (Path(env["HOME"]) / ".agents").exists()  # the folder other agents read stays as it was
    second = _run(["sh", str(INSTALL_SH)], env, tmp_path)
    assert second.returncode == 0 and "already up to date" in second.stdout
    assert sorted(p.name for p in skill.parent.iterdir()) == ["SKILL.md"]
    skill.write_text("an older copy\n")
    third = _run(["sh", str(INSTALL_SH)], env, tmp_path)
    assert third.returncode == 0 and "installed" in third.stdout
    assert skill.read_bytes() == (REPO / "plugins/codex/skills/skillopt-sleep/SKILL.md").read_bytes()


def test_codex_install_sh_moves_an_earlier_copy_out_of_the_folder_every_agent_reads(tmp_path):
    """An earlier install.sh put the skill in ~/.agents/skills/, where Gemini CLI, Copilot CLI and
    OpenCode take it for their own /skillopt-sleep (with --agent codex); a person's own skill of
    another name there, or a file of theirs beside ours, is left alone."""
    env = client_env(tmp_path)
    shared = Path(env["HOME"]) / ".agents" / "skills"
    (shared / "skillopt-sleep").mkdir(parents=True)
    (shared / "skillopt-sleep" / "SKILL.md").write_text("---\nname: skillopt-sleep\n---\nrun it with --agent codex\n")
    (shared / "mine").mkdir()
    (shared / "mine" / "SKILL.md").write_text("---\nname: mine\n---\n")
    out = _run(["sh", str(INSTALL_SH)], env, tmp_path)
    assert out.returncode == 0, out.stderr
    assert f"removed the earlier copy of the skill from {shared / 'skillopt-sleep'}" in out.stdout
    assert sorted(p.name for p in shared.iterdir()) == ["mine"]
    assert (Path(env["CODEX_HOME"]) / "skills" / "skillopt-sleep" / "SKILL.md").is_file()
    (shared / "skillopt-sleep").mkdir()
    (shared / "skillopt-sleep" / "SKILL.md").write_text("---\nname: skillopt-sleep\n---\nsomeone else's\n")
    (shared / "skillopt-sleep" / "notes.md").write_text("theirs\n")
    again = _run(["sh", str(INSTALL_SH)], env, tmp_path)
    assert again.returncode == 0 and "removed" not in again.stdout
    assert sorted(p.name for p in (shared / "skillopt-sleep").iterdir()) == ["SKILL.md", "notes.md"]


def _first_requests(server, path: str, argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 120) -> list:
    """Run a client until it has sent ``server`` its first request on ``path``, then stop it: these
    tests check what the client sends the model, not the turn."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=str(cwd),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout
        while not server.seen(path) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
    return server.seen(path)


def _user_texts(body: dict) -> list[str]:
    texts = []
    for message in body.get("messages", []):
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        texts.extend(b.get("text", "") for b in blocks if message.get("role") == "user")
    return texts


@pytest.mark.real_clis
def test_claude_expands_the_slash_command_and_the_model_sees_the_notice(tmp_path):
    """``/skillopt-sleep status`` reaches the model as the skill's instructions, with the user's
    arguments and the plugin's data directory filled in; the SessionStart notice is in the model's
    context too."""
    claude = real_cli("claude")
    project = _project_with_proposal(tmp_path)
    with FakeAnthropic(key="k") as server:
        env = client_env(
            tmp_path,
            ANTHROPIC_BASE_URL=server.base_url,
            ANTHROPIC_API_KEY="k",
            SKILLOPT_SLEEP_PYTHON=sys.executable,
            SKILLOPT_SLEEP_HOME=os.environ["SKILLOPT_SLEEP_HOME"],
        )
        requests = _first_requests(
            server,
            "/v1/messages",
            [claude, "-p", "/skillopt-sleep status", "--plugin-dir", str(CLAUDE_PLUGIN), "--max-turns", "1"],
            env,
            project,
        )
    assert requests, "claude never asked the model"
    text = "\n".join(_user_texts(requests[0].body))
    assert "The user typed `/skillopt-sleep` with these arguments: `status`" in text
    assert "| (none) or `status` | `skillopt-sleep status`" in text
    assert str(Path(env["HOME"]) / ".claude" / "plugins" / "data" / "skillopt-sleep-inline") in text
    assert "${" not in text
    assert NOTICE in json.dumps(requests[0].body, ensure_ascii=False)


@pytest.mark.real_clis
def test_codex_offers_the_installed_skill_to_the_model(tmp_path):
    """After ``codex plugin add``, a ``codex exec`` turn lists our skill (name, description, and its
    installed SKILL.md) in what it sends the model — a fake Responses endpoint on 127.0.0.1."""
    codex = real_cli("codex")
    repo = _repo_copy(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    with FakeOpenAI(key="k") as server:
        env = client_env(tmp_path, FAKE_PROVIDER_KEY="k")
        for command in (
            ["plugin", "marketplace", "add", str(repo)],
            ["plugin", "add", f"skillopt-sleep@{MARKETPLACE}"],
        ):
            out = _run([codex, *command], env, tmp_path)
            assert out.returncode == 0, out.stdout + out.stderr
        config = Path(env["CODEX_HOME"]) / "config.toml"
        config.write_text(
            'model = "fake-model"\nmodel_provider = "fake"\n\n[model_providers.fake]\nname = "fake"\n'
            f'base_url = "{server.root}/v1"\nwire_api = "responses"\nenv_key = "FAKE_PROVIDER_KEY"\n\n'
            + config.read_text(encoding="utf-8"),
            encoding="utf-8",
        )
        requests = _first_requests(
            server, "/v1/responses", [codex, "exec", "--skip-git-repo-check", "hello"], env, project
        )
    assert requests, "codex never asked the model"
    sent = json.dumps(requests[0].body, ensure_ascii=False)
    skill = (REPO / "plugins/codex/skills/skillopt-sleep/SKILL.md").read_text(encoding="utf-8")
    description = re.search(r"^description: (.*)$", skill, re.M).group(1)
    assert f"- skillopt-sleep:skillopt-sleep: {description}" in sent
    assert f"skillopt-sleep/{__version__}/plugins/codex/skills/skillopt-sleep/SKILL.md" in sent
