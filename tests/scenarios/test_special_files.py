"""Special files where the engine expects a document, a journal or a state file: a FIFO (its
``open`` blocks until a writer comes) and ``/dev/zero`` (endless bytes). Every reader must come
back at once with a clear refusal, or skip the file where it is best-effort.

Each case runs in its own Python process with a time limit and a memory cap, so a reader that
still hangs or reads without a bound fails the test instead of stalling or swapping the machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")

KINDS = ("fifo", "zero")
SECONDS = 20  # a bounded read takes milliseconds; a hang is a hang


def _plant(path: Path, kind: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    return path


def _cap_memory() -> None:
    limit = 1024 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _run(code: str, tmp_path: Path) -> str:
    """Run ``code`` (with ``tmp`` bound to ``tmp_path``) in a child; its stdout."""
    env = {**os.environ, "SKILLOPT_SLEEP_HOME": str(tmp_path / "home"), "HOME": str(tmp_path / "userhome")}
    program = f"from pathlib import Path\ntmp = Path({str(tmp_path)!r})\n" + textwrap.dedent(code)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", program],
            capture_output=True,
            text=True,
            env=env,
            timeout=SECONDS,
            preexec_fn=_cap_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still reading after {SECONDS} s")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


@pytest.mark.parametrize("kind", KINDS)
def test_read_regular_refuses_at_once(tmp_path, kind):
    from skillopt_sleep.files import UnreadableFile, read_regular

    path = _plant(tmp_path / "x.json", kind)
    with pytest.raises(UnreadableFile) as caught:
        read_regular(path, 1024)
    assert "not a regular file" in caught.value.message
    assert str(path) in caught.value.message


def test_read_regular_bounds_a_large_file(tmp_path):
    from skillopt_sleep.files import UnreadableFile, read_regular

    path = tmp_path / "big.jsonl"
    path.write_bytes(b"x" * 2048)
    with pytest.raises(UnreadableFile, match="larger than 1024 bytes"):
        read_regular(path, 1024)
    assert read_regular(path, 2048) == b"x" * 2048


@pytest.mark.parametrize("kind", KINDS)
def test_skill_md_is_refused_with_one_line(tmp_path, kind):
    _plant(tmp_path / "p" / ".claude" / "skills" / "skillopt-sleep-learned" / "SKILL.md", kind)
    out = _run(
        """
        from skillopt_sleep.documents.managed_block import load_documents
        from skillopt_sleep.errors import UserError
        try:
            load_documents(tmp / "p")
        except UserError as exc:
            print(exc.message)
    """,
        tmp_path,
    )
    # a link to /dev/zero points out of the project: refused as such, before it is opened
    assert "SKILL.md" in out and ("not a regular file" if kind == "fifo" else "outside the project") in out


@pytest.mark.parametrize("kind", KINDS)
def test_journal_reader_refuses(tmp_path, kind):
    """read_jsonl (calls.jsonl, adoptions.jsonl, history, archive, refusals, score cache)."""
    _plant(tmp_path / "calls.jsonl", kind)
    out = _run(
        """
        from skillopt_sleep.files import read_jsonl
        try:
            read_jsonl(tmp / "calls.jsonl")
        except OSError as exc:
            print(exc)
    """,
        tmp_path,
    )
    assert "not a regular file" in out


@pytest.mark.parametrize("kind", KINDS)
def test_call_journal_resume_starts_over(tmp_path, kind):
    _plant(tmp_path / "night" / "calls.jsonl", kind)
    out = _run(
        """
        from skillopt_sleep.store.call_journal import CallJournal
        print("loaded", CallJournal(tmp / "night", read_only=True).loaded)
    """,
        tmp_path,
    )
    assert out == "loaded 0"


@pytest.mark.parametrize("kind", KINDS)
def test_live_document_swapped_before_adopt(tmp_path, kind):
    """adopt reads the live file with read_bytes_or_none: a swapped-in FIFO is refused."""
    _plant(tmp_path / "SKILL.md", kind)
    out = _run(
        """
        from skillopt_sleep.files import read_bytes_or_none
        try:
            read_bytes_or_none(tmp / "SKILL.md")
        except OSError as exc:
            print(exc)
    """,
        tmp_path,
    )
    assert "not a regular file" in out


@pytest.mark.parametrize("kind", KINDS)
def test_manifest_and_reports_are_skipped(tmp_path, kind):
    night = tmp_path / "staging" / "20260101T000000Z-abc"
    _plant(night / "manifest.json", kind)
    _plant(night / "report.json", kind)
    out = _run(
        """
        from skillopt_sleep.store.proposals import read_manifest
        from skillopt_sleep.store.notices import _rules_proposed
        from skillopt_sleep.commands.status import _staged_nights
        night = tmp / "staging" / "20260101T000000Z-abc"
        print(read_manifest(night), _rules_proposed(night),
              _staged_nights([{"night_id": "n", "staging_dir": str(night)}], set()))
    """,
        tmp_path,
    )
    assert out == "None None []"


@pytest.mark.parametrize("kind", KINDS)
def test_review_of_a_special_report_is_one_line(tmp_path, kind):
    night = tmp_path / "night"
    _plant(night / "report.json", kind)
    out = _run(
        """
        from skillopt_sleep.report.proposal import load_view
        from skillopt_sleep.errors import UserError
        try:
            load_view({"night_id": "n", "staging_dir": str(tmp / "night")})
        except UserError as exc:
            print(exc.message)
    """,
        tmp_path,
    )
    assert "unreadable (UnreadableFile)" in out


@pytest.mark.parametrize("kind", KINDS)
def test_schedule_file_is_broken_not_hanging(tmp_path, kind):
    _plant(tmp_path / "schedule.json", kind)
    out = _run(
        """
        from skillopt_sleep.scheduler.schedule_file import load_schedule
        from skillopt_sleep.errors import UserError
        try:
            load_schedule(tmp / "schedule.json")
        except UserError as exc:
            print(exc.message)
    """,
        tmp_path,
    )
    assert "is broken" in out and "not a regular file" in out


@pytest.mark.parametrize("kind", KINDS)
def test_config_file_is_refused(tmp_path, kind):
    _plant(tmp_path / "config.toml", kind)
    out = _run(
        """
        from skillopt_sleep.config import read_config_file
        from skillopt_sleep.errors import UserError
        try:
            read_config_file(tmp / "config.toml")
        except UserError as exc:
            print(exc.message)
    """,
        tmp_path,
    )
    assert "is broken" in out and "not a regular file" in out


@pytest.mark.parametrize("kind", KINDS)
def test_tasks_file_is_refused(tmp_path, kind):
    _plant(tmp_path / "tasks.json", kind)
    out = _run(
        """
        from skillopt_sleep.mining.taskfile import load_tasks
        from skillopt_sleep.errors import UserError
        try:
            load_tasks(tmp / "tasks.json")
        except UserError as exc:
            print(exc.message)
    """,
        tmp_path,
    )
    assert "not a regular file" in out


@pytest.mark.parametrize("kind", KINDS)
def test_state_files_are_skipped(tmp_path, kind):
    """The lock holder, the night-state file and the harvest store: best-effort, so skipped."""
    _plant(tmp_path / "night.lock.holder.json", kind)
    _plant(tmp_path / "harvest" / "index.json", kind)
    _plant(tmp_path / "harvest" / "digests" / "shard.jsonl", kind)
    out = _run(
        """
        from skillopt_sleep import night_state
        from skillopt_sleep.store.locks import _read_holder
        from skillopt_sleep.sources.store import HarvestStore, _read_json
        night_state.state_path = lambda project: tmp / "night-state.fifo"
        import os
        os.mkfifo(tmp / "night-state.fifo")
        store = HarvestStore(tmp / "harvest")
        print(_read_holder(tmp / "night.lock"), _read_json(tmp / "harvest" / "index.json"),
              store._read_shard("shard"), night_state.read_state(tmp))
    """,
        tmp_path,
    )
    assert out == "{} {} {} None"


# --------------------------------------------------------------------------- the verbs, as a person runs them


def _cli(tmp_path: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SKILLOPT_SLEEP_BACKEND", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")
    }
    env.update({"SKILLOPT_SLEEP_HOME": str(tmp_path / "home"), "HOME": str(tmp_path / "userhome")})
    try:
        return subprocess.run(
            [sys.executable, "-m", "skillopt_sleep", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=60,
            preexec_fn=_cap_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"skillopt-sleep {' '.join(args)} still running after 60 s")


@pytest.mark.parametrize("kind", KINDS)
def test_notice_and_status_with_a_special_schedule_and_ledger(tmp_path, kind, monkeypatch):
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(tmp_path / "home"))
    from skillopt_sleep.paths import project_dirs, user_dirs
    from skillopt_sleep.scheduler.schedule_file import schedule_path

    project = tmp_path / "p"
    project.mkdir()
    (project / "CLAUDE.md").write_text("# p\n", encoding="utf-8")
    _plant(schedule_path(), kind)
    _plant(user_dirs().sessions_seen, kind)
    _plant(project_dirs(project).ledger, kind)
    end = _cli(tmp_path, "notice", "--event", "session-end", cwd=project)
    assert end.returncode == 0, end.stderr
    start = _cli(tmp_path, "notice", cwd=project)
    assert start.returncode == 0, start.stderr
    status = _cli(tmp_path, "status", cwd=project)
    assert status.returncode != 0 and "Traceback" not in status.stderr
    reason = "not a regular file" if kind == "fifo" else "is a link"  # a project state file is never a link
    assert reason in status.stderr and len(status.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_run_with_a_special_skill_md_stops_at_once(tmp_path, kind):
    project = tmp_path / "p"
    project.mkdir()
    (project / "CLAUDE.md").write_text("# p\n", encoding="utf-8")
    _plant(project / ".claude" / "skills" / "skillopt-sleep-learned" / "SKILL.md", kind)
    done = _cli(tmp_path, "run", "--backend", "sim:seed=1", "--agent", "claude", cwd=project)
    assert done.returncode == 3, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    reason = "not a regular file" if kind == "fifo" else "outside the project"
    assert "SKILL.md" in last and reason in last and "Traceback" not in done.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_codex_login_config_and_auth_are_skipped(tmp_path, kind):
    """The user's ~/.codex/config.toml and auth.json, read when a night starts Codex."""
    _plant(tmp_path / "codex" / "config.toml", kind)
    out = _run(
        """
        from skillopt_sleep.backends.codex_cli import login_config
        print(login_config(tmp / "codex"))
    """,
        tmp_path,
    )
    assert out == "{}"


def test_adopt_after_the_live_file_became_special(tmp_path):
    """Staged against a regular CLAUDE.md, which is then swapped for a FIFO. (A symlink to
    /dev/zero is refused before any read, as every symlinked target is.)"""
    kind = "fifo"
    from tests.support.staged_project import project_with_memory, stage_memory

    project = project_with_memory(tmp_path, b"# rules\n")
    stage_memory(project, b"# rules\n- Use conventional commits.\n")
    (project / "CLAUDE.md").unlink()
    _plant(project / "CLAUDE.md", kind)
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "skillopt_sleep", "adopt", "--project", str(project)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            preexec_fn=_cap_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("adopt still running after 60 s")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "CLAUDE.md" in done.stderr and "not a regular file" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_appending_to_a_fifo_journal_is_refused(tmp_path):
    _plant(tmp_path / "calls.jsonl", "fifo")
    out = _run(
        """
        from skillopt_sleep.files import append_jsonl
        try:
            append_jsonl(tmp / "calls.jsonl", {"k": "v"})
        except OSError as exc:
            print(exc)
    """,
        tmp_path,
    )
    assert "not a regular file" in out
