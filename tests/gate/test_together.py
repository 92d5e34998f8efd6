"""A night's rules tested together (``together.py``): each on its own tasks, the combination once on
every val task, and no rule hidden behind another kind's."""

from __future__ import annotations


import random
from pathlib import Path

import pytest

from skillopt_sleep.gate import together
from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.learning.loop import consolidate
from skillopt_sleep.documents.managed_block import load_documents
from skillopt_sleep.store.rule_evidence import EvidencePool
from skillopt_sleep.gate.settings import LoopSettings
from tests.support.settings import looks_of
from tests.learning.test_loop import HELPS_A, HELPS_B, PASS, TwoKinds, World, world_models, world_tasks

# claims kind a (its evidence is kind a's), and makes every answer terse: kind b suffers
TRADE_A = "Answers about kind a follow the a checklist; keep every answer terse"


class BHalvedByTerse(World):
    """Kind ``a`` passes only with the a checklist. Kind ``b`` passes 4 times in 10 without a
    rule, always with the b checklist, and half as often as that when a rule says "terse"."""

    def complete(self, request: Request) -> Completion:
        if request.purpose != "attempt":
            return super().complete(request)
        task, docs = request.payload["task"], request.payload["documents"]
        rng = random.Random(f"{self.seed}|{task['id']}|{request.sample}|{docs}")
        if task["skill_hint"] == "a":
            p = 1.0 if "a checklist" in docs else 0.0
        else:
            p = (1.0 if "b checklist" in docs else 0.4) * (0.5 if "terse" in docs else 1.0)
        return Completion(text=f"Done. {PASS}" if rng.random() < p else "Done.", model="world")


def _sampled(decision) -> set[str]:
    return {tid for tid, n in decision.statistic["samples_per_task"].items() if n}


def test_each_rule_is_measured_on_its_own_tasks_and_their_combination_once_on_every_task(tmp_path: Path) -> None:
    docs = load_documents(tmp_path)
    val = {t.id for t in world_tasks(6) if t.split == "val"}
    out = consolidate(world_tasks(6), docs, world_models(TwoKinds([HELPS_A, HELPS_B])), LoopSettings())
    assert sorted(e.content for e in out.accepted) == sorted([HELPS_A, HELPS_B])
    alone = [d for d in out.decisions if len(d.edits) == 1]
    assert len(alone) == 2
    for decision in alone:
        kind = "a" if decision.edits[0].content == HELPS_A else "b"
        assert _sampled(decision) == {t for t in val if t.startswith(f"val-{kind}-")}, "its own tasks only"
    [both] = [d for d in out.decisions if len(d.edits) == 2]
    assert both.accepted and _sampled(both) == val and both.statistic["together"]

    apart = consolidate(world_tasks(6), docs, world_models(TwoKinds([HELPS_A, HELPS_B])), LoopSettings(together=False))
    assert all(_sampled(d) == val for d in apart.decisions), "one by one: every edit on every val task"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_rule_that_lowers_another_kind_is_not_hidden_behind_that_kinds_own_rule(tmp_path: Path, seed: int) -> None:
    """Beside the kind b rule, TRADE_A leaves kind b at half of what that rule gives it alone; the
    combination still beats tonight's documents everywhere, so only the comparison with the b rule
    alone shows it."""
    path = tmp_path / "evidence.json"
    docs = load_documents(tmp_path)
    pool = EvidencePool.load(path, tmp_path, "world", docs.fingerprint())
    out = consolidate(
        world_tasks(6), docs, world_models(BHalvedByTerse([TRADE_A, HELPS_B], seed=seed)), LoopSettings(), pool=pool
    )
    assert [e.content for e in out.accepted] == [HELPS_B]
    [refused] = [r for r in out.rejected if r.edit.content == TRADE_A]
    assert "lowers the tasks of" in refused.reasons[0] and not refused.ban
    assert pool.accepted_before(out.accepted[0]) and not pool.accepted_before(refused.edit)


