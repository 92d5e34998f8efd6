"""The learning loop (learning/loop.py ``consolidate``): proposals gated on val, the test split
measured but never gating, and, in a scripted world where the test decides what each rule does,
which edits are kept, banned, settled or left waiting. Also whole-skill edits: an edit of a
hand-written line that helps is kept, one that breaks another kind is refused and banned, and a
skill not opted in is never edited (the edit is refused before any val task is replayed for it)."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from skillopt_sleep.config import GateSettings, LearningSettings
from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.base import Completion, ProviderError, Request
from skillopt_sleep.backends.client import Client, Stats
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.models import Models
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.learning.loop import LoopSettings, consolidate
from tests.support.settings import looks_of
from skillopt_sleep.documents.managed_block import load_documents
from skillopt_sleep.store.rule_evidence import EvidencePool
from skillopt_sleep.types import TaskRecord

from tests.support.tasks import make_tasks


def models_for(spec: str) -> Models:
    backend = make_backend(spec)
    limiter, stats = Limiter(4), Stats()
    retry = RetryPolicy(attempts=2, sleep=lambda s: None)
    return Models(
        Client(backend, limiter=limiter, stats=stats, retry=retry),
        Client(backend, limiter=limiter, stats=stats, retry=retry, role="optimizer"),
    )


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
    (tmp_path / "CLAUDE.md").write_text(
        '- Release notes always have a "## Fixes" section and a '
        '"## Breaking changes" section.\n- Never leave "TODO" in text.\n'
    )
    docs = load_documents(tmp_path)
    out = consolidate(tasks, docs, models_for("sim:correct=0,harmful=1,seed=2"), LoopSettings())
    assert out.rejected, "the optimizer proposed harmful rules"
    assert out.accepted == []
    assert out.documents == docs
    assert out.candidate == out.baseline


def test_k_samples_are_independent_draws(tmp_path: Path) -> None:
    tasks = make_tasks()
    docs = load_documents(tmp_path)
    out = consolidate(
        tasks,
        docs,
        models_for("sim:correct=0,harmful=0,seed=3"),
        LoopSettings(learning=LearningSettings(k=6, k_agree=0)),
    )
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


def test_a_combination_is_still_gated_on_every_val_task(tmp_path: Path) -> None:
    out = consolidate(
        make_tasks(), load_documents(tmp_path), models_for("sim:correct=1,harmful=0,seed=1"), LoopSettings()
    )
    assert len(out.accepted) > 1, "seed 1 of a correct optimizer: several useful rules"
    [combo] = [d for d in out.decisions if len(d.edits) > 1]
    assert combo.accepted and combo.edits == out.accepted
    assert {d.task_id for d in combo.per_task} == {t.id for t in make_tasks() if t.split == "val"}


# -- a scripted world: the test decides what each rule does ---------------------------------------

PASS = "PASS-TOKEN"
HELPS_A = "Answers about kind a follow the a checklist"
ALSO_HELPS_A = "For kind a, always run through the a checklist first"
BREAKS_B = "Keep every kind b answer to one terse line"
NOTHING = "Mention the widget catalogue where it fits"
WEAK = "Kind a answers sometimes restate the request first"


class World:
    """Kind ``a`` passes only with a rule naming its checklist; kind ``b`` passes unless a rule
    says "terse"; ``noise`` flips that many answers in 100 (seeded per request)."""

    id = "world"

    def __init__(self, proposals: list[str], noise: int = 0, seed: int = 0):
        self.proposals, self.noise, self.seed = proposals, noise, seed

    def complete(self, request: Request) -> Completion:
        if request.purpose == "reflect":
            kind = {c: "b" if "kind b" in c else "a" for c in self.proposals}  # the kind it claims to help
            edits = [
                {"target": "skill", "op": "add", "content": c, "evidence": [f"train-{kind[c]}-0", f"train-{kind[c]}-1"]}
                for c in self.proposals
            ]
            return Completion(text=json.dumps({"edits": edits}), model="world")
        if request.purpose == "rank":  # as proposed
            return Completion(
                text=json.dumps({"order": list(range(1, len(request.payload["candidates"]) + 1))}), model="world"
            )
        if request.purpose == "refine":  # it cannot say how to keep a rule without its breakage
            return Completion(text=json.dumps({"content": request.payload["rule"]}), model="world")
        if request.purpose == "quality":  # nothing beside the checks: every answer does the task as well
            return Completion(text=json.dumps({"as_good": True, "reason": "world"}), model="world")
        task, docs = request.payload["task"], request.payload["documents"]
        rng = random.Random(f"{self.seed}|{task['id']}|{request.sample}|{docs}")
        ok = ("checklist" in docs) if task["skill_hint"] == "a" else ("terse" not in docs)
        if task["skill_hint"] == "a" and "sometimes" in docs:
            ok = rng.randrange(100) < 35
        if rng.randrange(100) < self.noise:
            ok = not ok
        return Completion(text=f"Done. {PASS}" if ok else "Done.", model="world")


def world_tasks(n_val: int = 4) -> list[TaskRecord]:
    judge = {"kind": "rule", "checks": [{"op": "contains", "arg": PASS}]}
    tasks = [
        TaskRecord(id=f"val-{k}-{i}", intent=f"val {k} {i}", judge=judge, skill_hint=k, split="val")
        for i in range(n_val // 2)
        for k in "ab"
    ]
    tasks += [
        TaskRecord(id=f"train-{k}-{i}", intent=f"train {k} {i}", judge=judge, skill_hint=k, split="train")
        for i in range(2)
        for k in "ab"
    ]
    return tasks


def world_models(world: World) -> Models:
    limiter, stats = Limiter(4), Stats()
    return Models(
        Client(world, limiter=limiter, stats=stats), Client(world, limiter=limiter, stats=stats, role="optimizer")
    )


def test_a_verbatim_copy_of_a_train_task_under_a_new_id_cannot_validate(tmp_path: Path) -> None:
    tasks = world_tasks()
    copy = TaskRecord.from_dict(dict(tasks[-1].to_dict(), id="val-copy", split="val"))
    copy.intent = "  " + copy.intent.upper() + " "  # case and spacing do not make it new
    out = consolidate(tasks + [copy], load_documents(tmp_path), world_models(World([HELPS_A])), LoopSettings())
    assert out.accepted == []
    assert any("val overlaps train (val-copy)" in r for rej in out.rejected for r in rej.reasons)


def test_of_two_edits_doing_the_same_job_only_one_is_kept(tmp_path: Path) -> None:
    out = consolidate(
        world_tasks(), load_documents(tmp_path), world_models(World([HELPS_A, ALSO_HELPS_A])), LoopSettings()
    )
    assert len(out.accepted) == 1
    [extra] = [r for r in out.rejected if r.stage == "combination"]
    assert "adds nothing beside the other accepted edits" in extra.reasons[0]
    assert not extra.ban


def test_a_harmful_edit_is_banned_and_a_useless_one_is_not(tmp_path: Path) -> None:
    out = consolidate(
        world_tasks(6),
        load_documents(tmp_path),
        world_models(World([BREAKS_B, NOTHING])),
        LoopSettings(learning=LearningSettings(screen_pool=1)),
    )  # gated, not dropped for fixing nothing on train
    assert out.accepted == []
    by_rule = {r.edit.content: r for r in out.rejected}
    assert by_rule[BREAKS_B].ban and by_rule[BREAKS_B].stage == "gate"
    assert not by_rule[NOTHING].ban


def test_a_re_proposed_edit_that_never_shows_a_gain_is_settled(tmp_path: Path) -> None:
    docs = load_documents(tmp_path)
    path = tmp_path / "evidence.json"
    for night_no in range(5):
        pool = EvidencePool.load(path, tmp_path, "world", docs.fingerprint(), max_nights=4)
        wording = NOTHING if night_no % 2 == 0 else NOTHING.lower() + "."  # a rewording is the same edit
        # a new pair of val tasks each night: something new to test it on
        out = consolidate(
            world_tasks(4 + 2 * night_no),
            docs,
            world_models(World([wording], noise=30, seed=night_no)),
            LoopSettings(learning=LearningSettings(screen_pool=1)),
            pool=pool,
        )
        pool.save()
        decisions = [d for d in out.decisions if d.edits]
        if night_no < 4:
            [decision] = decisions
            assert not decision.accepted
            assert decision.statistic["alpha_share"] == pytest.approx(0.5**night_no)
        else:
            assert decisions == [], "tested on four nights without showing a gain: not offered again"
            assert any(r.stage == "guardrail" for r in out.rejected)


def test_a_refused_edit_is_not_re_tested_on_the_same_val_tasks(tmp_path: Path) -> None:
    docs = load_documents(tmp_path)
    path = tmp_path / "evidence.json"

    def night(seed: int, n_val: int, wording: str = WEAK):
        pool = EvidencePool.load(path, tmp_path, "world", docs.fingerprint())
        out = consolidate(
            world_tasks(n_val), docs, world_models(World([wording], noise=10, seed=seed)), LoopSettings(), pool=pool
        )
        pool.save()
        return out

    first = night(0, 4)
    [decision] = [d for d in first.decisions if d.edits]
    assert not decision.accepted, "a weak rule is not proven on one night of four val tasks"
    again = night(1, 4, WEAK.lower() + ".")  # fresh draws would differ; a rewording is the same edit
    assert [d for d in again.decisions if d.edits] == []
    [held] = [r for r in again.rejected if r.stage == "unchanged"]
    assert not held.ban and "not re-tested" in held.reasons[0]
    assert again.documents == docs
    n_val = sum(t.split == "val" for t in world_tasks(4))
    assert again.phases["val"] == LoopSettings().gate.val_samples * n_val, "tonight's documents only, no candidate"
    changed = night(2, 6)
    [retest] = [d for d in changed.decisions if d.edits]
    assert retest.statistic["alpha_share"] == pytest.approx(0.5), "a new val task opens a re-test"


def test_a_re_proposed_edit_with_a_promising_gain_is_accepted_once_new_val_tasks_come(tmp_path: Path) -> None:
    docs = load_documents(tmp_path)
    path = tmp_path / "evidence.json"
    seen = []
    for night_no in range(4):
        pool = EvidencePool.load(path, tmp_path, "world", docs.fingerprint(), max_nights=4)
        out = consolidate(
            world_tasks(4 + 2 * night_no),
            docs,
            world_models(World([WEAK], noise=10, seed=night_no)),
            LoopSettings(learning=LearningSettings(screen_pool=1)),
            pool=pool,
        )
        pool.save()
        [decision] = [d for d in out.decisions if d.edits]
        seen.append(max(decision.statistic["samples_per_task"].values()))
        if decision.accepted:
            break
    assert decision.accepted and len(seen) > 1, seen


def test_an_edit_is_gated_on_the_val_tasks_of_its_evidences_kind_not_its_whole_skill() -> None:
    from skillopt_sleep.learning.loop import focus_for
    from skillopt_sleep.types import Edit

    def task(tid: str, kind: str, split: str) -> TaskRecord:
        return TaskRecord(
            id=tid, intent=f"Write the {kind} for {tid}.", kind=kind, skill_hint="git-writing", split=split
        )

    tasks = [
        task(f"{k}-{s}-{i}", k, s)
        for k in ("commit message", "changelog entry")
        for s in ("train", "val")
        for i in range(2)
    ]
    commit = Edit(
        target="skill",
        op="add",
        content="When writing a commit message, end with Refs.",
        evidence=["commit message-train-0", "commit message-train-1"],
    )
    assert focus_for([commit], tasks) == {"commit message-val-0", "commit message-val-1"}
    both = Edit(
        target="memory", op="add", content="Be brief.", evidence=["commit message-train-0", "changelog entry-train-1"]
    )
    assert focus_for([both], tasks) == {t.id for t in tasks if t.split == "val"}
    hinted = [TaskRecord(id=t.id, intent=t.intent, skill_hint=t.skill_hint, split=t.split) for t in tasks]
    assert focus_for([commit], hinted) == {t.id for t in hinted if t.split == "val"}, "no kinds: the skill hint groups"


TRADE_OFF = "Answers about kind a follow the a checklist; keep kind b terse"


@pytest.mark.parametrize("others", [2, 4])
def test_the_other_val_tasks_start_with_a_first_look_and_grow_only_when_the_gate_asks(
    tmp_path: Path, others: int
) -> None:
    """The edit's own (kind a) tasks need 8 samples to show a noisy gain (under a spending plan
    that keeps the first look strict); the kind b tasks it does not touch stay at ``others``
    unless one looks like it dropped, and grow (toward the ceiling of 12) only while more
    samples could still show that drop. 0: as many as the own tasks."""
    four = looks_of(4)
    strict_first = replace(four.decide, spending=3.0)
    grown = 0
    for seed in range(1, 6):
        out = consolidate(
            world_tasks(6),
            load_documents(tmp_path),
            world_models(World([HELPS_A], noise=25, seed=seed)),
            replace(four, gate=replace(four.gate, val_others_samples=others), decide=strict_first),
        )
        [decision] = out.decisions
        spt = decision.statistic["samples_per_task"]
        assert decision.accepted and all(spt[f"val-a-{i}"] == 8 for i in range(3)), spt
        assert all(others <= spt[f"val-b-{i}"] <= 12 for i in range(3)), spt
        grown += sum(spt[f"val-b-{i}"] > others for i in range(3))
        matched = consolidate(
            world_tasks(6),
            load_documents(tmp_path),
            world_models(World([HELPS_A], noise=25, seed=seed)),
            replace(four, gate=replace(four.gate, val_others_samples=0), decide=strict_first),
        )
        assert all(n >= 8 for n in matched.decisions[0].statistic["samples_per_task"].values())
    assert grown < 15, "most kind b tasks stay at their first look"


@pytest.mark.parametrize("others", [0, 2, 4])
def test_a_trade_off_is_refused_however_few_samples_the_other_tasks_start_with(tmp_path: Path, others: int) -> None:
    for seed in range(1, 4):
        out = consolidate(
            world_tasks(6),
            load_documents(tmp_path),
            world_models(World([TRADE_OFF], noise=10, seed=seed)),
            LoopSettings(gate=GateSettings(val_others_samples=others)),
        )
        assert out.accepted == [], out.decisions[0].reasons


class TwoKinds(World):
    """Kind ``a`` passes only with the a checklist, kind ``b`` only with the b checklist."""

    def complete(self, request: Request) -> Completion:
        if request.purpose != "attempt":
            return super().complete(request)
        task, docs = request.payload["task"], request.payload["documents"]
        ok = f"{task['skill_hint']} checklist" in docs
        return Completion(text=f"Done. {PASS}" if ok else "Done.", model="world")


HELPS_B = "Answers about kind b follow the b checklist"


@pytest.mark.parametrize("proposals, leave_one_out", [([HELPS_A, HELPS_B], 0), ([HELPS_A, ALSO_HELPS_A], 2)])
def test_only_edits_claiming_the_same_tasks_must_show_what_each_adds_beside_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, proposals: list[str], leave_one_out: int
) -> None:
    from skillopt_sleep.learning import loop

    calls = []
    gate = loop.NightGate.gate

    def spy(self, cand, focus, **kw):
        calls.append(kw.get("base") is not None)  # a leave-one-out test: against the others without it
        return gate(self, cand, focus, **kw)

    monkeypatch.setattr(loop.NightGate, "gate", spy)
    out = consolidate(world_tasks(), load_documents(tmp_path), world_models(TwoKinds(proposals)), LoopSettings())
    assert sum(calls) == leave_one_out
    assert len(out.accepted) == (2 if leave_one_out == 0 else 1)


def test_edits_that_passed_alone_but_do_not_fit_the_rule_budget_together_wait(tmp_path: Path) -> None:
    docs = load_documents(tmp_path, max_rules=1)
    out = consolidate(world_tasks(), docs, world_models(TwoKinds([HELPS_A, HELPS_B])), LoopSettings())
    assert len(out.accepted) == 1 and len(out.documents.skill.rules()) == 1
    [waits] = [r for r in out.rejected if r.stage == "combination"]
    assert "no room beside the other accepted edits" in waits.reasons[0] and "budget of 1 rules" in waits.reasons[0]
    assert not waits.ban


def test_an_edit_that_fixed_nothing_on_its_own_train_tasks_yields_its_slot(tmp_path: Path) -> None:
    docs = load_documents(tmp_path)
    # proposed (and so ranked) first, but one slot tonight: the rule that fixed something takes it
    out = consolidate(
        world_tasks(6),
        docs,
        world_models(World([NOTHING, HELPS_A])),
        LoopSettings(learning=LearningSettings(max_edits=1)),
    )
    assert [e.content for e in out.accepted] == [HELPS_A]
    [dropped] = [r for r in out.rejected if r.edit.content == NOTHING]
    assert dropped.stage == "lookahead" and not dropped.ban and "fixed nothing" in dropped.reasons[0]
    assert all(NOTHING not in e.content for d in out.decisions for e in d.edits), "no val draw for it"
    [kept] = out.accepted
    assert kept.targets, "what it fixed on its train tasks is what the gate tested"
    first = consolidate(
        world_tasks(6),
        docs,
        world_models(World([NOTHING, HELPS_A])),
        LoopSettings(learning=LearningSettings(max_edits=1, screen_pool=1)),
    )
    assert [e.content for d in first.decisions for e in d.edits] == [NOTHING], "screen_pool 1: the best ranked"
    room = consolidate(world_tasks(6), docs, world_models(World([NOTHING, HELPS_A])), LoopSettings())
    assert any(e.content == NOTHING for d in room.decisions for e in d.edits), "a slot left: it is gated, not vetoed"
    assert [e.content for e in room.accepted] == [HELPS_A]


def test_the_gain_is_tested_on_the_checks_an_edit_fixes_unless_turned_off(tmp_path: Path) -> None:
    docs = load_documents(tmp_path)
    on = consolidate(world_tasks(6), docs, world_models(World([HELPS_A])), LoopSettings())
    off = consolidate(
        world_tasks(6), docs, world_models(World([HELPS_A])), LoopSettings(gate=GateSettings(targeted_gain=False))
    )
    assert [d.statistic["gain_of"] for d in on.decisions] == ["the checks it fixes"]
    assert [d.statistic["gain_of"] for d in off.decisions] == ["the score"]
    assert on.accepted and off.accepted


# -- whole-skill edits go through the same gate as rules -----------------------------------------

LINE_PASS = "ALL-GOOD"
FORBID = "- Never use a checklist."
NEEDED = "- Answer kind b politely."
SKILL = f"---\nname: skillopt-sleep-learned\ndescription: d\n---\n# Work\n\n{FORBID}\n{NEEDED}\n"
HELPS = {
    "target": "skill",
    "op": "replace_line",
    "anchor": FORBID,
    "content": "Use the checklist for kind a.",
    "evidence": ["train-a-0", "train-a-1"],
}
HURTS = {"target": "skill", "op": "delete_line", "anchor": NEEDED, "evidence": ["train-b-0"]}


class LineWorld:
    """Kind ``a`` passes unless the documents forbid checklists; kind ``b`` passes only while they
    ask for politeness. The optimizer proposes ``edits``; the target sees only the documents."""

    id = "line-world"

    def __init__(self, edits: list[dict]):
        self.edits = edits
        self.reflect_requests: list[Request] = []
        self.target_requests: list[Request] = []

    def complete(self, request: Request) -> Completion:
        if request.purpose == "reflect":
            self.reflect_requests.append(request)
            return Completion(text=json.dumps({"edits": self.edits}), model="world")
        self.target_requests.append(request)
        task, docs = request.payload["task"], request.payload["documents"]
        ok = ("Never use a checklist" not in docs) if task["skill_hint"] == "a" else ("politely" in docs)
        return Completion(text=f"Done. {LINE_PASS}" if ok else "Done.", model="world")


def tasks() -> list[TaskRecord]:
    judge = {"kind": "rule", "checks": [{"op": "contains", "arg": LINE_PASS}]}
    out = [
        TaskRecord(id=f"val-{k}-{i}", intent=f"val {k} {i}", judge=judge, skill_hint=k, split="val")
        for i in range(3)
        for k in "ab"
    ]
    return out + [
        TaskRecord(id=f"train-{k}-{i}", intent=f"train {k} {i}", judge=judge, skill_hint=k, split="train")
        for i in range(2)
        for k in "ab"
    ]


def run(tmp_path: Path, edits: list[dict], whole: bool):
    skill = tmp_path / ".claude" / "skills" / "skillopt-sleep-learned" / "SKILL.md"
    skill.parent.mkdir(parents=True, exist_ok=True)
    skill.write_text(SKILL, encoding="utf-8")
    world = LineWorld(edits)
    limiter, stats = Limiter(4), Stats()
    models = Models(
        Client(world, limiter=limiter, stats=stats), Client(world, limiter=limiter, stats=stats, role="optimizer")
    )
    docs = load_documents(tmp_path, "claude", whole_skill=whole)
    return consolidate(tasks(), docs, models, LoopSettings()), world


def test_a_helpful_line_edit_is_kept_and_a_harmful_one_is_refused_and_banned(tmp_path: Path) -> None:
    out, world = run(tmp_path, [HELPS, HURTS], whole=True)
    assert [e.op for e in out.accepted] == ["replace_line"]
    assert out.candidate > out.baseline
    text = out.documents.skill.text
    assert "Never use a checklist" not in text and "- Use the checklist for kind a." in text and NEEDED in text
    [refused] = [r for r in out.rejected if r.edit.op == "delete_line"]
    assert refused.ban and refused.stage == "gate"
    assert FORBID in world.reflect_requests[0].user  # the optimizer saw the hand-written line


def test_a_skill_not_opted_in_is_never_edited(tmp_path: Path) -> None:
    out, world = run(tmp_path, [HELPS], whole=False)
    assert out.accepted == [] and out.documents.skill.text == SKILL
    [refused] = out.rejected
    assert "whole-skill editing is off" in " ".join(refused.reasons)
    assert not refused.ban
