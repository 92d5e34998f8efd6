"""The adoption journal (staging/adoption_journal.py): each side of a file step rebuilt exactly
from the other; an uncommitted operation rolled back, a committed one rolled forward, a damaged
journal reported, not guessed; and one carried in by a repository or edited after it was written
refused, touching nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillopt_sleep.staging import adoption_journal as journal
from skillopt_sleep.errors import UserError
from skillopt_sleep.files import read_jsonl
from skillopt_sleep.paths import project_dirs
from tests.support.interrupted_night import make_project

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


# -- a planted adoption journal ------------------------------------------------------------------


@pytest.mark.parametrize("forgery", ["unsealed", "edited"])
def test_a_planted_adoption_journal_is_refused_touching_nothing(tmp_path: Path, monkeypatch, forgery: str) -> None:
    """``journal.json`` tells the next command to roll an adoption forward: one carried in by a
    repository (no seal of this user's key) or edited after it was written is refused."""
    from skillopt_sleep.staging import adoption_journal as journal
    from skillopt_sleep.staging.adoption import adopt
    from skillopt_sleep.errors import EXIT_CONFLICT, UserError
    from tests.support.staged_project import MEMORY_NEW, MEMORY_OLD, stage_proposal

    project = make_project(tmp_path)
    (project / "CLAUDE.md").write_bytes(MEMORY_OLD)
    stage_proposal(project)

    def killed(*args):  # dies right after the ledger append, before dropping the journal
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(journal, "_drop", killed)
        with pytest.raises(KeyboardInterrupt):
            adopt(project)
    path = journal.journal_path(project)
    data = json.loads(path.read_text(encoding="utf-8"))
    if forgery == "unsealed":
        del data["mac"]
    else:
        data["started"] = "2020-01-01T00:00:00Z"
    path.write_text(json.dumps(data), encoding="utf-8")
    (project / "CLAUDE.md").write_bytes(MEMORY_OLD)  # the roll-forward would write MEMORY_NEW here
    with pytest.raises(UserError, match="seal does not verify") as info:
        adopt(project)
    assert info.value.code == EXIT_CONFLICT
    assert (project / "CLAUDE.md").read_bytes() == MEMORY_OLD != MEMORY_NEW
    assert path.exists()
