from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillopt_sleep.staging import adoption_journal as journal
from skillopt_sleep.errors import UserError
from skillopt_sleep.files import read_jsonl
from skillopt_sleep.paths import project_dirs

maybe_bytes = st.one_of(st.none(), st.binary(max_size=64))


@given(before=maybe_bytes, after=maybe_bytes)
def test_each_side_is_rebuilt_exactly_from_the_other(before, after):
    step = journal.FileStep.between("memory", Path("/p/CLAUDE.md"), before, after)
    assert step.bytes_of("after", before) == after
    assert step.bytes_of("before", after) == before
    assert step.is_state(before, "before") and step.is_state(after, "after")


def _record(project: Path, steps: list[journal.FileStep]) -> journal.Journal:
    ledger = [{"event": "adopt", "op_id": "op-1", "path": s.path} for s in steps]
    return journal.Journal("adopt", "op-1", "night-1", "now", steps, ledger)


def _two_files(tmp_path: Path) -> tuple[Path, list[journal.FileStep]]:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "CLAUDE.md").write_bytes(b"old\n")
    steps = [
        journal.FileStep.between("memory", project / "CLAUDE.md", b"old\n", b"old\nnew\n"),
        journal.FileStep.between("skill", project / "sub" / "SKILL.md", None, b"skill\n", [str(project / "sub")]),
    ]
    return project, steps


def allow_all(role: str, path: Path) -> bool:
    return True


def test_an_uncommitted_operation_is_rolled_back(tmp_path):
    project, steps = _two_files(tmp_path)
    record = _record(project, steps)
    journal.begin(project, record)
    journal.write_side(steps[1], b"skill\n")  # killed before the second write
    assert (project / "sub" / "SKILL.md").exists()
    assert journal.recover(project, allow_all).startswith("rolled back the interrupted adopt")
    assert (project / "CLAUDE.md").read_bytes() == b"old\n"
    assert not (project / "sub").exists()  # the dir made for the new file went with it
    assert journal.pending(project) is None and read_jsonl(project_dirs(project).ledger) == []
    assert journal.recover(project, allow_all) is None


def test_a_committed_operation_is_rolled_forward(tmp_path):
    project, steps = _two_files(tmp_path)
    record = _record(project, steps)
    journal.begin(project, record)
    journal.write_side(steps[1], b"skill\n")
    journal.write_side(steps[0], b"old\nnew\n")
    journal.append_jsonl(project_dirs(project).ledger, record.ledger[0])  # torn commit: one line
    (project / "CLAUDE.md").write_bytes(b"old\n")  # and a write that never reached the disk
    assert journal.recover(project, allow_all).startswith("finished the interrupted adopt")
    assert (project / "CLAUDE.md").read_bytes() == b"old\nnew\n"
    assert (project / "sub" / "SKILL.md").read_bytes() == b"skill\n"
    assert [e["path"] for e in read_jsonl(project_dirs(project).ledger)] == [s.path for s in steps]


def test_a_damaged_journal_is_reported_not_guessed(tmp_path):
    project, _steps = _two_files(tmp_path)
    journal.journal_path(project).parent.mkdir(parents=True)
    journal.journal_path(project).write_text("{not json")
    assert journal.pending(project)["damaged"]
    with pytest.raises(UserError, match="journal .* is damaged"):
        journal.recover(project, allow_all)
    assert (project / "CLAUDE.md").read_bytes() == b"old\n"
