"""The evaluator keeps, beside each val score, the checks that sample failed, so the gate can test
a rule on the checks it fixes (``Evaluator.targeted``)."""

from __future__ import annotations

from pathlib import Path

from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.models import Models
from skillopt_sleep.documents import load_documents
from skillopt_sleep.evaluator import Evaluator
from skillopt_sleep.judges import check_id
from skillopt_sleep.types import TaskRecord

from tests.support.fake_backend import FakeBackend, ok

REFS = {"op": "contains", "arg": "Refs: ACME-"}
FIXES = {"op": "section_present", "arg": "Fixes"}
OTHER = {"op": "contains", "arg": "Signed-off-by"}


def task(tid: str, checks: list[dict]) -> TaskRecord:
    return TaskRecord(id=tid, intent=f"write {tid}", project="/p", split="val",
                      judge={"kind": "rule", "checks": checks})


def test_targeted_scores_are_the_share_of_the_fixed_checks_each_sample_passed(tmp_path: Path) -> None:
    backend = FakeBackend(lambda r: ok("Refs: ACME-12 and nothing else"))
    models = Models(Client(backend), Client(backend, role="optimizer"))
    tasks = [task("both", [REFS, FIXES]), task("refs-only", [REFS])]
    phases: dict[str, int] = {}
    ev = Evaluator(models, tasks, phases, "val")
    docs = load_documents(tmp_path)
    scores = ev.ensure(docs, 3)
    assert scores == {"both": [0.5] * 3, "refs-only": [1.0] * 3}
    assert ev.targeted(docs, [check_id(REFS)]) == {"both": [1.0] * 3, "refs-only": [1.0] * 3}
    assert ev.targeted(docs, [check_id(FIXES)]) == {"both": [0.0] * 3}, "a task without the check is left out"
    assert ev.targeted(docs, [check_id(REFS), check_id(FIXES)]) == {"both": [0.5] * 3, "refs-only": [1.0] * 3}
    assert ev.targeted(docs, [check_id(OTHER)]) == {}
    assert phases == {"val": 6}
