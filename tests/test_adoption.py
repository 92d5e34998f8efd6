from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from skillopt_sleep.errors import EXIT_CONFLICT, UserError
from skillopt_sleep.paths import project_dirs
from skillopt_sleep import adoption, journal
from skillopt_sleep.adoption import adopt, revert
from skillopt_sleep.adoption import list_proposals, latest_proposal
from skillopt_sleep.files import read_jsonl
from skillopt_sleep.staging import StagedFile, stage
from skillopt_sleep.types import Edit, NightReport

MEMORY_OLD = b"# Project rules\r\n\r\nKeep it short.\r\n\xff\xfe not utf-8\r\n"
MEMORY_NEW = b"# Project rules\r\n\r\nKeep it short.\r\n- Use conventional commits.\r\n"
SKILL_NEW = b"---\nname: skillopt-sleep-learned\ndescription: learned rules\n---\n- rule\n"


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "CLAUDE.md").write_bytes(MEMORY_OLD)
    return root


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _skill_path(project: Path) -> Path:
    return project / ".claude" / "skills" / "skillopt-sleep-learned" / "SKILL.md"


def _stage(project: Path, night_id: str = "night-1", **kw) -> Path:
    report = NightReport(night_id=night_id, project=str(project), mode="run", status="staged",
                         accepted_edits=[Edit("memory", "add", "Use conventional commits.")])
    files = kw.pop("files", None) or [
        StagedFile("memory", project / "CLAUDE.md", MEMORY_OLD, MEMORY_NEW),
        StagedFile("skill", _skill_path(project), None, SKILL_NEW),
    ]
    directory = stage(project, report, files, **kw)
    assert report.staging_dir == str(directory)
    return directory


def test_adopt_backs_up_writes_and_logs(project):
    directory = _stage(project)
    result = adopt(project)
    assert result.night_id == "night-1" and result.staging_dir == directory
    assert (project / "CLAUDE.md").read_bytes() == MEMORY_NEW
    assert _skill_path(project).read_bytes() == SKILL_NEW
    backup = project_dirs(project).backups / "night-1" / "memory" / "CLAUDE.md.undo.json"
    undo = json.loads(backup.read_text())
    # the backup is the reverse change, not a copy of the user's file ...
    assert b"Keep it short" not in backup.read_bytes()
    # ... and it restores the exact previous bytes
    restored = adoption._undo(MEMORY_NEW, str(backup))
    assert restored == MEMORY_OLD and undo["previous_sha256"] == _sha(MEMORY_OLD)
    ledger = read_jsonl(project_dirs(project).ledger)
    assert [(e["role"], e["previous_existed"]) for e in ledger] == [("memory", True),
                                                                    ("skill", False)]
    assert ledger[0]["backup"] == str(backup)
    assert ledger[0]["previous_sha256"] == _sha(MEMORY_OLD)
    assert ledger[0]["new_sha256"] == _sha(MEMORY_NEW)
    assert ledger[1]["backup"] is None
    assert list_proposals(project)[0]["adopted"] is True
    assert latest_proposal(project) == directory


def test_adopt_refused_when_live_file_changed_writes_nothing(project):
    _stage(project)
    (project / "CLAUDE.md").write_bytes(b"hand edit\n")
    with pytest.raises(UserError) as info:
        adopt(project)
    assert info.value.code == EXIT_CONFLICT
    assert "changed since the night read" in info.value.message
    assert (project / "CLAUDE.md").read_bytes() == b"hand edit\n"
    assert not _skill_path(project).exists()
    assert not project_dirs(project).backups.exists()
    assert read_jsonl(project_dirs(project).ledger) == []


def test_adopt_refused_when_a_new_file_appeared(project):
    _stage(project)
    _skill_path(project).parent.mkdir(parents=True)
    _skill_path(project).write_bytes(b"someone wrote this\n")
    with pytest.raises(UserError, match="was created"):
        adopt(project)
    assert (project / "CLAUDE.md").read_bytes() == MEMORY_OLD


def test_tampered_proposal_refused(project):
    directory = _stage(project)
    (directory / "proposed" / "skill" / "SKILL.md").write_bytes(b"injected\n")
    with pytest.raises(UserError, match="does not match its manifest") as info:
        adopt(project)
    assert info.value.code == EXIT_CONFLICT
    assert (project / "CLAUDE.md").read_bytes() == MEMORY_OLD
    assert not _skill_path(project).exists()


def test_manifest_pointing_outside_the_proposal_is_refused(project):
    directory = _stage(project)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["files"][0]["proposal"] = "../../../CLAUDE.md"
    (directory / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UserError, match="outside the proposal"):
        adopt(project)


def test_double_adopt_refused(project):
    _stage(project)
    adopt(project)
    with pytest.raises(UserError, match="already adopted") as info:
        adopt(project, "night-1")
    assert info.value.code == EXIT_CONFLICT
    with pytest.raises(UserError, match="already adopted"):
        adopt(project)


