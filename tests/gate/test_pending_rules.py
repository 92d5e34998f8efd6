"""A capped night plans with the draws the provider must answer, and resumes the rules an earlier
night's cap left undecided before it starts new ones (``pending_rules``), without spending more
of the gate's false-accept rate on a rule than an uncapped night would."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from skillopt_sleep.backends import make_backend
from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.budget import Budget
from skillopt_sleep.backends.client import Client, Stats
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.models import Models
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.gate.call_cap import CallCap, out_of_calls
from skillopt_sleep.learning.loop import LoopSettings, Outcome, consolidate
from tests.support.settings import looks_of
from skillopt_sleep.gate.phases import gate_each
from skillopt_sleep.documents.managed_block import apply_edit, load_documents
from skillopt_sleep.store.rule_evidence import EvidencePool
from skillopt_sleep.gate.evaluator import Evaluator
from skillopt_sleep.gate.pending_rules import resumable
from skillopt_sleep.store.refusals import same_rule
from skillopt_sleep.store.score_cache import ScoreCache
from skillopt_sleep.types import Edit, TaskRecord, format_time
from skillopt_sleep.gate.sampling import NightGate

from tests.support.fake_backend import FakeBackend, ok
from tests.support.tasks import make_tasks


class Recording:
    """A backend wrapper that keeps, in order, each request's purpose and its task's split."""

    def __init__(self, inner):
        self.inner = inner
        self.id, self.price = inner.id, getattr(inner, "price", None)
        self.seen: list[tuple[str, str]] = []

    def can_offer_tools(self, names):
        return self.inner.can_offer_tools(names)

    def complete(self, request: Request):
        task = (request.payload or {}).get("task") or {}
        self.seen.append((request.purpose, str(task.get("split", ""))))
        return self.inner.complete(request)


def capped(backend, max_calls: int | None) -> tuple[Models, Budget]:
    limiter, stats, budget = Limiter(4), Stats(), Budget(max_calls=max_calls)
    retry = RetryPolicy(attempts=2, sleep=lambda s: None)
    return Models(
        Client(backend, limiter=limiter, stats=stats, retry=retry, budget=budget),
        Client(backend, limiter=limiter, stats=stats, retry=retry, role="optimizer", budget=budget),
    ), budget


def val_task(tid: str) -> TaskRecord:
    return TaskRecord(
        id=tid,
        intent=f"write {tid}",
        project="/p",
        split="val",
        skill_hint="commit",
        judge={"kind": "rule", "checks": [{"op": "contains", "arg": "Refs:"}]},
    )


def test_a_draw_whose_answers_are_in_the_score_cache_costs_nothing(tmp_path: Path) -> None:
    cache = ScoreCache(tmp_path / "scores.jsonl")
    backend = FakeBackend(lambda r: ok("Refs: ACME-1"))
    tasks = [val_task("a"), val_task("b")]
    docs = load_documents(tmp_path)
    first = Evaluator(Models(Client(backend, stores=[cache]), Client(backend, role="optimizer")), tasks, {}, "val")
    first.ensure(docs, 3)
    drawn = len(backend.requests)
    # a later night: a new client (empty memory) over the same cache
    later = Evaluator(Models(Client(backend, stores=[cache]), Client(backend, role="optimizer")), tasks, {}, "val")
    assert later.cost(docs, 3, ["a", "b"]) == 0
    assert later.cost(docs, 5, ["a", "b"]) == 4, "samples 3 and 4 are not cached: one call each"
    assert cache.hits == 0, "planning is not a use"
    later.ensure(docs, 3)
    assert len(backend.requests) == drawn, "the plan was right: nothing reached the provider"


def test_a_draw_an_interrupted_nights_journal_answers_costs_nothing(tmp_path: Path) -> None:
    from skillopt_sleep.store.call_journal import open_journal

    night_id = "20261123T010203Z-abcd"
    backend = FakeBackend(lambda r: ok("Refs: ACME-1"))
    tasks = [val_task("a"), val_task("b")]
    docs = load_documents(tmp_path / "docs")
    journal = open_journal(tmp_path, night_id)
    Evaluator(Models(Client(backend, stores=[journal]), Client(backend, role="optimizer")), tasks, {}, "val").ensure(
        docs, 2
    )
    again = open_journal(tmp_path, night_id, read_only=True)
    later = Evaluator(Models(Client(backend, stores=[again]), Client(backend, role="optimizer")), tasks, {}, "val")
    assert later.cost(docs, 2, ["a", "b"]) == 0 and later.cost(docs, 3, ["a"]) == 1
    assert again.reused == 0, "planning is not a use"


def _pending_after_one_capped_night(tmp_path: Path) -> tuple[list, EvidencePool, Path]:
    """A capped night that leaves a rule undecided; its pool saved to a file."""
    tasks = make_tasks(per_kind=5)
    docs = load_documents(tmp_path / "docs")
    path = tmp_path / "evidence.json"
    pool = EvidencePool.load(path, tmp_path, "sim", docs.fingerprint())
    models, _ = capped(make_backend("sim:correct=1,harmful=0,seed=3"), 45)
    out = consolidate(tasks, docs, models, LoopSettings(), pool=pool)
    pool.save()
    undecided = [r.edit for r in out.rejected if r.stage == "budget" and pool.nights_tested(r.edit)]
    return undecided, pool, path


def test_a_capped_night_gates_its_pending_rule_before_any_dream(tmp_path: Path) -> None:
    undecided, _, path = _pending_after_one_capped_night(tmp_path)
    assert undecided, "the first night's cap left a rule undecided"
    tasks = make_tasks(per_kind=5)
    docs = load_documents(tmp_path / "docs")
    pool = EvidencePool.load(path, tmp_path, "sim", docs.fingerprint())
    assert pool.pending(), "the saved record is pending"
    recording = Recording(make_backend("sim:correct=1,harmful=0,seed=3"))
    models, budget = capped(recording, 45)
    out = consolidate(tasks, docs, models, LoopSettings(), pool=pool)
    assert budget.calls_used <= 45 and budget.exhausted is None
    splits = [split for purpose, split in recording.seen if purpose == "attempt"]
    assert splits and splits[0] == "val", recording.seen[:5]
    first_train = splits.index("train") if "train" in splits else len(splits)
    assert first_train > 0 and all(s == "val" for s in splits[:first_train])
    assert not any(p in ("reflect", "lookahead") for p, _ in recording.seen[:first_train])
    assert same_rule(out.decisions[0].edits[0], undecided[0]), "the resumed rule was gated first"
    assert any(n.startswith("resumed undecided rule") for n in out.notes), out.notes


def test_a_pending_rule_is_resumed_even_when_the_calls_left_are_too_few_to_learn(tmp_path: Path) -> None:
    undecided, _, path = _pending_after_one_capped_night(tmp_path)
    tasks = make_tasks(per_kind=5)
    docs = load_documents(tmp_path / "docs")
    pool = EvidencePool.load(path, tmp_path, "sim", docs.fingerprint())
    recording = Recording(make_backend("sim:correct=1,harmful=0,seed=3"))
    models, budget = capped(recording, 20)  # below a night's learning (too_small), above one look
    out = consolidate(tasks, docs, models, LoopSettings(), pool=pool)
    assert budget.calls_used > 0, "not refused: the pending rule's gate drew"
    assert all(split == "val" for purpose, split in recording.seen if purpose == "attempt")
    assert any("no new rule" in n for n in out.notes), out.notes
    assert any(n.startswith("resumed undecided rule") for n in out.notes), out.notes


def test_a_pool_record_round_trips_the_whole_rule(tmp_path: Path) -> None:
    path = tmp_path / "evidence.json"
    pool = EvidencePool.load(path, tmp_path, "m", "fp")
    rule = Edit(
        "memory",
        "replace",
        content="When writing a commit message, add Refs.",
        anchor="old rule",
        scope="commit message",
        supersedes="Never add trailers.",
        targets=["c1", "c2"],
        rationale="why",
        evidence=["t1"],
    )
    ident = pool.identity(rule)
    pool.record_samples(ident, "task-key", [1.0, 0.0])
    pool.record_test(rule, False, undecided=True, kinds=["commit"], lower_bound=0.125)
    pool.save()
    again = EvidencePool.load(path, tmp_path, "m", "fp")
    [(got_ident, record)] = again.pending()
    assert got_ident == ident and record.kinds == ["commit"] and record.lower_bound == 0.125
    whole = record.whole()
    assert (whole.target, whole.op, whole.content, whole.anchor, whole.scope, whole.supersedes, whole.targets) == (
        "memory",
        "replace",
        rule.content,
        "old rule",
        "commit message",
        "Never add trailers.",
        ["c1", "c2"],
    )
    assert again.stored(ident, "task-key") == [1.0, 0.0]
    again.record_test(rule, False, val_set="v")  # decided: no longer pending
    assert again.pending() == []


def test_a_pending_rule_comes_along_when_the_documents_change_without_its_samples(tmp_path: Path) -> None:
    """A rule a cap left undecided is not lost when a rule is adopted (the documents change): the
    pool of the new documents has it pending, as a new test — no samples, no looks, its first
    share — unless a newer record decided it, or the new pool already knows it."""
    from datetime import timedelta

    path = tmp_path / "evidence.json"
    old = EvidencePool.load(path, tmp_path, "m", "before")
    pending = Edit("skill", "add", content="When writing a commit message, add Refs.", targets=["c1"])
    decided = Edit("skill", "add", content="When writing a review comment, suggest a fix.")
    for rule in (pending, decided):
        old.record_samples(old.identity(rule), "task-key", [1.0, 1.0, 0.0, 1.0])
        old.record_test(rule, False, undecided=True, kinds=["commit"], lower_bound=0.1, looks=2, share=0.5)
    old.save()
    later = EvidencePool.load(path, tmp_path, "m", "between", now=old.now + timedelta(hours=1))
    later.record_samples(later.identity(decided), "task-key", [0.0] * 4)
    later.record_test(decided, False, val_set="v", kinds=["review"])  # refused against other documents since
    later.save()
    other_model = EvidencePool.load(path, tmp_path, "another model", "after")
    assert other_model.pending() == [], "another target model's rules stay with it"
    new = EvidencePool.load(path, tmp_path, "m", "after", now=old.now + timedelta(hours=2))
    [(ident, record)] = new.pending()
    assert same_rule(record.whole(), pending) and record.whole().targets == ["c1"] and record.kinds == ["commit"]
    assert new.resume_at(pending) is None, "a new test: nothing spent against these documents"
    assert new.stored(ident, "task-key") == [] and new.alpha_share(pending) == 1.0
    again = EvidencePool.load(path, tmp_path, "m", "before", now=old.now + timedelta(hours=2))
    assert again.resume_at(pending) == (2, 0.5), "against its own documents it goes on where it stopped"


def test_an_old_record_without_the_rule_still_loads_and_is_not_resumed(tmp_path: Path) -> None:
    path = tmp_path / "evidence.json"
    pool = EvidencePool.load(path, tmp_path, "m", "fp")
    entry = {
        "project": pool.project,
        "model": "m",
        "base": "fp",
        "identity": "edit:abc",
        "updated": format_time(pool.now),
        "samples": {"k": [1.0, 0.5]},
        "edit": {
            "target": "skill",
            "op": "add",
            "text": "add refs",
            "nights": 2,
            "accepted": False,
            "val_set": "",
            "undecided": 2,
        },
    }
    path.write_text(json.dumps({"version": 1, "records": [entry]}), encoding="utf-8")
    old = EvidencePool.load(path, tmp_path, "m", "fp")
    record = old.edits["edit:abc"]
    assert (record.nights, record.undecided, record.text) == (2, 2, "add refs")
    assert record.whole() is None and old.pending() == []
    assert old.stored("edit:abc", "k") == [1.0, 0.5]


def _neutral(seed: int):
    """Pass or fail at random, the documents change nothing: every rule is neutral."""

    def handler(request: Request):
        digest = hashlib.sha256(f"{seed}|{request.system}|{request.user}|{request.sample}".encode()).digest()
        return ok("Refs: x" if random.Random(digest).random() < 0.5 else "nothing")

    return handler


@pytest.mark.slow  # many capped nights
@pytest.mark.parametrize("cap", [24, 40])
def test_a_neutral_rule_resumed_over_capped_nights_is_one_sequential_test(
    tmp_path: Path, cap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One rule resumed night after night is one test: every look across its nights has its own
    number and the share of its first night, at most as many looks as one uncapped gate can take
    (so it spends no more of the false-accept rate than that gate allows one rule); and it is
    accepted no more often than the gate's nominal rate."""
    from skillopt_sleep.gate import sampling as val_gate

    looks: list[tuple[float, int, int]] = []  # (share, look, looks in the plan) of every decision
    decide = val_gate.gating.decide

    def counting(b, c, cfg, overlap, focus, share, look, **kw):
        looks.append((share, look, cfg.looks))
        return decide(b, c, cfg, overlap, focus, share, look, **kw)

    monkeypatch.setattr(val_gate.gating, "decide", counting)
    tasks = [val_task(f"v{i}") for i in range(4)] + [
        TaskRecord(
            id=f"t{i}",
            intent=f"train {i}",
            project="/p",
            split="train",
            skill_hint="commit",
            judge={"kind": "rule", "checks": [{"op": "contains", "arg": "Refs:"}]},
        )
        for i in range(2)
    ]
    val = [t for t in tasks if t.split == "val"]
    docs = load_documents(tmp_path)
    settings = LoopSettings()
    rule = Edit("skill", "add", content='When writing a commit message, include "Refs:".', evidence=["t0"])
    trials, accepted, resumed_nights = 30, 0, 0
    for trial in range(trials):
        pool = EvidencePool(None, str(tmp_path), "fake", docs.fingerprint())
        looks.clear()
        for night in range(6):
            models, _ = capped(FakeBackend(_neutral(trial * 100 + night)), cap)
            candidates = resumable(pool, docs, tasks, lambda e: False) if night else [(rule, apply_edit(docs, rule))]
            if not candidates:
                break  # decided: no longer resumed
            resumed_nights += bool(night)
            outcome = Outcome(docs)
            gate = NightGate(
                Evaluator(models, val, {}, "val", pool),
                settings,
                docs,
                tasks,
                set(),
                len(candidates),
                CallCap(models.target.budget),
            )
            accepted += bool(gate_each(outcome, gate, candidates, pool, lambda m: None, resumed=bool(night)))
            gate.evaluator.store()
            if not out_of_calls(outcome.decisions[0]):
                break
        numbers = [look for _, look, _ in looks]
        assert numbers == list(range(1, len(numbers) + 1)), numbers
        assert len({share for share, _, _ in looks}) <= 1, looks
        assert all(look <= 2 * plan for _, look, plan in looks), looks
    assert resumed_nights >= trials // 2, "the cap left the rule undecided and later nights resumed it"
    assert accepted <= max(1, round(settings.decide.gain_alpha * trials)), accepted


