"""The Codex plugin in a real ``codex exec`` session (both pinned releases), installed from a clone
the way a person installs it, with a scripted model that runs exactly the command the skill's text
prescribes for each action — so a skill that prescribes something codex will not run fails here.

``codex exec`` runs with its defaults: sandbox ``read-only``, approval policy ``never``. Measured:
the sandbox lets nothing be written (under ``workspace-write`` the user's state directory and the
project's ``.agents/`` stay read-only too) and an escalation request is rejected under ``never``;
a command the user's Codex rules allow runs outside the sandbox. So ``status`` and ``review`` run
as they are; a command that writes says how to allow the engine (one rules line), and once the
user has put that line in their rules every action runs.

The throwaway HOME lives under /tmp, which ``workspace-write`` leaves writable; the config excludes
/tmp from the writable roots so the sandbox treats that HOME as it treats a real one.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.codex_session import CodexSession, events, plugin_hooks, trust_plugin_hooks
from tests.support.openai_server import FakeOpenAI
from tests.support.real_clients import RELEASES, real_cli
from tests.support.scheduler_tools import FAKES
from tests.support.staged_project import stage_memory
from tests.support.tasks import make_tasks, write_tasks_file

pytestmark = [pytest.mark.slow, pytest.mark.real_clis]

AGENTS_OLD = b"# Project rules\n\nKeep it short.\n"
AGENTS_NEW = b"# Project rules\n\nKeep it short.\n- Use conventional commits.\n"
REAL_HOME_SANDBOX = "[sandbox_workspace_write]\nexclude_slash_tmp = true\nexclude_tmpdir_env_var = true\n"
RULE_LINE = re.compile(r"put the line (prefix_rule\(.*?\)) in (\S+)")
RULE_HINT = 'put the line prefix_rule(pattern = [{launcher}], decision = "allow") in {where}'
SLOW_SIM = "sim:seed=3,latency=0.1"  # simulated latency per call: the night outlasts the agent's turn


@pytest.fixture(params=RELEASES)
def session(request, tmp_path):
    codex = real_cli("codex", request.param)
    with FakeOpenAI(key="k") as server:
        yield CodexSession(codex, tmp_path, server).install(
            config=REAL_HOME_SANDBOX, SKILLOPT_SLEEP_PYTHON=sys.executable, SKILLOPT_SLEEP_BACKEND="sim"
        )


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "my project"  # a space in the project's path
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    (root / "AGENTS.md").write_bytes(AGENTS_OLD)
    return root


def ran(model, out) -> str:
    """The one command the model asked for and what codex sent back: it ran (not refused by the
    sandbox or the approval policy) — the output has the process's exit code."""
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert len(model.commands) == 1, (model.commands, model.skill_texts)
    output = model.output
    assert "approval policy" not in output and "rejected" not in output, output
    assert re.search(r"Process exited with code \d+", model.outputs[-1]), output
    # codex's --json record of the command, when it printed one (for a command that ends at once it
    # sometimes prints none, seen with both releases under load): the same command
    recorded = {
        e["item"]["command"]
        for e in events(out)
        if e.get("type") in ("item.started", "item.completed") and e["item"].get("type") == "command_execution"
    }
    assert all(model.commands[0] in command for command in recorded), (recorded, model.commands)
    return output


def exit_code(output: str) -> int:
    return int(re.findall(r"Process exited with code (\d+)", output)[-1])