def test_without_the_comparison_with_each_rule_alone_the_trade_off_would_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard above is what refuses it: the combination's own gate against tonight's documents
    lets both rules through."""
    monkeypatch.setattr(together, "worse_than_alone", lambda *args: [])
    out = consolidate(
        world_tasks(6),
        load_documents(tmp_path),
        world_models(BHalvedByTerse([TRADE_A, HELPS_B], seed=1)),
        LoopSettings(),
    )
    assert sorted(e.content for e in out.accepted) == sorted([TRADE_A, HELPS_B])


def test_a_capped_night_that_runs_out_before_the_combination_leaves_its_rules_for_the_next(tmp_path: Path) -> None:
    """Several rules under a cap are gated on their own tasks one by one; when the calls run out
    before they are measured on every val task, the rules that passed are undecided (no verdict,
    no ban) and the next night resumes them first, without judging their own tasks again; the
    rules the calls never reached are held beside them, and the nights go to them all until
    they are measured together."""
    from skillopt_sleep.gate.call_cap import out_of_calls
    from tests.support.tasks import make_tasks
    from tests.gate.test_call_cap import capped_models

    docs = load_documents(tmp_path)
    path = tmp_path / "evidence.json"
    models, _ = capped_models("sim:seed=5", 120)
    pool = EvidencePool.load(path, tmp_path, "sim", docs.fingerprint())
    first = consolidate(make_tasks(), docs, models, looks_of(4), pool=pool)
    pool.save()
    left = [r for r in first.rejected if r.stage == "budget" and "passed on its own val tasks" in r.reasons[0]]
    assert left and first.accepted == [] and not any(r.ban for r in left)
    for rejection in left:
        [own] = [d for d in first.decisions if d.edits == [rejection.edit]]
        assert own.accepted and not out_of_calls(own), "its own-task test passed"

    held = [r for r in first.rejected if r.stage == "budget" and "went to the edits ranked above it" in r.reasons[0]]
    pending = {ident for ident, _ in pool.pending()}
    assert held and all(pool.identity(r.edit) in pending for r in held), "the rules the calls never reached are held"

    later = []
    for _ in range(2):
        models, _ = capped_models("sim:seed=5", 120)
        pool = EvidencePool.load(path, tmp_path, "sim", docs.fingerprint())
        later.append(consolidate(make_tasks(), docs, models, looks_of(4), pool=pool))
        pool.save()
        if later[-1].accepted:
            break
    second = later[0]
    resumed = [n for n in second.notes if n.startswith("resumed undecided rule")]
    assert all(any(r.edit.content in n for n in resumed) for r in left), "each is resumed first"
    again = [d for d in second.decisions if d.edits and d.edits[0].content in {r.edit.content for r in left}]
    assert again and all(d.statistic.get("own_passed") for d in again), "their own tasks are not judged again"
    assert second.phases.get("dream", 0) == 0, "no new rule is dreamt while they are under test"
    assert later[-1].accepted, "the resumed rules' evidence goes on: a later night accepts"
    assert {r.edit.content for r in left} <= {e.content for e in later[-1].accepted}
    assert not any(r.ban for out in later for r in out.rejected if r.edit.content in {x.edit.content for x in left})


@pytest.mark.parametrize("seed, cap", [(3, 130), (12, 130)])
def test_a_capped_night_keeps_the_calls_its_passed_rules_need_together(
    tmp_path: Path, seed: int, cap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Own-task gates under a cap stop starting new rules once the calls left would no longer pay
    for the passed ones measured together: the night accepts some, where spending everything on
    own-task tests leaves every rule undecided."""
    from skillopt_sleep.gate import phases
    from tests.support.tasks import make_tasks
    from tests.gate.test_call_cap import capped_models

    def night() -> list:
        models, budget = capped_models(f"sim:seed={seed}", cap)
        out = consolidate(make_tasks(), load_documents(tmp_path), models, looks_of(4))
        assert budget.calls_used <= cap
        return out.accepted

    assert night(), "the passed rules are measured together and accepted"
    real = phases.in_turn
    monkeypatch.setattr(phases, "in_turn", lambda gates, limit, room=None: real(gates, limit))
    assert night() == [], "without the reservation the calls run out before any combination"


def test_the_comparison_with_a_rule_alone_draws_more_where_the_drop_may_be() -> None:
    """One task that looks as if it dropped is drawn further alone; a mean that is lower than the
    rule alone has every task drawn further (a drop spread over the kind); else nothing — and
    each only while the ceiling's samples could still show the drop."""
    from skillopt_sleep.gate import stats
    from skillopt_sleep.gate.decide import GateConfig
    from skillopt_sleep.types import GateDecision, TaskDelta

    tasks = ["val-b-0", "val-b-1", "val-b-2"]
    alone = {t: [1.0, 1.0, 0.0] for t in tasks}
    dropped = dict(alone, **{"val-b-1": [0.0, 0.0, 0.0]})
    first, last = 3, 12  # samples a task has now; 12 is the ceiling
    cfg = GateConfig()

    def further(c: tuple, n: int = first, after: dict = dropped) -> list[str]:
        mean, suspect, se = c
        per_task = [TaskDelta(t, 0.0, 0.0, stats.mean(after[t]) - stats.mean(alone[t]), n, n) for t in tasks]
        stat = {
            "mean_gain": mean,
            "mean_se": se,
            "suspect_tasks": suspect,
            "suspect_se": {t: stats.se(alone[t], after[t]) for t in suspect},
            "regression_alpha_per_task": cfg.regression_alpha / len(tasks),
        }
        decision = GateDecision(True, "accept", 0.9, 0.9, per_task, statistic=stat)
        return together._drawn_further(decision, tasks, cfg, n, last)

    def check(mean: float, suspect: list[str], se: float = 0.1) -> tuple:
        return mean, suspect, se

    assert further(check(0.02, ["val-b-1"])) == ["val-b-1"]
    assert further(check(-0.01, ["val-b-1"])) == tasks
    assert further(check(-0.01, [])) == tasks
    assert further(check(0.0, [])) == []
    # at the ceiling a drop well inside its error could not be shown by more samples
    assert further(check(-0.01, [], se=0.1), n=last) == []
    assert further(check(-0.3, [], se=0.1), n=last) == tasks
    # a suspect task whose drop is small beside its error is not drawn at the ceiling's scale
    slight = dict(alone, **{"val-b-1": [1.0, 0.0, 0.0]})
    assert further(check(0.02, ["val-b-1"]), n=first, after=slight) == ["val-b-1"]
    assert further(check(0.02, ["val-b-1"]), n=last, after=slight) == []
