"""Staged proposals read back (store/proposals.py): a proposal carried in by a repository, unsealed
or sealed for another project, is no proposal — ``adopt`` does not see it and writes nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from skillopt_sleep.paths import project_dirs
from tests.support.interrupted_night import make_project


@pytest.mark.parametrize("how", ["unsealed", "from another project"])
def test_a_planted_proposal_is_no_proposal(tmp_path: Path, how: str) -> None:
    """A staged proposal carried in by a repository names the project's own documents: without a
    seal of this user's key for this project, ``adopt`` does not see it and writes nothing."""
    from skillopt_sleep.staging.adoption import adopt, list_proposals
    from skillopt_sleep.errors import UserError
    from tests.support.staged_project import MEMORY_OLD, stage_proposal

    project = make_project(tmp_path / "a")
    (project / "CLAUDE.md").write_bytes(MEMORY_OLD)
    if how == "unsealed":
        directory = stage_proposal(project)
        path = directory / "manifest.json"
        path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != "mac"}))
    else:
        other = make_project(tmp_path / "b")
        (other / "CLAUDE.md").write_bytes(MEMORY_OLD)
        made = stage_proposal(other)
        shutil.copytree(made.parent, project_dirs(project).staging)
    assert list_proposals(project) == []
    with pytest.raises(UserError):
        adopt(project)
    assert (project / "CLAUDE.md").read_bytes() == MEMORY_OLD
