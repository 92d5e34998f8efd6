"""The evaluator keeps, beside each val score, the checks that sample failed, so the gate can test
a rule on the checks it fixes (``Evaluator.targeted``)."""

from __future__ import annotations

import json
from pathlib import Path

from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.models import Models
from skillopt_sleep.documents.managed_block import load_documents
from skillopt_sleep.gate.evaluator import Evaluator
from skillopt_sleep.checks.judges import check_id
from skillopt_sleep.types import Edit, TaskRecord

from tests.support.fake_backend import FakeBackend, ok

REFS = {"op": "contains", "arg": "Refs: ACME-"}
FIXES = {"op": "section_present", "arg": "Fixes"}
OTHER = {"op": "contains", "arg": "Signed-off-by"}


def task(tid: str, checks: list[dict]) -> TaskRecord:
    return TaskRecord(
        id=tid, intent=f"write {tid}", project="/p", split="val", judge={"kind": "rule", "checks": checks}
    )


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


def test_a_pooled_edit_keeps_its_failed_checks_for_the_next_nights_targeted_test(tmp_path: Path) -> None:
    """A re-tested rule's earlier samples count toward the test on the checks it fixes: the pool
    keeps, beside each score, the checks that sample failed (and an old record without them is
    'not known', never 'passed')."""
    from skillopt_sleep.store.rule_evidence import EvidencePool

    backend = FakeBackend(lambda r: ok("Refs: ACME-12 and nothing else"))
    models = Models(Client(backend), Client(backend, role="optimizer"))
    tasks = [task("both", [REFS, FIXES])]
    docs = load_documents(tmp_path)
    path = tmp_path / "evidence.json"
    first = EvidencePool.load(path, tmp_path, "m", "fp")
    rule = Edit("skill", "add", "Always add a Fixes section.")
    ident = first.identity(rule)
    ev = Evaluator(models, tasks, {}, "val", first)
    ev.ensure(docs, 3, identity=ident)
    ev.store()
    first.record_test(rule, accepted=False)
    first.save()
    again = EvidencePool.load(path, tmp_path, "m", "fp")
    phases: dict[str, int] = {}
    later = Evaluator(models, tasks, phases, "val", again)
    assert later.ensure(docs, 3, identity=ident) == {"both": [0.5] * 3} and phases == {}
    assert later.targeted(docs, [check_id(FIXES)]) == {"both": [0.0] * 3}
    assert later.targeted(docs, [check_id(REFS)]) == {"both": [1.0] * 3}

    saved = json.loads(path.read_text(encoding="utf-8"))
    for record in saved["records"]:
        record.pop("failed", None)  # as written before the pool kept failed checks
    path.write_text(json.dumps(saved), encoding="utf-8")
    old = Evaluator(models, tasks, {}, "val", EvidencePool.load(path, tmp_path, "m", "fp"))
    old.ensure(docs, 3, identity=ident)
    assert old.targeted(docs, [check_id(FIXES)]) == {"both": [None] * 3}


def test_a_sample_that_could_not_be_scored_keeps_the_failed_checks_in_line_when_pooled(tmp_path: Path) -> None:
    """Unscored samples are left out of the pool; the failed checks kept beside the scores must
    leave out the same samples, or a failure would be read as another sample's pass."""
    from dataclasses import replace as with_

    from skillopt_sleep.store.rule_evidence import EvidencePool

    def reply(request):
        if request.sample == 1:
            return with_(ok("Refs: ACME-1 and then the text was cut"), truncated=True)
        return ok("Refs: ACME-12 and more") if request.sample == 0 else ok("no trailer here")

    backend = FakeBackend(reply)
    models = Models(Client(backend), Client(backend, role="optimizer"))
    tasks = [task("refs", [REFS, FIXES])]
    docs = load_documents(tmp_path)
    pool = EvidencePool(None, str(tmp_path), "m", "fp")
    rule = Edit("skill", "add", "Always add a Refs trailer.")
    ident = pool.identity(rule)
    ev = Evaluator(models, tasks, {}, "val", pool)
    assert ev.ensure(docs, 3, identity=ident)["refs"] == [0.5, None, 0.0]
    ev.store()
    key = ev.content["refs"]
    assert pool.stored(ident, key) == [0.5, 0.0]
    assert pool.stored_failed(ident, key) == [
        frozenset({check_id(FIXES)}),
        frozenset({check_id(REFS), check_id(FIXES)}),
    ]
