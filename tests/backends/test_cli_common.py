"""What the claude-cli and codex-cli backends share (backends/cli_common.py), against fake
executables on PATH that record argv, cwd, stdin, the environment they were given and the files
they were pointed at (tests/support/fake_cli.py): each call runs in an empty replay directory with
a private TMPDIR that is removed afterwards, a long document goes through a file, a failure is
classified, retried bounded and never an answer, a missing CLI is unavailable, an interrupted call
does not leave the CLI running, and a task that needs a tool is left out of a CLI backend's night.
The real CLIs against fake providers are in test_real_cli_backends.py."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from tests.support.fake_cli import runs

from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.base import ProviderError, Request
from skillopt_sleep.backends.claude_cli import ClaudeCliBackend
from skillopt_sleep.backends.codex_cli import CodexCliBackend
from skillopt_sleep.backends.client import Client
from skillopt_sleep.paths import REPLAY_DIR_PREFIX

REQ = Request(purpose="attempt", system="SKILL: be brief.", user="Summarize the PR.")
BACKENDS = [ClaudeCliBackend, CodexCliBackend]


@pytest.mark.parametrize("spec", ["claude-cli:model=sonnet", "codex-cli:model=gpt-5-codex"])
def test_runs_in_an_empty_replay_dir_and_leaves_nothing(fake_clis, spec, tmp_path, monkeypatch):
    workdir = tmp_path / "project"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    private_tmp = Path(tempfile.gettempdir())  # the fixture gave this test its own TMPDIR
    completion = make_backend(spec).complete(REQ)
    assert completion.ok and completion.text.startswith("fake ")
    (run,) = runs(fake_clis)
    cwd = Path(run["cwd"])
    assert cwd.name.startswith(REPLAY_DIR_PREFIX) and run["cwd_files"] == []
    assert not cwd.exists()  # the artefact the fake dropped went with the dir
    assert Path(run["env"]["TMPDIR"]).is_relative_to(cwd.parent)  # a private TMPDIR, also removed
    assert list(workdir.iterdir()) == []
    assert list(private_tmp.iterdir()) == []  # no probe, no -o file, no system prompt file
    assert run["stdin"] == "Summarize the PR."
    assert run["system_prompt"] == "SKILL: be brief."


def test_a_fifty_thousand_character_document_goes_through_a_file(fake_clis):
    document = "Überprüfe die Änderungen — ✓ " * 1800  # > 50,000 non-ASCII characters
    request = Request(purpose="attempt", system=document, user="task")
    for backend in (ClaudeCliBackend(), CodexCliBackend()):
        assert backend.complete(request).ok
    for run in runs(fake_clis):
        assert run["system_prompt"] == document and run["stdin"] == "task"
        assert max(len(arg) for arg in run["argv"]) < 1000


@pytest.mark.parametrize("cls", BACKENDS)
@pytest.mark.parametrize("mode", ["not_logged_in", "login_text"])
def test_not_logged_in_is_an_auth_error_never_an_answer(fake_clis, monkeypatch, retry, sleep, cls, mode):
    monkeypatch.setenv("FAKE_CLI_MODE", mode)
    completion = cls().complete(REQ)
    assert completion.error == "auth" and completion.text == ""
    with pytest.raises(ProviderError) as info:
        Client(cls(), retry=retry).complete(REQ)
    assert info.value.kind == "auth" and sleep.calls == []  # fails fast


@pytest.mark.parametrize("cls", BACKENDS)
@pytest.mark.parametrize("mode,kind", [("fail", "server"), ("empty", "empty"), ("rate_limit", "rate_limit")])
def test_failures_are_retried_bounded_then_raise(fake_clis, monkeypatch, retry, sleep, cls, mode, kind):
    monkeypatch.setenv("FAKE_CLI_MODE", mode)
    with pytest.raises(ProviderError) as info:
        Client(cls(), retry=retry).complete(REQ)
    assert info.value.kind == kind
    assert len(runs(fake_clis)) == retry.attempts


@pytest.mark.parametrize("cls", BACKENDS)
def test_missing_cli_is_unavailable(cls, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    completion = cls(command="definitely-not-installed-cli").complete(REQ)
    assert completion.error == "unavailable" and "not found on PATH" in completion.error_message


def test_an_interrupted_night_does_not_leave_the_cli_running(fake_clis, monkeypatch):
    import subprocess
    import time

    monkeypatch.setenv("FAKE_CLI_MODE", "auth_retrying")  # reports a 401, then runs for a minute
    monkeypatch.setattr("skillopt_sleep.backends.codex_cli.stop_on_fatal_error", lambda line: None)
    seen: list[subprocess.Popen] = []
    real_wait = subprocess.Popen.wait

    def interrupted_wait(self, timeout=None):
        if timeout is not None and not seen:
            seen.append(self)
            deadline = time.monotonic() + 30
            while not runs(fake_clis) and time.monotonic() < deadline:  # the fake is up and running
                time.sleep(0.05)
            time.sleep(0.5)
            raise KeyboardInterrupt
        return real_wait(self, timeout)

    monkeypatch.setattr(subprocess.Popen, "wait", interrupted_wait)
    with pytest.raises(KeyboardInterrupt):
        CodexCliBackend(timeout=45).complete(REQ)
    (proc,) = seen
    assert real_wait(proc, timeout=10) == -9  # killed, not left sleeping


# -- tool checks ---------------------------------------------------------------------------------


def test_a_cli_backend_offers_no_tools_so_tool_tasks_are_left_out_of_the_night(fake_clis, tmp_path):
    from skillopt_sleep.config import Config
    from skillopt_sleep.night import NightOptions, run_night
    from skillopt_sleep.types import TaskRecord
    from tests.support.tasks import make_tasks, write_tasks_file

    project = tmp_path / "proj"
    project.mkdir()
    tasks = make_tasks()
    tool_task = TaskRecord(
        id="lint-0",
        intent="Run the linter on the change",
        project="/p",
        split="val",
        judge={"kind": "rule", "checks": [{"op": "tool_called", "arg": "Bash"}]},
    )
    tasks_file = write_tasks_file(tmp_path / "tasks.json", [*tasks, tool_task])
    config = Config(
        backend="claude-cli", agent="claude", retries=1, retry_base_delay=0.0, k=1, val_samples=1, max_val_samples=1
    )
    report = run_night(NightOptions(project=project, config=config, mode="dry-run", tasks_file=tasks_file))
    assert any("lint-0" in note and "cannot offer tools" in note for note in report.notes)
    assert report.n_tasks == len(tasks)
    assert not any("Run the linter" in run["stdin"] for run in runs(fake_clis))  # never replayed
    assert any("Write the commit message" in run["stdin"] for run in runs(fake_clis))
