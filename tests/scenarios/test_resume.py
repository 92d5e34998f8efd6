"""A night killed with SIGKILL midway is continued by ``run --resume``: it pays only for the calls
that had not finished, and stages the proposal an uninterrupted night stages."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from skillopt_sleep.store.call_journal import CallJournal, close_nights, interrupted_nights, open_journal
from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.paths import project_dirs

from tests.support.interrupted_night import killed_after_staging, make_project
from tests.support.tasks import make_tasks, write_tasks_file

# Runs the real CLI with every backend wrapped: each provider call is logged to CALLS_LOG as it
# starts; with KILL_AFTER=N, the (N+1)th non-preflight call waits until the N finished ones are in
# the night's journal, then the process kills itself (SIGKILL: no cleanup of any kind runs).
DRIVER = textwrap.dedent("""
    import os, signal, sys, threading, time
    from pathlib import Path
    from skillopt_sleep import backends
    import skillopt_sleep.night  # noqa: F401 - imports make_backend where the night builds clients

    kill_after = int(os.environ.get("KILL_AFTER", "0"))
    log_path = os.environ["CALLS_LOG"]
    journals = Path(os.environ["NIGHTS_DIR"])
    lock, made = threading.Lock(), [0]
    real = backends.make_backend

    def journaled():
        return sum(len(p.read_text().splitlines()) for p in journals.glob("*/calls.jsonl"))

    class Hooked:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def complete(self, request):
            with lock:
                if request.purpose != "preflight":
                    made[0] += 1
                    if kill_after and made[0] > kill_after:
                        ends = time.monotonic() + 20
                        while journaled() < kill_after and time.monotonic() < ends:
                            time.sleep(0.01)
                        os.kill(os.getpid(), signal.SIGKILL)
                with open(log_path, "a") as fh:
                    fh.write(request.purpose + "\\n")
            return self.inner.complete(request)

    for module in list(sys.modules.values()):
        if getattr(module, "make_backend", None) is real:
            module.make_backend = lambda *a, **kw: Hooked(real(*a, **kw))
    from skillopt_sleep.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def night(
    project: Path, tasks_file: Path, driver: Path, calls_log: Path, *extra: str, kill_after: int = 0
) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        CALLS_LOG=str(calls_log),
        KILL_AFTER=str(kill_after),
        NIGHTS_DIR=str(project_dirs(project).root / "nights"),
        SKILLOPT_SLEEP_CONCURRENCY="1",
    )
    cmd = [
        sys.executable,
        str(driver),
        "run",
        "--project",
        str(project),
        "--tasks-file",
        str(tasks_file),
        "--backend",
        "sim:correct=0.8,harmful=0.3,seed=5",
        "--agent",
        "claude",
        "--json",
        "--quiet",
        *extra,
    ]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def provider_calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def proposal(project: Path, report: dict) -> list[tuple[str, str]]:
    manifest = json.loads((Path(report["staging_dir"]) / "manifest.json").read_text())
    return sorted((f["role"], f["proposal_sha256"]) for f in manifest["files"])


def test_resume_after_kill_pays_only_for_unfinished_calls(tmp_path: Path) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())

    whole = make_project(tmp_path / "a")
    done = night(whole, tasks_file, driver, tmp_path / "a.log")
    assert done.returncode == 0, done.stderr
    reference = json.loads(done.stdout)
    total = len(provider_calls(tmp_path / "a.log"))
    assert reference["accepted_edits"], "the reference night accepts something to compare"

    project = make_project(tmp_path / "b")
    finished = total // 2
    killed = night(project, tasks_file, driver, tmp_path / "b1.log", kill_after=finished)
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr)
    assert len(interrupted_nights(project)) == 1
    interrupted_id = interrupted_nights(project)[0]
    assert not project_dirs(project).staging.exists() or not any(project_dirs(project).staging.iterdir())

    resumed = night(project, tasks_file, driver, tmp_path / "b2.log", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    calls = provider_calls(tmp_path / "b2.log")
    # the preflight is made again on purpose (is the provider still there?); nothing else finished is
    assert len([c for c in calls if c != "preflight"]) == (total - 1) - finished
    assert report["night_id"] == interrupted_id
    assert proposal(project, report) == proposal(whole, reference)
    assert (report["baseline"], report["candidate"]) == (reference["baseline"], reference["candidate"])
    assert any(f"resumed: {finished} call(s)" in n for n in report["notes"])
    assert interrupted_nights(project) == [], "a finished night removes its journal"
    evidence = [json.loads(line) for line in (Path(report["staging_dir"]) / "evidence.jsonl").read_text().splitlines()]
    assert sum(e["reused"] for e in evidence) == finished
    assert len(evidence) == total, "every answer the night used, as in an uninterrupted night"


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    journal = open_journal(tmp_path, "20261123T010203Z-abcd")
    request = Request(purpose="attempt", system="s", user="u")
    journal.put("k1", request, Completion(text="one"))
    journal.put("k2", request, Completion(text="two"))
    with open(journal.path, "ab") as fh:
        fh.write(b'{"k": "k3", "c": {"text": "thr')
    again = CallJournal(journal.directory)
    assert again.loaded == 2 and again.get("k2", request).text == "two" and again.get("k3", request) is None
    again.put("k3", request, Completion(text="three"))
    assert CallJournal(journal.directory).get("k3", request).text == "three"


def test_failures_are_not_journaled_and_secrets_never_reach_it(tmp_path: Path) -> None:
    journal = open_journal(tmp_path, "20261123T010203Z-abcd")
    request = Request(purpose="attempt", system="s", user="u")
    journal.put("bad", request, Completion(text="", error="server"))
    journal.put("bad-cut", request, Completion(text="half an ans", truncated=True))
    secret = "sk-ant-api03-" + "B" * 90
    journal.put("ok", request, Completion(text=f"key {secret}\x07"))
    raw = journal.path.read_bytes()
    assert b"bad" not in raw and secret.encode() not in raw and b"\x07" not in raw


def test_only_night_directories_count_and_a_finished_night_clears_them(tmp_path: Path) -> None:
    open_journal(tmp_path, "20261123T010203Z-abcd")
    open_journal(tmp_path, "20261124T010203Z-beef")
    (project_dirs(tmp_path).root / "nights" / "not-a-night").mkdir()
    assert interrupted_nights(tmp_path) == ["20261123T010203Z-abcd", "20261124T010203Z-beef"]
    close_nights(tmp_path)
    assert interrupted_nights(tmp_path) == []


@pytest.mark.parametrize("extra", [(), ("--resume",)])
def test_resume_with_nothing_to_resume_runs_a_new_night(tmp_path: Path, extra: tuple[str, ...]) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    project = make_project(tmp_path)
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    done = night(project, tasks_file, driver, tmp_path / "calls.log", *extra)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "staged"


def test_a_night_killed_after_staging_is_taken_up_by_a_new_night(tmp_path: Path, monkeypatch) -> None:
    """Killed between staging its proposal and closing its journal: its id is taken, so a new night
    starts, answered from that journal (and the score cache is off, so only the journal can)."""
    from skillopt_sleep import night

    project, first, options = killed_after_staging(tmp_path, monkeypatch)
    assert interrupted_nights(project) == [first.night_id]
    again = night.run_night(options(True))
    assert again.night_id != first.night_id and again.status == "staged"
    assert again.calls.get("attempt", 0) == 0 and again.calls.get("reflect", 0) == 0
    assert any(f"resumed: {sum(first.calls.values()) - 1} call(s)" in n for n in again.notes)
    assert interrupted_nights(project) == []
