from __future__ import annotations

import os
import sys

import pytest

from skillopt_sleep import files
from skillopt_sleep.files import (
    append_jsonl,
    atomic_write_bytes,
    atomic_write_text,
    read_jsonl,
    remove_temp_files,
    temp_name,
)


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

    monkeypatch.setattr(files.os, "replace", boom)
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


def test_append_jsonl_writes_several_records_at_once(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"torn": ')
    append_jsonl(log, {"a": 1}, {"b": 2})
    assert read_jsonl(log) == [{"a": 1}, {"b": 2}]
    assert log.read_bytes() == b'{"torn": \n{"a": 1}\n{"b": 2}\n'


def test_remove_temp_files_removes_only_interrupted_writes(tmp_path):
    keep = ["CLAUDE.md", ".CLAUDE.md.tmp", ".notes.md.0123456789ab.tmp.bak", "x.0123456789ab.tmp"]
    for name in keep:
        (tmp_path / name).write_text("mine")
    debris = [temp_name(tmp_path / "CLAUDE.md"), temp_name(tmp_path / "notes.md")]
    for path in debris:
        path.write_text("half")
    assert sorted(remove_temp_files(tmp_path, {"CLAUDE.md"})) == [debris[0]]
    assert debris[1].exists()
    assert remove_temp_files(tmp_path) == [debris[1]]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keep)


def test_parse_json_treats_too_deep_nesting_as_malformed():
    from skillopt_sleep.files import parse_json

    assert parse_json('{"a": [1]}') == {"a": [1]}
    with pytest.raises(ValueError):
        parse_json("[" * 100_000 + "]" * 100_000)
