"""A per-night call cap (``max_calls``): a hard backstop in the budget, and a learning loop that
plans to fit it — undecided edits are refused for tonight without a ban, never accepted on less
evidence than the uncapped gate asks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.base import BudgetExceeded, Request
from skillopt_sleep.backends.budget import Budget
from skillopt_sleep.backends.client import Client, Stats
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.models import Models
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.gate.call_cap import CallCap, out_of_calls, undecided
from skillopt_sleep.backends.assembly import build_models
from skillopt_sleep.config import DEFAULT_MODEL_CALLS, load_config
from skillopt_sleep.learning.loop import LoopSettings, consolidate, focus_for
from skillopt_sleep.documents.managed_block import apply_edit, load_documents
from skillopt_sleep.store.rule_evidence import EvidencePool, val_set_key
from skillopt_sleep.errors import UserError
from skillopt_sleep.gate.evaluator import Evaluator
from skillopt_sleep.types import Edit, GateDecision, Usage
from skillopt_sleep.gate.sampling import NightGate

from tests.support.tasks import make_tasks

REFS = 'When writing a commit message, always include "Refs: ACME-" in the response.'


def capped_models(spec: str, max_calls: int | None) -> tuple[Models, Budget]:
    backend = make_backend(spec)
    limiter, stats, budget = Limiter(4), Stats(), Budget(max_calls=max_calls)
    retry = RetryPolicy(attempts=2, sleep=lambda s: None)
    return Models(
        Client(backend, limiter=limiter, stats=stats, retry=retry, budget=budget),
        Client(backend, limiter=limiter, stats=stats, retry=retry, role="optimizer", budget=budget),
    ), budget


def test_the_call_limit_is_checked_before_every_call_and_a_failed_call_is_not_counted() -> None:
    budget = Budget(max_calls=2)
    request = Request(purpose="attempt", system="s", user="u")
    first = budget.reserve(request, None, "m")
    assert budget.calls_left() == 1, "a call in flight holds its place"
    budget.settle(first, Usage())
    failed = budget.reserve(request, None, "m")
    budget.release(failed)
    assert budget.calls_left() == 1, "a call that failed (released) costs nothing"
    budget.settle(budget.reserve(request, None, "m"), Usage())
    with pytest.raises(BudgetExceeded, match="calls budget reached"):
        budget.reserve(request, None, "m")
    assert budget.exhausted == "calls" and budget.summary()["calls_used"] == 2
    assert Budget().calls_left() is None


def test_a_negative_cap_is_a_config_error() -> None:
    with pytest.raises(UserError, match=r"max_calls must be >= 0 \(0: no cap\)"):
        load_config(overrides={"max_calls": -3}, env={})


@pytest.mark.parametrize(
    "settings, cap",
    [
        ({"backend": "sim"}, None),
        ({"backend": "sim:follow=0.9,base=0.3"}, None),
        ({"backend": "claude-cli"}, DEFAULT_MODEL_CALLS),
        ({"backend": "anthropic"}, DEFAULT_MODEL_CALLS),
        ({"backend": "auto"}, DEFAULT_MODEL_CALLS),
        ({"backend": "sim", "optimizer_backend": "openai"}, DEFAULT_MODEL_CALLS),
        ({"backend": "codex-cli", "max_calls": 0}, None),
        ({"backend": "codex-cli", "max_calls": 150}, 150),
        ({"backend": "sim", "max_calls": 90}, 90),
    ],
)
def test_a_night_a_model_answers_is_capped_unless_told_otherwise(settings: dict, cap: int | None) -> None:
    """A cost guard by default wherever a model answers; the simulator is free; 0 lifts the cap."""
    assert load_config(overrides=settings, env={}).call_cap() == cap


def test_the_default_cap_reaches_the_models_budget() -> None:
    models = build_models(load_config(overrides={"backend": "sim", "optimizer_backend": "sim"}, env={}))
    assert models.target.budget is None or models.target.budget.max_calls is None
    config = load_config(overrides={"backend": "sim", "max_calls": 0}, env={})
    assert build_models(config).target.budget.max_calls is None
    config = load_config(overrides={"backend": "sim", "max_calls": 77}, env={})
    assert build_models(config).target.budget.max_calls == 77


@pytest.mark.parametrize("cap", [30, 60, 120, 250])
@pytest.mark.parametrize("seed", [1, 2])
def test_a_capped_night_stays_within_its_calls_without_hitting_the_backstop(
    tmp_path: Path, cap: int, seed: int
) -> None:
    models, budget = capped_models(f"sim:seed={seed}", cap)
    out = consolidate(make_tasks(per_kind=5, test=True), load_documents(tmp_path), models, LoopSettings())
    assert budget.exhausted is None, "the loop planned to fit; the backstop never fired"
    assert budget.calls_used <= cap
    if budget.calls_used == 0:
        assert any("cannot pay for a night's learning" in n for n in out.notes), out.notes
    assert sum(models.calls().values()) == budget.calls_used
    for rejection in out.rejected:
        if rejection.stage == "budget":
            assert not rejection.ban and rejection.reasons[0].startswith(("undecided", "accepted alone, but"))
    if any(r.stage == "budget" for r in out.rejected):
        assert any(n.startswith("call cap:") and f"cap of {cap} calls" in n for n in out.notes), out.notes


def test_the_uncapped_night_is_unchanged_by_the_cap_machinery(tmp_path: Path) -> None:
    """No cap: the same draws, calls and verdicts as a budget without a call limit."""
    tasks = make_tasks(per_kind=5)
    runs = []
    for budget in (None, Budget(max_tokens=10**9)):
        backend = make_backend("sim:seed=7")
        stats = Stats()
        models = Models(
            Client(backend, stats=stats, budget=budget), Client(backend, stats=stats, role="optimizer", budget=budget)
        )
        out = consolidate(tasks, load_documents(tmp_path), models, LoopSettings())
        runs.append(
            (
                sum(models.calls().values()),
                [e.content for e in out.accepted],
                [(r.stage, r.reasons) for r in out.rejected],
            )
        )
    assert runs[0] == runs[1]
    assert not CallCap(Budget(max_tokens=5)).capped and CallCap(Budget(max_calls=5)).capped


def _gate(tmp_path: Path, cap: int | None, seed: int):
    tasks = make_tasks()
    val = [t for t in tasks if t.split == "val"]
    commit_train = [t.id for t in tasks if t.split == "train" and t.skill_hint == "commit"]
    models, budget = capped_models(f"sim:seed={seed}", cap)
    docs = load_documents(tmp_path)
    edit = Edit(target="skill", op="add", content=REFS, evidence=commit_train)
    cand = apply_edit(docs, edit)
    night = NightGate(Evaluator(models, val, {}, "val"), LoopSettings(), docs, tasks, set(), 1, CallCap(budget))
    return night.gate(cand, focus_for([edit], tasks)), budget


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)])
def test_running_out_of_calls_never_passes_an_edit(tmp_path: Path, seed: int) -> None:
    """The same edit, the same draws: under every cap it is either decided exactly as without one
    or left undecided (refused, not banned); a useful rule is accepted once the cap allows."""
    full, _ = _gate(tmp_path / "full", None, seed)
    assert full.accepted, full.reasons
    needed = 2 * sum(full.statistic["samples_per_task"].values())
    verdicts = []
    for cap in range(8, needed + 9, 8):
        decision, budget = _gate(tmp_path / f"cap{cap}", cap, seed)
        assert budget.exhausted is None and budget.calls_used <= cap
        if out_of_calls(decision):
            assert not decision.accepted and decision.reasons[0].startswith("undecided")
        else:  # decided: on exactly the samples the uncapped gate took
            assert decision.accepted == full.accepted and decision.reasons == full.reasons
            assert decision.statistic["samples_per_task"] == full.statistic["samples_per_task"]
            assert decision.statistic["gain"] == full.statistic["gain"]
        verdicts.append(decision.accepted)
    assert verdicts[0] is False and verdicts[-1] is True, verdicts


def test_an_undecided_edit_is_tested_again_on_the_same_val_tasks(tmp_path: Path) -> None:
    """A refused edit is not re-tested on unchanged val tasks; one the cap left undecided is, and
    its samples are kept for that night."""
    tasks = make_tasks(per_kind=5)
    val = [t for t in tasks if t.split == "val"]
    models, budget = capped_models("sim:correct=1,harmful=0,seed=3", 45)
    docs = load_documents(tmp_path)
    pool = EvidencePool(None, str(tmp_path), models.target.id, docs.fingerprint())
    out = consolidate(tasks, docs, models, LoopSettings(), pool=pool)
    undecided = [r for r in out.rejected if r.stage == "budget"]
    assert undecided, [(r.stage, r.reasons) for r in out.rejected]
    for rejection in undecided:
        assert not pool.unchanged(rejection.edit, val_set_key(val))
    drew = [r for r in undecided if pool.nights_tested(r.edit)]
    assert drew, "the cap stopped a gate that had drawn"
    assert all(any(pool.samples.get(pool.identity(r.edit), {}).values()) for r in drew)


def test_run_takes_the_cap_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from skillopt_sleep.cli import main
    from skillopt_sleep.commands.run import overrides_from

    assert overrides_from(argparse.Namespace(max_calls=50))["max_calls"] == 50
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "--max-calls" in capsys.readouterr().out


class RubricAnswers:
    """The sim, with a rubric-judged task's answer made gradeable (the sim leaves it empty)."""

    def __init__(self, inner):
        self.inner, self.id, self.price, self.offline = inner, inner.id, inner.price, True

    def complete(self, request: Request):
        from skillopt_sleep.backends.base import Completion

        completion = self.inner.complete(request)
        if request.purpose == "attempt" and not completion.text.strip():
            text = "## Testing\nran it" if request.sample % 2 else "nothing to add"
            return Completion(text=text, usage=completion.usage, model="sim")
        return completion


