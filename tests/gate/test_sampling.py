"""The gate's sampling on val (gate/sampling.py ``NightGate``): a gate decides on exactly the samples
it drew, and an edit is measured on the val tasks it claims to help first, on every val task only
when its gain may still hold up, and on its own tasks only in a leave-one-out test."""

from __future__ import annotations

from pathlib import Path

from skillopt_sleep.config import GateSettings
from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.models import Models
from skillopt_sleep.documents.managed_block import load_documents
from skillopt_sleep.gate.evaluator import Evaluator
from skillopt_sleep.learning.loop import LoopSettings

from tests.learning.test_loop import models_for
from tests.support.tasks import make_tasks


def test_a_gate_decides_on_exactly_the_samples_it_drew(tmp_path: Path) -> None:
    """The baseline is shared by candidates gated in parallel; samples another gate drew must not
    enter this one's decision (the verdict, and the calls after it, would depend on timing)."""
    from skillopt_sleep.learning import loop
    from skillopt_sleep.documents.managed_block import apply_edit
    from skillopt_sleep.types import Edit

    tasks = make_tasks()
    docs = load_documents(tmp_path)
    models = models_for("sim:seed=4")
    val = [t for t in tasks if t.split == "val"]
    evaluator = Evaluator(models, val, {}, "val")
    evaluator.ensure(docs, 12)  # another candidate's gate already drew the ceiling
    cand = apply_edit(docs, Edit(target="skill", op="add", content="Keep every answer short."))
    settings = LoopSettings(gate=GateSettings(val_samples=4, max_val_samples=12))
    decision = loop.NightGate(evaluator, settings, docs, tasks, set(), 1).gate(cand, set())
    assert all(d.n_baseline == d.n_candidate for d in decision.per_task), decision.per_task


def _gate_alone(tmp_path: Path, content: str, seed: int, own_tasks_only: bool = False):
    from skillopt_sleep.learning import loop
    from skillopt_sleep.documents.managed_block import apply_edit
    from skillopt_sleep.types import Edit
    from tests.support.fake_backend import FakeBackend, forward

    tasks = make_tasks()
    val = [t for t in tasks if t.split == "val"]
    commit_train = [t.id for t in tasks if t.split == "train" and t.skill_hint == "commit"]
    backend = FakeBackend(forward(make_backend(f"sim:seed={seed}")))
    models = Models(Client(backend), Client(backend, role="optimizer"))
    docs = load_documents(tmp_path)
    evaluator = Evaluator(models, val, {}, "val")
    evaluator.ensure(docs, 4)
    cand = apply_edit(docs, Edit(target="skill", op="add", content=content, evidence=commit_train))
    focus = loop.focus_for([Edit(target="skill", op="add", content=content, evidence=commit_train)], tasks)
    decision = loop.NightGate(evaluator, LoopSettings(), docs, tasks, set(), 1).gate(
        cand, focus, own_tasks_only=own_tasks_only
    )
    asked = {
        r.payload["task"]["id"]
        for r in backend.requests
        if r.purpose == "attempt" and r.payload["documents"] == cand.prompt_prefix()
    }
    return decision, asked, focus, {t.id for t in val}


def test_an_edit_without_gain_on_its_own_tasks_is_refused_before_the_others_are_measured(tmp_path: Path) -> None:
    decision, asked, focus, val_ids = _gate_alone(tmp_path, "Keep the tone friendly and plain.", seed=1)
    assert not decision.accepted and focus and focus < val_ids
    assert asked == focus, "the candidate was measured on the focus tasks only"
    assert decision.statistic["not_measured"] == sorted(val_ids - focus)


def test_an_edit_that_may_pass_is_measured_on_every_val_task(tmp_path: Path) -> None:
    decision, asked, focus, val_ids = _gate_alone(
        tmp_path, 'Every commit message ends with a "Refs: ACME-" trailer.', seed=1
    )
    assert decision.accepted, decision.reasons
    assert asked == val_ids and {d.task_id for d in decision.per_task} == val_ids


def test_a_leave_one_out_test_measures_the_edit_on_its_own_tasks_only(tmp_path: Path) -> None:
    decision, asked, focus, val_ids = _gate_alone(
        tmp_path, 'Every commit message ends with a "Refs: ACME-" trailer.', seed=1, own_tasks_only=True
    )
    assert decision.accepted, decision.reasons
    assert asked == focus and focus < val_ids, "the combination's own gate measures the other tasks"