def test_unknown_night_refused(project):
    _stage(project)
    with pytest.raises(UserError, match="no staged proposal for night nope"):
        adopt(project, "nope")


def test_failed_write_midway_restores_what_was_written(project, monkeypatch):
    _stage(project)
    real_write = journal.atomic_write_bytes

    def flaky(path, data):
        if Path(path).name == "SKILL.md" and ".skillopt-sleep" not in str(path):
            raise PermissionError(13, "Permission denied")
        real_write(path, data)

    monkeypatch.setattr(journal, "atomic_write_bytes", flaky)
    with pytest.raises(UserError, match="nothing was adopted"):
        adopt(project)
    assert (project / "CLAUDE.md").read_bytes() == MEMORY_OLD
    assert not (project / ".claude").exists()
    assert read_jsonl(project_dirs(project).ledger) == []
    monkeypatch.setattr(journal, "atomic_write_bytes", real_write)
    adopt(project)  # nothing was recorded, so it can be adopted once the problem is fixed
    assert _skill_path(project).read_bytes() == SKILL_NEW


def test_revert_restores_exact_bytes_and_deletes_created_file(project):
    _stage(project)
    adopt(project)
    result = revert(project)
    assert result.night_id == "night-1"
    assert (project / "CLAUDE.md").read_bytes() == MEMORY_OLD
    assert not _skill_path(project).exists()
    assert not (project / ".claude").exists()  # the directories adopt created are gone too
    actions = {Path(e["path"]).name: e["action"] for e in result.files}
    assert actions == {"CLAUDE.md": "restored", "SKILL.md": "deleted"}
    assert list_proposals(project)[0]["state"] == "reverted"


def test_revert_refused_after_hand_edit(project):
    _stage(project)
    adopt(project)
    _skill_path(project).write_bytes(SKILL_NEW + b"- my own rule\n")
    with pytest.raises(UserError, match="was edited after adoption") as info:
        revert(project)
    assert info.value.code == EXIT_CONFLICT
    assert (project / "CLAUDE.md").read_bytes() == MEMORY_NEW  # nothing written
    assert _skill_path(project).read_bytes() == SKILL_NEW + b"- my own rule\n"
    assert [e["event"] for e in read_jsonl(project_dirs(project).ledger)] == ["adopt", "adopt"]


def test_double_revert_refused(project):
    _stage(project)
    adopt(project)
    revert(project, "night-1")
    with pytest.raises(UserError, match="already reverted") as info:
        revert(project, "night-1")
    assert info.value.code == EXIT_CONFLICT
    with pytest.raises(UserError, match="nothing to revert"):
        revert(project)


def test_revert_of_a_never_adopted_night_refused(project):
    _stage(project)
    with pytest.raises(UserError, match="never adopted"):
        revert(project, "night-1")


def test_no_copy_of_a_secret_in_the_live_file_is_written(project):
    secret = b"sk-ant-api03-" + b"AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    old = b"# rules\nkey: " + secret + b"\n"
    new = old + b"<!-- skillopt-sleep:learned:start -->\n- Use conventional commits.\n<!-- skillopt-sleep:learned:end -->\n"
    (project / "CLAUDE.md").write_bytes(old)
    _stage(project, files=[StagedFile("memory", project / "CLAUDE.md", old, new)])
    adopt(project)
    assert (project / "CLAUDE.md").read_bytes() == new
    for path in project_dirs(project).root.rglob("*"):
        if path.is_file():
            assert secret not in path.read_bytes(), path
    revert(project)
    assert (project / "CLAUDE.md").read_bytes() == old


def test_revert_refused_when_backup_damaged(project):
    _stage(project)
    result = adopt(project)
    Path(result.files[0]["backup"]).write_bytes(b"corrupted")
    with pytest.raises(UserError, match="missing or damaged"):
        revert(project)
    assert (project / "CLAUDE.md").read_bytes() == MEMORY_NEW


def test_adopt_again_after_revert(project):
    _stage(project)
    adopt(project)
    revert(project)
    adopt(project)
    assert (project / "CLAUDE.md").read_bytes() == MEMORY_NEW
    revert(project)
    assert (project / "CLAUDE.md").read_bytes() == MEMORY_OLD


def test_default_adopt_picks_newest_proposal(project):
    _stage(project, "night-1")
    files = [StagedFile("memory", project / "CLAUDE.md", MEMORY_OLD, b"second night\n")]
    second = _stage(project, "night-2", files=files)
    assert [p["night_id"] for p in list_proposals(project)] == ["night-2", "night-1"]
    assert latest_proposal(project) == second
    assert adopt(project).night_id == "night-2"
    assert (project / "CLAUDE.md").read_bytes() == b"second night\n"
    with pytest.raises(UserError, match="changed since the night read"):
        adopt(project, "night-1")  # its baseline is gone now