def test_a_rubric_judged_val_task_costs_two_calls_a_sample_and_the_plan_counts_them(tmp_path: Path) -> None:
    """Each answer to a rubric task is graded by the optimizer: a plan that counted one call a
    sample would let the backstop end the night mid-gate."""
    tasks = make_tasks()
    for t in tasks:
        if t.skill_hint == "pr":
            t.judge = {"kind": "rubric", "rubric": 'has a "Testing" section'}
    val = [t for t in tasks if t.split == "val"]
    edit = Edit(
        target="skill",
        op="add",
        content=REFS,
        evidence=[t.id for t in tasks if t.split == "train" and t.skill_hint == "commit"],
    )
    docs = load_documents(tmp_path)
    cand = apply_edit(docs, edit)
    for cap in (None, *range(40, 140, 6)):
        backend = RubricAnswers(make_backend("sim:seed=1"))
        budget, stats = Budget(max_calls=cap), Stats()
        models = Models(
            Client(backend, stats=stats, budget=budget), Client(backend, stats=stats, role="optimizer", budget=budget)
        )
        night = NightGate(Evaluator(models, val, {}, "val"), LoopSettings(), docs, tasks, set(), 1, CallCap(budget))
        decision = night.gate(cand, focus_for([edit], tasks))
        assert budget.calls_used <= (cap or 10**9) and budget.exhausted is None
        if cap is None:
            full = decision
            assert any(n == 2 for n in night.evaluator.calls_per_sample.values())
        elif not out_of_calls(decision):
            assert decision.statistic["samples_per_task"] == full.statistic["samples_per_task"]


