"""bench_crash counts where each kill of ``adopt`` landed from the files it leaves
(``scripts/crash_landing.py``): each of the three places is told apart."""

from __future__ import annotations

import pytest

from skillopt_sleep.staging import adoption_journal as journal
from skillopt_sleep.staging.adoption import adopt

from tests.support.scripts import script_module
from tests.support.staged_project import stage_proposal
from tests.support.staged_project import project_fixture  # noqa: F401  (the ``project`` fixture)


@pytest.fixture
def crash_landing():
    yield from script_module("crash_landing")


class Killed(BaseException):
    """Stands in for SIGKILL: nothing after it runs in adopt's own code."""


def test_before_inside_and_after_adopts_writes(project, crash_landing, monkeypatch: pytest.MonkeyPatch) -> None:
    landing = crash_landing.landing
    stage_proposal(project)
    assert landing(project, finished=False) == "before-write"
    assert landing(project, finished=True) == "finished"
    real, written = journal.write_side, []

    def killed_on_the_second_file(step, data):
        if written:
            raise Killed
        written.append(step.path)
        real(step, data)

    monkeypatch.setattr(journal, "write_side", killed_on_the_second_file)
    with pytest.raises(Killed):
        adopt(project)
    assert journal.pending(project) is not None
    assert landing(project, finished=False) == "inside-write"
    monkeypatch.setattr(journal, "write_side", real)
    adopt(project)  # rolls the interrupted one back, then adopts
    assert landing(project, finished=False) == "after-write"
