from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from skillopt_sleep.commands import adopt as adopt_cmd
from skillopt_sleep.errors import EXIT_CONFLICT, EXIT_USAGE, UserError

from tests.support.staged_project import project_with_memory, stage_memory

OLD = b"# rules\r\n\xff\n"
NEW = b"# rules\r\n- Use conventional commits.\n"


@pytest.fixture
def project(tmp_path) -> Path:
    root = project_with_memory(tmp_path, OLD)
    stage_memory(root, NEW)
    return root


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    adopt_cmd.register(parser.add_subparsers())
    return parser.parse_args(argv)


def test_adopt_human_output(project, capsys):
    assert adopt_cmd.adopt(project) == 0
    out = capsys.readouterr().out
    assert "Adopted night n1: wrote 1 file(s)" in out
    assert str(project / "CLAUDE.md") in out and "backup" in out
    assert f"skillopt-sleep revert --project {project} --night n1" in out
    assert (project / "CLAUDE.md").read_bytes() == NEW


def test_adopt_json_via_parser(project, capsys, monkeypatch):
    monkeypatch.chdir(project)  # --project defaults to the current directory
    args = _parse(["adopt", "--night", "n1", "--json"])
    assert args.func(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and data["night_id"] == "n1"
    assert data["files"][0]["previous_existed"] is True
    from skillopt_sleep.staging.adoption import _undo

    assert _undo(NEW, data["files"][0]["backup"]) == OLD


def test_adopt_conflict_prints_json_error_and_raises(project, capsys):
    (project / "CLAUDE.md").write_bytes(b"edited by hand\n")
    with pytest.raises(UserError) as info:
        adopt_cmd.adopt(project, as_json=True)
    assert info.value.code == EXIT_CONFLICT
    data = json.loads(capsys.readouterr().out)
    assert data == {"ok": False, "error": info.value.message, "code": EXIT_CONFLICT}
    assert (project / "CLAUDE.md").read_bytes() == b"edited by hand\n"


def test_adopt_missing_project_is_a_usage_error(tmp_path):
    with pytest.raises(UserError) as info:
        adopt_cmd.adopt(tmp_path / "nope")
    assert info.value.code == EXIT_USAGE