@pytest.mark.parametrize("cap", [5, 10, 20, 40])
@pytest.mark.parametrize("per_kind", [10, 20])
def test_a_cap_too_small_to_learn_says_so_instead_of_ending_the_night(tmp_path: Path, cap: int, per_kind: int) -> None:
    models, budget = capped_models("sim:seed=2", cap)
    out = consolidate(make_tasks(per_kind=per_kind), load_documents(tmp_path), models, LoopSettings())
    assert budget.exhausted is None and budget.calls_used <= cap
    assert budget.calls_used or any(
        "cannot pay for a night's learning" in n and "raise max_calls" in n for n in out.notes
    )


def test_the_edits_below_one_the_calls_ran_out_for_are_not_started(tmp_path: Path) -> None:
    from skillopt_sleep.gate.call_cap import in_turn

    ran = []

    def gate(name: str, runs_out: bool):
        def run() -> GateDecision:
            ran.append(name)
            decision = GateDecision(False, "reject", 0.0, 0.0)
            return undecided(decision, 50) if runs_out else decision

        return run

    decisions = in_turn([gate("a", False), gate("b", True), gate("c", False), gate("d", False)], 50)
    assert ran == ["a", "b"], "nothing drawn for the edits ranked below the one that ran out"
    assert [out_of_calls(d) for d in decisions] == [False, True, True, True]
    assert "ranked above it" in decisions[2].reasons[0]


def test_retiring_a_rule_under_a_cap_is_left_undecided_not_a_budget_stop(tmp_path: Path) -> None:
    from tests.rules.test_retire import COMMIT, EMAIL, NEW, NOTES, full

    from skillopt_sleep.gate.removal import gate_removal
    from skillopt_sleep.rules.retire import Tonight, retiring

    tasks = make_tasks(per_kind=5)
    kinds = {"commit": "commit message", "pr": "pull request", "notes": "release notes"}
    for t in tasks:
        t.kind = kinds[t.skill_hint]
    val = [t for t in tasks if t.split == "val"]
    docs = full(tmp_path, [COMMIT, NOTES, EMAIL])
    swap = retiring(
        docs, NEW, Tonight(frozenset(kinds.values()) | {"postmortem", "customer email"}, frozenset({"release notes"}))
    )
    assert swap is not None
    cand = apply_edit(docs, swap)
    focus = focus_for([swap], tasks)
    outcomes = []
    for cap in (None, 4, 8, 12, 16, 24, 40):
        models, budget = capped_models("sim:seed=1", cap)
        night = NightGate(Evaluator(models, val, {}, "val"), LoopSettings(), docs, tasks, set(), 1, CallCap(budget))
        decision = gate_removal(night, swap, cand, focus, lambda night=night: night.gate(cand, focus))
        assert budget.exhausted is None and budget.calls_used <= (cap or 10**9)
        outcomes.append("undecided" if out_of_calls(decision) else decision.accepted)
        if out_of_calls(decision):
            assert not decision.accepted and decision.reasons[0].startswith("retiring")
    assert "undecided" in outcomes[1:], outcomes