def test_a_cap_that_fits_one_reading_of_reflection_learns_instead_of_refusing(tmp_path: Path) -> None:
    """A first night whose cap pays for a night's learning with each reflect request read once,
    but not twice, reads it once and learns rather than refusing the night."""
    from skillopt_sleep.gate.call_cap import reserve

    tasks = make_tasks(per_kind=5)
    train = [t for t in tasks if t.split == "train"]
    kinds = len({t.skill_hint for t in train})
    settings = LoopSettings()
    need = len(train) + kinds + 2 * 2 * settings.gate.val_samples
    cap = need + reserve(need)
    twice = need + kinds * (settings.learning.reflect_samples - 1)
    assert settings.learning.reflect_samples > 1 and twice + reserve(twice) > cap
    recording = Recording(make_backend("sim:correct=1,harmful=0,seed=3"))
    models, budget = capped(recording, cap)
    out = consolidate(tasks, load_documents(tmp_path), models, settings)
    assert not any("cannot pay for a night's learning" in n for n in out.notes), out.notes
    assert "call cap: 1 reading of each reflect request instead of 2" in out.notes
    assert out.phases.get("dream") and budget.calls_used <= cap and budget.exhausted is None


@pytest.mark.parametrize("own, others, looks", [(8, (4, 0), 5), (12, (4, 2), 5), (12, (4, 4), 4)])
def test_a_resumed_test_takes_its_other_tasks_on_from_their_pooled_samples(
    tmp_path: Path, own: int, others: tuple[int, int], looks: int
) -> None:
    """An earlier night's cap stopped a rule (after 4 looks) once its own tasks had passed
    (``own`` samples each: a passing look, or the ceiling) and its other val tasks had some
    samples (``others``). Resumed, the own tasks, with nothing new to show, draw nothing and take
    no look; the other tasks a partial night left behind catch up with the rest — no new round
    on top of the samples they have — and are judged in one look. When they all hold the same
    count, the earlier night's last look already judged them: the verdict takes no new look.
    The baseline is drawn again beside them; no candidate sample already pooled is."""
    from skillopt_sleep.store.rule_evidence import task_content_key
    from skillopt_sleep.gate.phases import gate_alone

    rule_text = 'When writing a commit message, always include "Refs:".'

    def handler(request: Request):
        if "commit" in request.user:  # its own kind: the rule always works, without it half the time
            return ok("Refs: 1" if rule_text in request.system or request.sample % 2 else "no")
        return ok("LGTM")  # the other kind: the rule changes nothing

    def task(tid: str, kind: str, split: str = "val") -> TaskRecord:
        arg = "Refs:" if kind == "commit" else "LGTM"
        return TaskRecord(
            id=tid,
            intent=f"write a {kind} {tid}",
            project="/p",
            split=split,
            skill_hint=kind,
            judge={"kind": "rule", "checks": [{"op": "contains", "arg": arg}]},
        )

    tasks = [
        task("c1", "commit"),
        task("c2", "commit"),
        task("r1", "review"),
        task("r2", "review"),
        task("t1", "commit", "train"),
    ]
    val = [t for t in tasks if t.split == "val"]
    docs = load_documents(tmp_path)
    rule = Edit("skill", "add", content=rule_text, evidence=["t1"])
    cand = apply_edit(docs, rule)
    pool = EvidencePool(None, str(tmp_path), "fake", docs.fingerprint())
    ident = pool.identity(rule)
    pooled = {"c1": own, "c2": own, "r1": others[0], "r2": others[1]}
    for t in val:  # the candidate's samples of the earlier nights
        n = pooled[t.id]
        pool.record_samples(ident, task_content_key(t), [1.0] * n, [frozenset()] * n)
    pool.record_test(rule, False, undecided=True, kinds=["commit"], lower_bound=0.3, looks=4, share=1.0)
    backend = FakeBackend(handler)
    models = Models(Client(backend), Client(backend, role="optimizer"))
    night = NightGate(Evaluator(models, val, {}, "val", pool), looks_of(4), docs, tasks, set(), 1)
    decision = gate_alone(night, pool, rule, cand)
    assert decision.accepted, decision.reasons
    assert decision.statistic["look"] == looks
    drawn = [r for r in backend.requests if r.purpose == "attempt"]
    cand_drawn = [r for r in drawn if rule_text in r.system]
    assert len(cand_drawn) == 8 - sum(others), "only the other tasks left behind catch up, to 4"
    assert all(r.sample >= pooled[t] for r in cand_drawn for t in ("r1", "r2") if f"review {t}" in r.user)
    assert len(drawn) - len(cand_drawn) == 2 * own + 2 * 4, "the baseline, to the candidate's counts"


