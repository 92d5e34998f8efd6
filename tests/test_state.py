from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from skillopt_sleep import state
from skillopt_sleep.errors import EXIT_LOCKED, UserError
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.state import (
    History,
    NightLock,
    RejectedLedger,
    append_jsonl,
    atomic_write_bytes,
    atomic_write_text,
    read_jsonl,
    read_lock,
)
from skillopt_sleep.types import Edit, NightReport, Usage, format_time


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


# --------------------------------------------------------------------------- atomic writes


def test_atomic_write_creates_parents_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "a" / "b" / "doc.md"
    atomic_write_bytes(target, b"one\r\n\xff")
    assert target.read_bytes() == b"one\r\n\xff"
    atomic_write_text(target, "two\n")
    assert target.read_bytes() == b"two\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["doc.md"]


def test_atomic_write_failure_before_replace_keeps_old_content(tmp_path, monkeypatch):
    target = tmp_path / "doc.md"
    target.write_bytes(b"old")

    def boom(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(state.os, "replace", boom)
    with pytest.raises(OSError, match="disk on fire"):
        atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["doc.md"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_atomic_write_keeps_existing_mode(tmp_path):
    target = tmp_path / "doc.md"
    target.write_text("x")
    os.chmod(target, 0o640)
    atomic_write_text(target, "y")
    assert target.stat().st_mode & 0o777 == 0o640


# --------------------------------------------------------------------------- JSONL


def test_jsonl_round_trip_and_tolerant_reader(tmp_path):
    log = tmp_path / "log.jsonl"
    append_jsonl(log, {"a": 1})
    with open(log, "ab") as fh:
        fh.write(b'not json\n[1, 2]\n\xff\xfe\n{"torn": ')  # garbage and a torn last line
    append_jsonl(log, {"b": "é"})
    assert read_jsonl(log) == [{"a": 1}, {"b": "é"}]


def test_read_jsonl_missing_file_is_empty(tmp_path):
    assert read_jsonl(tmp_path / "nope.jsonl") == []


# --------------------------------------------------------------------------- night lock


def test_lock_is_exclusive_and_names_the_holder(tmp_path):
    path = tmp_path / "night.lock"
    with NightLock(path):
        holder = read_lock(path)
        assert holder["pid"] == os.getpid()
        with pytest.raises(UserError) as info:
            with NightLock(path):
                pass
        assert info.value.code == EXIT_LOCKED
        assert f"pid {os.getpid()}" in info.value.message
        assert socket.gethostname() in info.value.message
    assert not path.exists()
    with NightLock(path):  # free again
        assert path.exists()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_lock_from_dead_process_is_taken_over(tmp_path):
    path = tmp_path / "night.lock"
    stale = {"pid": _dead_pid(), "hostname": socket.gethostname(),
             "started": format_time(datetime.now(timezone.utc)), "token": "old"}
    path.write_text(json.dumps(stale))
    with NightLock(path) as lock:
        assert read_lock(path)["token"] == lock.token
    assert not path.exists()


def test_lock_older_than_max_age_is_taken_over_even_on_another_host(tmp_path):
    path = tmp_path / "night.lock"
    started = datetime.now(timezone.utc) - timedelta(hours=7)
    holder = {"pid": 1, "hostname": "elsewhere", "started": format_time(started)}
    path.write_text(json.dumps(holder))
    with NightLock(path) as lock:
        assert read_lock(path)["token"] == lock.token


def test_fresh_lock_on_another_host_is_respected(tmp_path):
    path = tmp_path / "night.lock"
    path.write_text(json.dumps({"pid": 1, "hostname": "elsewhere",
                                "started": format_time(datetime.now(timezone.utc))}))
    with pytest.raises(UserError, match="elsewhere"):
        NightLock(path).acquire()
    assert read_lock(path)["hostname"] == "elsewhere"


def test_release_does_not_remove_a_lock_taken_over_by_someone_else(tmp_path):
    path = tmp_path / "night.lock"
    lock = NightLock(path)
    lock.acquire()
    path.write_text(json.dumps({"pid": os.getpid(), "token": "someone-else"}))
    lock.release()
    assert read_lock(path)["token"] == "someone-else"


# --------------------------------------------------------------------------- history


def _report(night_id: str, project: Path, **kw) -> NightReport:
    return NightReport(night_id=night_id, project=str(project), mode="run", status="staged", **kw)


def test_history_records_compact_summaries_per_project(tmp_path, home):
    history = History()
    assert history.path == user_dirs().history
    assert str(history.path).startswith(str(home))
    a, b = tmp_path / "a", tmp_path / "b"
    history.record(_report("n1", a, baseline=0.5, candidate=0.75, n_sessions=3, n_tasks=4,
                           accepted_edits=[Edit("memory", "add", "x")],
                           rejected_edits=[{"edit": {}, "reasons": ["r"]}, {"edit": {}}],
                           calls={"attempt": 10}, usage=Usage(1, 2, 3, 4)))
    history.record(_report("n2", b))
    history.record(_report("n3", a, baseline=0.75, candidate=0.75))
    nights = history.nights(a)
    assert [n["night_id"] for n in nights] == ["n1", "n3"]
    first = nights[0]
    assert (first["baseline"], first["candidate"]) == (0.5, 0.75)
    assert (first["n_accepted"], first["n_rejected"]) == (1, 2)
    assert first["calls"] == {"attempt": 10}
    assert first["usage"]["cache_write_tokens"] == 4
    assert len(history.nights()) == 3


# --------------------------------------------------------------------------- rejected ledger


def test_rejected_ledger_matches_normalised_rules_per_project(tmp_path):
    ledger = RejectedLedger()
    project = tmp_path / "p"
    refused = Edit("skill", "add", "- Always  write tests first.")
    ledger.add(project, refused, ["regressed t2"], "n1")
    assert ledger.contains(project, Edit("skill", "add", "always write tests first"))
    assert not ledger.contains(project, Edit("memory", "add", "always write tests first"))
    assert not ledger.contains(project, Edit("skill", "add", "always write docs first"))
    assert not ledger.contains(tmp_path / "other", Edit("skill", "add", "always write tests first"))
    fresh = RejectedLedger()  # another night reads it back from disk
    assert fresh.contains(project, Edit("skill", "add", "ALWAYS write tests first!"))
    assert fresh.entries(project)[0]["reasons"] == ["regressed t2"]
