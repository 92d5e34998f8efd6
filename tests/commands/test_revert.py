from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from skillopt_sleep.commands import revert as revert_cmd
from skillopt_sleep.errors import EXIT_CONFLICT, UserError
from skillopt_sleep.staging.adoption import adopt

from tests.support.staged_project import project_with_memory, stage_memory

OLD = b"line one\r\nline two\r\n"
NEW = b"line one\r\nline two\r\n- rule\r\n"


@pytest.fixture
def project(tmp_path) -> Path:
    root = project_with_memory(tmp_path, OLD, "AGENTS.md")
    stage_memory(root, NEW, name="AGENTS.md")
    adopt(root)
    return root


def test_revert_human_output(project, capsys):
    assert revert_cmd.revert(project) == 0
    out = capsys.readouterr().out
    assert "Reverted night n1: 1 file(s)" in out
    assert "restored" in out and str(project / "AGENTS.md") in out
    assert (project / "AGENTS.md").read_bytes() == OLD


def test_revert_json_via_parser_then_second_revert_refused(project, capsys):
    parser = argparse.ArgumentParser()
    revert_cmd.register(parser.add_subparsers())
    args = parser.parse_args(["revert", "--project", str(project), "--night", "n1", "--json"])
    assert args.func(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and data["files"][0]["action"] == "restored"
    with pytest.raises(UserError, match="already reverted") as info:
        args.func(args)
    assert info.value.code == EXIT_CONFLICT
    assert json.loads(capsys.readouterr().out)["ok"] is False