def test_a_resumed_rule_goes_on_over_the_val_tasks_of_earlier_nights(tmp_path: Path) -> None:
    """Tonight's val tasks of a resumed rule's kind are new; the earlier night's val task its test
    drew on (archived, held out) is measured too, from its pooled candidate samples, so the
    evidence builds across tasks; a task that is one of tonight's train tasks never is."""
    from skillopt_sleep.store.rule_evidence import task_content_key

    rule_text = 'When writing a commit message, always include "Refs:".'

    def handler(request: Request):
        if "commit" in request.user:
            return ok("Refs: 1" if rule_text in request.system or request.sample % 2 else "no")
        return ok("LGTM")

    def task(tid: str, kind: str, split: str = "val", what: str = "") -> TaskRecord:
        arg = "Refs:" if kind == "commit" else "LGTM"
        return TaskRecord(
            id=tid,
            intent=f"write a {kind} {what or tid}",
            project="/p",
            split=split,
            skill_hint=kind,
            judge={"kind": "rule", "checks": [{"op": "contains", "arg": arg}]},
        )

    tonight = [task("c1", "commit"), task("r1", "review"), task("r2", "review"), task("t1", "commit", "train")]
    earlier = task("c1", "commit", what="for the parser")  # an earlier night's val task, same id
    again_train = task("c9", "commit", what="train again")  # val then, one of tonight's train tasks now
    tonight.append(replace(again_train, id="t2", split="train"))
    docs = load_documents(tmp_path)
    rule = Edit("skill", "add", content=rule_text, evidence=["t1"])
    pool = EvidencePool(None, str(tmp_path), "fake", docs.fingerprint())
    ident = pool.identity(rule)
    for old in (earlier, again_train):
        pool.record_samples(ident, task_content_key(old), [1.0] * 4, [frozenset()] * 4)
    pool.record_test(rule, False, undecided=True, kinds=["commit"], lower_bound=0.1, looks=1, share=1.0)
    archived = [(task_content_key(t), t) for t in (earlier, again_train)]
    backend = FakeBackend(handler)
    models, _ = capped(backend, 60)
    out = consolidate(tonight, docs, models, LoopSettings(), pool=pool, archived_val=archived)
    assert any("goes on over 1 val task(s) of earlier nights" in n for n in out.notes), out.notes
    resumed = next(d for d in out.decisions if d.edits and same_rule(d.edits[0], rule))
    measured = {d.task_id for d in resumed.per_task}
    assert f"earlier-{task_content_key(earlier)}" in measured and "c1" in measured
    assert f"earlier-{task_content_key(again_train)}" not in measured, "a task that is train tonight stays out"
    cand_on_earlier = [
        r
        for r in backend.requests
        if r.purpose == "attempt" and "for the parser" in r.user and rule_text in r.system and r.sample < 4
    ]
    assert not cand_on_earlier, "its pooled candidate samples are not drawn again"
    assert [r for r in backend.requests if "for the parser" in r.user and rule_text not in r.system], (
        "its baseline is measured beside them"
    )
    assert [t.id for t in out.earlier_val] == [f"earlier-{task_content_key(earlier)}"]
    from skillopt_sleep import night
    from skillopt_sleep.types import NightReport

    report = NightReport(night_id="n", project=str(tmp_path), mode="run", status="staged")
    night._fill(report, out, models)
    shown = report.task_index[f"earlier-{task_content_key(earlier)}"]
    assert shown["split"] == "val" and "for the parser" in shown["excerpt"], "the report can name it"