def allow_engine(session: CodexSession, refusal: str) -> Path:
    """What the person does once: the rules line the engine's refusal gave, in the file it names."""
    line, where = RULE_LINE.search(refusal).groups()
    path = Path(where.replace("~", session.env["HOME"], 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(line + "\n", encoding="utf-8")
    return path


def allow_launcher(session: CodexSession, command: str) -> Path:
    """The same allowance for the launcher ``command`` runs (its rules line as the engine gives it)."""
    launcher = shlex.split(command)[0]
    return allow_engine(
        session, RULE_HINT.format(launcher=json.dumps(launcher), where="~/.codex/rules/skillopt-sleep.rules")
    )


def test_status_runs_in_the_default_sandbox(session, project):
    model, out = session.ask(project, "status")
    output = ran(model, out)
    assert exit_code(output) == 0, output
    assert f"skillopt-sleep status for {project}" in output
    assert "latest proposal: none" in output


def test_review_shows_the_staged_proposal(session, project):
    session.env["SKILLOPT_SLEEP_HOME"] = os.environ["SKILLOPT_SLEEP_HOME"]  # whose key sealed the proposal
    stage_memory(project, AGENTS_NEW, rules=1, name="AGENTS.md")
    model, out = session.ask(project, "review")
    output = ran(model, out)
    assert exit_code(output) == 0, output
    assert "# skillopt-sleep proposal: night n1 (staged)" in output
    assert "+- Use conventional commits." in output


def test_adopt_says_how_to_allow_the_engine_then_adopt_and_revert_run(session, project):
    """In the read-only sandbox adopt changes nothing and says, in one line, which rules line lets
    Codex run the engine outside it; with that line in the user's rules, adopt writes AGENTS.md
    and revert restores its exact bytes."""
    session.env["SKILLOPT_SLEEP_HOME"] = os.environ["SKILLOPT_SLEEP_HOME"]  # whose key sealed the proposal
    stage_memory(project, AGENTS_NEW, rules=1, name="AGENTS.md")
    model, out = session.ask(project, "adopt")
    refusal = ran(model, out)
    assert exit_code(refusal) == 9, refusal
    assert "Codex's sandbox keeps it read-only" in refusal and "Traceback" not in refusal
    assert (project / "AGENTS.md").read_bytes() == AGENTS_OLD
    assert not (project / ".skillopt-sleep" / "adoptions.jsonl").exists()

    allow_engine(session, refusal)
    model, out = session.ask(project, "adopt")
    output = ran(model, out)
    assert exit_code(output) == 0, output
    assert "Adopted night n1: wrote 1 file(s)" in output
    assert (project / "AGENTS.md").read_bytes() == AGENTS_NEW

    model, out = session.ask(project, "revert")
    output = ran(model, out)
    assert exit_code(output) == 0, output
    assert "n1" in output
    assert (project / "AGENTS.md").read_bytes() == AGENTS_OLD


def test_the_model_sees_the_engine_output_codex_sent(session, project):
    """The tool result codex hands the model is the engine's own text (not a summary)."""
    model, out = session.ask(project, "status")
    output = ran(model, out)
    final = [e["item"]["text"] for e in events(out) if e.get("item", {}).get("type") == "agent_message"]
    assert final == ["skillopt-sleep status: done."]
    assert json.dumps(output)  # plain text
    assert "schedule: none" in output


def night_state(project: Path) -> dict:
    return json.loads((project / ".skillopt-sleep" / "night-state.json").read_text(encoding="utf-8"))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_run_shows_the_estimate_then_starts_the_night_in_the_background(session, project, tmp_path):
    """``run``: the model first runs the estimate and asks; on "yes" it starts the night detached.
    The agent's turn (and codex) ends while the night goes on outside the sandbox; ``status``
    follows it to its result."""
    tasks = write_tasks_file(tmp_path / "tasks.json", make_tasks(4))
    session.env["SKILLOPT_SLEEP_BACKEND"] = SLOW_SIM
    model, out = session.ask(project, "status")
    allow_launcher(session, model.commands[0])

    model, out = session.ask(project, "run", "--tasks-file", str(tasks))
    estimate = ran(model, out)
    assert "--estimate" in model.commands[0] and "--detach" not in model.commands[0]
    assert exit_code(estimate) == 0, estimate
    assert not (project / ".skillopt-sleep" / "night-state.json").exists()  # nothing started yet

    model, out = session.answer(
        project, "run", "yes, start it", must_have=("--detach",), extra=("--tasks-file", str(tasks))
    )
    started = ran(model, out)
    assert exit_code(started) == 0, started
    assert "night started in the background" in started and "follow it with: skillopt-sleep status" in started
    pid = night_state(project)["pid"]
    try:
        assert alive(pid), "the night ended with the agent's turn"
        assert night_state(project)["state"] == "running"
        deadline = time.monotonic() + 120
        while alive(pid) and not night_state(project).get("calls_done") and time.monotonic() < deadline:
            time.sleep(0.2)
        model, out = session.ask(project, "status")  # what the skill runs to follow the night
        following = ran(model, out)
        assert f"night running now (pid {pid})" in following, following
        assert re.search(r"\d+/\d+ model calls, .* elapsed", following), following
        deadline = time.monotonic() + 300
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        if alive(pid):
            os.killpg(pid, signal.SIGKILL)
    assert night_state(project)["state"] == "finished" and night_state(project)["exit_code"] == 0
    model, out = session.ask(project, "status")
    assert "last night finished" in ran(model, out)


def test_schedule_and_unschedule_change_the_users_crontab(session, project, tmp_path):
    """``schedule`` installs one cron entry (a fake ``crontab`` on the user's PATH, its table a
    file) and ``unschedule`` removes it, both from inside the agent's turn."""
    fakes = tmp_path / "fake-os"
    fakes.mkdir()
    bin_dir = Path(session.env["HOME"]) / ".local" / "bin"  # on PATH through the stock ~/.profile
    bin_dir.mkdir(parents=True)
    (bin_dir / "crontab").symlink_to(FAKES / "crontab")
    (Path(session.env["HOME"]) / ".profile").write_text(
        'if [ -d "$HOME/.local/bin" ] ; then\n    PATH="$HOME/.local/bin:$PATH"\nfi\n', encoding="utf-8"
    )
    table = fakes / "crontab.txt"
    session.env.update(SKILLOPT_FAKE_SCHED_LOG=str(fakes / "calls.jsonl"), SKILLOPT_FAKE_CRONTAB=str(table))
    model, out = session.ask(project, "status")
    allow_launcher(session, model.commands[0])

    model, out = session.ask(project, "schedule")
    output = ran(model, out)
    assert exit_code(output) == 0, output
    assert "nightly at" in output and "via cron" in output
    entries = [
        line
        for line in table.read_text(encoding="utf-8").splitlines()
        if "skillopt" in line and not line.startswith("#")
    ]
    assert len(entries) == 1 and "skillopt_sleep nightly" in entries[0], table.read_text(encoding="utf-8")

    model, out = session.ask(project, "unschedule")
    output = ran(model, out)
    assert exit_code(output) == 0, output
    assert "skillopt" not in (table.read_text(encoding="utf-8") if table.exists() else "")


def developer_texts(body: dict) -> list[str]:
    return [
        part.get("text", "")
        for item in body.get("input") or []
        if item.get("role") == "developer"
        for part in item.get("content") or []
    ]


def test_session_start_notice_reaches_the_model_once_the_hook_is_trusted(session, project, tmp_path):
    """The plugin's SessionStart hook (plugins/codex/hooks/hooks.json) reads the precomputed notice
    and codex puts it in the model's context — after the person trusted the hook in ``/hooks``;
    until then codex lists it as untrusted and skips it. A project with nothing staged: no notice."""
    session.env["SKILLOPT_SLEEP_HOME"] = os.environ["SKILLOPT_SLEEP_HOME"]  # where the test stages
    stage_memory(project, AGENTS_NEW, rules=1, name="AGENTS.md")
    notice = "skillopt-sleep: last night proposed 1 rule for this project — ask for the skillopt-sleep review"
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    subprocess.run(["git", "init", "-q", str(quiet)], check=True, timeout=60)

    (hook,) = plugin_hooks(session, project)
    assert hook["eventName"] == "sessionStart" and hook["trustStatus"] == "untrusted"
    out = session.run_codex(["exec", "--json", "hello"], cwd=project)
    assert out.returncode == 0, out.stderr[-2000:]
    assert not any(notice in text for text in developer_texts(session.server.seen("/v1/responses")[-1].body))

    (hook,) = trust_plugin_hooks(session, project)
    assert hook["trustStatus"] == "trusted"
    for cwd, expected in ((project, True), (quiet, False)):
        before = len(session.server.seen("/v1/responses"))
        out = session.run_codex(["exec", "--json", "hello"], cwd=cwd)
        assert out.returncode == 0, out.stderr[-2000:]
        first = session.server.seen("/v1/responses")[before].body
        assert any(notice in text for text in developer_texts(first)) is expected, developer_texts(first)


@pytest.fixture(params=RELEASES)
def fresh_session(request, tmp_path):
    """No engine anywhere: the plugin's launcher has to set it up from the plugin's own files."""
    codex = real_cli("codex", request.param)
    with FakeOpenAI(key="k") as server:
        yield CodexSession(codex, tmp_path, server).install(config=REAL_HOME_SANDBOX, SKILLOPT_SLEEP_BACKEND="sim")


def test_first_use_sets_the_engine_up_once_codex_may_run_it(fresh_session, project):
    """The first ``status`` in the read-only sandbox cannot set the engine up and says which rules
    line allows it; with that line, the launcher sets the engine up (its one line on stderr, the
    model polling while pip works) and the engine's status comes back; the next call is quiet."""
    model, out = fresh_session.ask(project, "status")
    refusal = ran(model, out)
    assert exit_code(refusal) != 0 and "could not set up its engine" in refusal, refusal
    assert "Codex's sandbox keeps it read-only" in refusal
    allow_engine(fresh_session, refusal)

    model, out = fresh_session.ask(project, "status", timeout=1500)
    output = ran(model, out)
    assert exit_code(output) == 0, output
    assert "setting up its engine (first use)" in output
    assert f"skillopt-sleep status for {project}" in output

    model, out = fresh_session.ask(project, "status")
    output = ran(model, out)
    assert exit_code(output) == 0 and "setting up its engine" not in output, output
