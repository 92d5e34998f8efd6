"""What the transcript recorders share (tests/support/recording.py): the ground truth they keep,
the fixtures they write, and a recording's run in a throwaway root."""

from __future__ import annotations

import gzip
import shutil
import time
from pathlib import Path

import pytest

from skillopt_sleep.redact import redact

from tests.support.recording import (
    FIXTURES,
    PLACEHOLDER_ROOT,
    GroundTruth,
    fresh_dir,
    pasted_secret,
    record,
    recorder_parser,
    replacing,
    write_ground_truth,
    write_gzipped,
)


def test_a_pasted_secret_is_random_and_redacted_as_a_github_token():
    first, second = pasted_secret(), pasted_secret()
    assert first != second and first.startswith("ghp_") and len(first) == 40
    assert redact(f"the token is {first}") == "the token is [REDACTED:github_token]"


def test_a_sessions_typed_prompts_follow_each_other_and_its_kind_is_the_last_noted():
    truth = GroundTruth()
    truth.note("a", kind="interactive", typed=["one", "two"])
    truth.note("a", typed=["three"], commands=["/compact"])
    truth.note("a", commands=["!ls"], parent=None)
    truth.note("b", kind="headless")
    assert truth == {
        "a": {"kind": "interactive", "typed": ["one", "two", "three"], "commands": ["/compact", "!ls"], "parent": None},
        "b": {"kind": "headless", "typed": []},
    }


def test_a_noted_list_is_copied_not_shared():
    typed = ["one"]
    truth = GroundTruth()
    truth.note("a", typed=typed)
    typed.append("later")
    assert truth["a"]["typed"] == ["one"]


def test_the_throwaway_root_is_replaced_first_then_the_names_derived_from_it():
    root = "/tmp/abc"
    portable = replacing((root, PLACEHOLDER_ROOT), ("-tmp-abc", "-tmp-skillopt-rec"))
    assert portable("/tmp/abc/work and -tmp-abc-work") == "/tmp/skillopt-rec/work and -tmp-skillopt-rec-work"
    assert replacing()("unchanged") == "unchanged"


def test_a_fresh_dir_removes_an_earlier_recording_and_minds_no_absence(tmp_path: Path):
    (tmp_path / "gemini" / "tmp").mkdir(parents=True)
    (tmp_path / "gemini" / "tmp" / "old.json.gz").write_bytes(b"old")
    fresh_dir(tmp_path / "gemini")
    assert not (tmp_path / "gemini").exists()
    fresh_dir(tmp_path / "gemini")


def test_a_fixture_is_gzipped_without_a_timestamp(tmp_path: Path):
    data = b'{"type":"user"}\n'
    write_gzipped(tmp_path / "a" / "b" / "s.jsonl.gz", data)
    time.sleep(1.1)  # gzip's header holds seconds: a stored time would differ now
    write_gzipped(tmp_path / "again.gz", data)
    written = (tmp_path / "a" / "b" / "s.jsonl.gz").read_bytes()
    assert gzip.decompress(written) == data
    assert written == (tmp_path / "again.gz").read_bytes() == gzip.compress(data, mtime=0)


def test_the_ground_truth_is_sorted_indented_json_with_a_final_newline(tmp_path: Path):
    write_ground_truth(tmp_path / "t.json", {"sessions": {"b": 1, "a": ["é"]}, "cli": "pi"})
    text = (tmp_path / "t.json").read_text(encoding="utf-8")
    assert text == '{\n  "cli": "pi",\n  "sessions": {\n    "a": [\n      "\\u00e9"\n    ],\n    "b": 1\n  }\n}\n'


def test_every_recorder_takes_out_and_keep():
    parser = recorder_parser("Record some sessions.\n\nMore words.")
    parser.add_argument("--cli")
    args = parser.parse_args(["--cli", "x"])
    assert parser.description == "Record some sessions."
    assert (args.out, args.keep, args.cli) == (FIXTURES, False, "x")
    assert FIXTURES.is_dir() and (FIXTURES / "ground_truth.json").is_file()
    args = parser.parse_args(["--out", "/o", "--keep"])
    assert (args.out, args.keep) == (Path("/o"), True)


class FakeRecorder:
    def __init__(self, root: Path, fail: bool = False) -> None:
        self.root, self.fail = root, fail
        self.done: list[str] = []
        (root / "home").mkdir()

    def record(self) -> None:
        self.done.append("record")
        if self.fail:
            raise RuntimeError("the CLI failed")

    def close(self) -> None:
        self.done.append(f"close (root there: {self.root.exists()})")


def written(recorder: FakeRecorder, out: Path) -> None:
    recorder.done.append(f"write {out.name}")


def test_a_recording_records_writes_closes_then_removes_its_root(tmp_path: Path):
    recorder = record(FakeRecorder, written, tmp_path / "out", keep=False)
    assert recorder.done == ["record", "write out", "close (root there: True)"]
    assert recorder.root.name.startswith("skillopt-rec-") and not recorder.root.exists()


def test_a_failed_recording_writes_nothing_and_still_cleans_up(tmp_path: Path):
    made: list[FakeRecorder] = []

    def failing(root: Path) -> FakeRecorder:
        made.append(FakeRecorder(root, fail=True))
        return made[0]

    with pytest.raises(RuntimeError, match="the CLI failed"):
        record(failing, written, tmp_path / "out", keep=False)
    assert made[0].done == ["record", "close (root there: True)"] and not made[0].root.exists()


def test_a_kept_root_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    recorder = record(FakeRecorder, written, tmp_path / "out", keep=True)
    try:
        assert recorder.root.is_dir() and capsys.readouterr().err == f"kept {recorder.root}\n"
    finally:
        shutil.rmtree(recorder.root)
