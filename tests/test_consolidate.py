from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.base import ProviderError
from skillopt_sleep.backends.client import Client, Stats
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.models import Models
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.consolidate import LoopSettings, consolidate
from skillopt_sleep.documents import load_documents

from tests.support.tasks import make_tasks


def models_for(spec: str) -> Models:
    backend = make_backend(spec)
    limiter, stats = Limiter(4), Stats()
    retry = RetryPolicy(attempts=2, sleep=lambda s: None)
    return Models(Client(backend, limiter=limiter, stats=stats, retry=retry),
                  Client(backend, limiter=limiter, stats=stats, retry=retry, role="optimizer"))


def test_a_correct_optimizer_improves_val_and_the_gate_keeps_it(tmp_path: Path) -> None:
    tasks = make_tasks()
    docs = load_documents(tmp_path)
    out = consolidate(tasks, docs, models_for("sim:correct=1,harmful=0,seed=1"), LoopSettings())
    assert out.accepted, out.rejected
    assert out.candidate > out.baseline + 0.1
    assert all(d.accepted for d in out.decisions if d.edits and d.edits[0] in out.accepted and len(d.edits) == 1)
    assert out.documents.skill.rules(), "accepted rules live in the managed block"


def test_only_harmful_proposals_are_all_refused(tmp_path: Path) -> None:
    tasks = make_tasks()
    (tmp_path / "CLAUDE.md").write_text('- Release notes always have a "## Fixes" section and a '
                                        '"## Breaking changes" section.\n- Never leave "TODO" in text.\n')
    docs = load_documents(tmp_path)
    out = consolidate(tasks, docs, models_for("sim:correct=0,harmful=1,seed=2"), LoopSettings())
    assert out.rejected, "the optimizer proposed harmful rules"
    assert out.accepted == []
    assert out.documents == docs
    assert out.candidate == out.baseline


def test_k_samples_are_independent_draws(tmp_path: Path) -> None:
    tasks = make_tasks()
    docs = load_documents(tmp_path)
    out = consolidate(tasks, docs, models_for("sim:correct=0,harmful=0,seed=3"), LoopSettings(k=6, agree_after=0))
    responses = [a.response for xs in out.train_attempts.values() for a in xs]
    assert len(responses) == 6 * sum(t.split == "train" for t in tasks)
    per_task = [len({a.response for a in xs}) for xs in out.train_attempts.values()]
    assert max(per_task) > 1, "K samples of one prompt must not be cache copies"


def test_a_provider_outage_raises_instead_of_scoring_zero(tmp_path: Path) -> None:
    docs = load_documents(tmp_path)
    with pytest.raises(ProviderError) as info:
        consolidate(make_tasks(), docs, models_for("sim:down=1"), LoopSettings())
    assert info.value.kind == "server"


def test_test_split_is_measured_but_never_gates(tmp_path: Path) -> None:
    tasks = make_tasks(per_kind=5, test=True)
    assert any(t.split == "test" for t in tasks)
    docs = load_documents(tmp_path)
    out = consolidate(tasks, docs, models_for("sim:correct=1,harmful=0,seed=4"), LoopSettings())
    assert out.test_baseline is not None and out.test_candidate is not None
    test_ids = {t.id for t in tasks if t.split == "test"}
    for decision in out.decisions:
        assert not test_ids & {d.task_id for d in decision.per_task}


def test_no_val_tasks_means_nothing_is_accepted(tmp_path: Path) -> None:
    tasks = make_tasks()
    for t in tasks:
        t.split = "train"
    out = consolidate(tasks, load_documents(tmp_path), models_for("sim:correct=1,harmful=0,seed=5"), LoopSettings())
    assert out.accepted == []
    assert any("cannot be validated" in n for n in out.notes)


def test_a_gate_decides_on_exactly_the_samples_it_drew(tmp_path: Path) -> None:
    """The baseline is shared by candidates gated in parallel; samples another gate drew must not
    enter this one's decision (the verdict, and the calls after it, would depend on timing)."""
    from skillopt_sleep import consolidate as loop
    from skillopt_sleep.documents import apply_edit
    from skillopt_sleep.types import Edit

    tasks = make_tasks()
    docs = load_documents(tmp_path)
    models = models_for("sim:seed=4")
    val = [t for t in tasks if t.split == "val"]
    evaluator = loop._Evaluator(models, val, loop.Outcome(documents=docs), "val")
    evaluator.ensure(docs, 12)  # another candidate's gate already drew the ceiling
    cand = apply_edit(docs, Edit(target="skill", op="add", content="Keep every answer short."))
    settings = LoopSettings(val_samples=4, max_val_samples=12)
    decision = loop._gate(evaluator, docs, cand, settings, set(), set())
    assert all(d.n_baseline == d.n_candidate for d in decision.per_task), decision.per_task


def test_the_test_split_is_not_measured_when_nothing_changed(tmp_path: Path) -> None:
    from tests.support.fake_backend import FakeBackend, forward

    tasks = make_tasks(per_kind=5, test=True)
    test_ids = {t.id for t in tasks if t.split == "test"}
    backend = FakeBackend(forward(make_backend("sim:correct=0,harmful=0,seed=4")))
    models = Models(Client(backend), Client(backend, role="optimizer"))
    out = consolidate(tasks, load_documents(tmp_path), models, LoopSettings())
    assert out.accepted == [] and out.test_baseline is None and out.test_candidate is None
    asked = {r.payload["task"]["id"] for r in backend.requests if r.purpose == "attempt"}
    assert test_ids and asked and not asked & test_ids
    assert any("test task(s) not measured" in n for n in out.notes)


def _gate_alone(tmp_path: Path, content: str, seed: int):
    from skillopt_sleep import consolidate as loop
    from skillopt_sleep.documents import apply_edit
    from skillopt_sleep.types import Edit
    from tests.support.fake_backend import FakeBackend, forward

    tasks = make_tasks()
    val = [t for t in tasks if t.split == "val"]
    commit_train = [t.id for t in tasks if t.split == "train" and t.skill_hint == "commit"]
    backend = FakeBackend(forward(make_backend(f"sim:seed={seed}")))
    models = Models(Client(backend), Client(backend, role="optimizer"))
    docs = load_documents(tmp_path)
    evaluator = loop._Evaluator(models, val, loop.Outcome(documents=docs), "val")
    evaluator.ensure(docs, 4)
    cand = apply_edit(docs, Edit(target="skill", op="add", content=content, evidence=commit_train))
    focus = loop.focus_for([Edit(target="skill", op="add", content=content, evidence=commit_train)], tasks)
    decision = loop._gate(evaluator, docs, cand, LoopSettings(), set(), focus)
    asked = {r.payload["task"]["id"] for r in backend.requests
             if r.purpose == "attempt" and r.payload["documents"] == cand.prompt_prefix()}
    return decision, asked, focus, {t.id for t in val}


def test_an_edit_without_gain_on_its_own_tasks_is_refused_before_the_others_are_measured(tmp_path: Path) -> None:
    decision, asked, focus, val_ids = _gate_alone(tmp_path, "Keep the tone friendly and plain.", seed=1)
    assert not decision.accepted and focus and focus < val_ids
    assert asked == focus, "the candidate was measured on the focus tasks only"
    assert decision.statistic["not_measured"] == sorted(val_ids - focus)


def test_an_edit_that_may_pass_is_measured_on_every_val_task(tmp_path: Path) -> None:
    decision, asked, focus, val_ids = _gate_alone(
        tmp_path, 'Every commit message ends with a "Refs: ACME-" trailer.', seed=1)
    assert decision.accepted, decision.reasons
    assert asked == val_ids and {d.task_id for d in decision.per_task} == val_ids
