"""The gate's sampling on val, for one night's edits (``consolidate`` phases 3 and 4).

An edit is measured on the val tasks it claims to help first, and on every val task only when its
gain there may still hold up; each round draws more samples while the verdict is uncertain, up to
the ceiling, every decision one more look at the gain (``gate.decide.GateConfig.alpha_for``). A capped
night's gate stops where its next draw would not fit (``call_cap``): undecided, never accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from skillopt_sleep.gate import decide as gating
from skillopt_sleep.gate.call_cap import CallCap, undecided
from skillopt_sleep.documents.managed_block import DocumentSet
from skillopt_sleep.gate.evaluator import Evaluator, draw_what_fits, draw_within
from skillopt_sleep.gate.settings import LoopSettings
from skillopt_sleep.types import GateDecision, TaskRecord, kind_of


@dataclass
class NightGate:
    """What the gating phases share."""

    evaluator: Evaluator
    settings: LoopSettings
    base: DocumentSet
    tasks: list[TaskRecord]
    overlap: set[str]
    family: int  # edits tested tonight: they share the false-accept rate
    cap: CallCap = field(default_factory=CallCap)  # a capped night's calls (``call_cap``)

    @cached_property
    def kinds(self) -> dict[str, str]:
        """Each val task's kind (``types.kind_of``): a kind may not fall as a whole (``gate.decide``)."""
        return {t.id: kind_of(t) for t in self.tasks if t.split == "val"}

    def gate(
        self,
        cand: DocumentSet,
        focus: set[str],
        *,
        share: float = 1.0,
        base: DocumentSet | None = None,
        identity: str | None = None,
        own_tasks_only: bool = False,
        targets: list[str] | None = None,
        looks_before: int = 0,
        gain_known: bool = False,
    ) -> GateDecision:
        """``cand`` against ``base`` (default: tonight's documents), on the tasks the edit claims
        to help first: an edit whose gain there does not hold up is refused before the other val
        tasks are measured for it (they could only add reasons to refuse); one that may still pass
        is then measured on every val task (regressions, the all-task mean). A pooled
        ``identity`` starts from its earlier samples and adds ``val_samples`` .. the ceiling new
        ones.

        Each decision sees exactly the samples this gate asked for: the shared baseline may hold
        more (drawn for another candidate in parallel), and using them would make every verdict,
        and the calls that follow from it, depend on thread timing.

        ``own_tasks_only``: the gain on the focus tasks is the whole question (leave-one-out
        inside a combination, whose regressions and all-task mean the combination's own gate
        measures against tonight's documents).

        ``looks_before``: a pooled rule whose test an earlier night's cap stopped after that many
        looks goes on as the same test (``resumed``).

        ``gain_known``: the night's rules put together, each of which showed its gain on its own
        tasks alone and is compared with itself alone there (``together.worse_on``): every val
        task is measured at once, for what the combination does to them (regressions, a kind's
        fall, the all-task mean), without testing that gain again."""
        s, ev = self.settings, self.evaluator
        base = base or self.base
        everything = list(ev.tasks)
        first = ([] if gain_known else [tid for tid in everything if tid in focus]) or everything
        budget = s.gate.max_val_samples * max(1, -(-s.min_focus_tasks // len(first)))
        sampling = Sampling(
            cfg=replace(s.decide, looks=-(-budget // s.gate.val_samples)),
            base=base,
            cand=cand,
            focus=focus,
            share=share / max(1, self.family),
            identity=identity,
            start=ev.count(cand, identity, first) if identity is not None else 0,
            budget=budget,
            targets=list(targets or ()) if s.gate.targeted_gain else [],
            gain_known=gain_known,
        )
        if looks_before:
            resumed(sampling, share, looks_before)
            if sampling.look >= sampling.most:
                return spent(sampling.look)
        then_all = len(first) < len(everything) and not own_tasks_only
        decision = self._sample(sampling, first, then_all)
        if sampling.out_of_calls:
            return undecided(decision, self.cap.limit)
        assert decision is not None  # only a capped night's gate can stop before its first look
        if len(first) < len(everything) and not gain_refused(decision) and not own_tasks_only:
            decision = self._sample(sampling, everything) or decision
            if sampling.out_of_calls:
                return undecided(decision, self.cap.limit)
        elif len(first) < len(everything):
            decision.statistic["not_measured"] = sorted(set(everything) - set(first))
        decision.statistic["samples_per_task"] = {d.task_id: d.n_candidate for d in decision.per_task}
        return decision

    def _sample(self, g: Sampling, task_ids: list[str], then_all: bool = False) -> GateDecision | None:
        """Decide on ``task_ids``, drawing more samples while the verdict is uncertain, up to the
        ceiling; every decision is one more look at the gain (``GateConfig.alpha_for``). A capped
        night stops where the next draw would not fit (``out_of_calls``; ``None``: no look yet).
        ``then_all``: every val task's round follows this one when it may still pass."""
        ev, step = self.evaluator, self.settings.gate.val_samples
        fresh = [tid for tid in task_ids if tid not in g.wanted]
        # the round starts from the pooled samples its new tasks already have (the other val
        # tasks of a re-tested edit may have none: its earlier nights stopped at its own tasks)
        first_round = not g.wanted  # no draw of this gate yet
        start = g.start if first_round else (ev.count(g.cand, g.identity, fresh) if g.identity and fresh else 0)
        n, ceiling = start + step, start + g.budget
        if g.looks_before:  # a resumed test keeps the one plan of its first night: no new ceiling
            ceiling = max(g.budget, start)
            n = min(ceiling, n)
        if g.wanted and self.settings.gate.val_others_samples:
            # the other val tasks join with a first look of their own; the gate draws more while
            # the all-task mean or a task's drop is uncertain (``decide.wants_more``)
            n = min(ceiling, start + self.settings.gate.val_others_samples)
        elif g.wanted:
            # the other val tasks join with as many samples as the edit's own tasks reached
            n = min(ceiling, max(n, max(g.wanted.values()) - g.start + start))
        judged = False
        if g.wanted and g.looks_before and start:
            # A resumed test's other tasks rejoin with the samples its earlier nights drew (their
            # baselines mostly come back from the score cache), not a new round on top of them:
            # the ones a partial night left behind catch up, and more are drawn only where the
            # next look asks (``wants_more``). When they all hold the same count, an earlier
            # night's look judged them at it (a round that did not fit takes no look): judging
            # them again is no new look, so the looks left go to the samples still to come.
            top = ev.most(g.cand, g.identity, fresh)
            n = min(n, max(top, step))
            judged = start == top >= step
        decision: GateDecision | None = None
        if first_round and not g.looks_before and g.start >= step:
            # Pooled evidence first: when it already settles the verdict (accepted, futile, or
            # harmful), an unchanged re-proposal costs no new draws.
            drawn = self._draw(g, g.start, fresh)
            if drawn is None:
                return None
            decision = self._decide(g, *drawn)
            if decision.accepted or gating.futile(decision, g.cfg) or gating.significant_harm(decision):
                return decision
        if first_round and g.looks_before and then_all and g.start >= step:
            # A resumed test whose own tasks already passed on their pooled samples (or reached
            # its ceiling) goes on to every task's round without drawing more of them. That
            # verdict is on evidence an earlier look judged and only says whether the round
            # follows: it takes no look (the looks left go to the samples still to come).
            drawn = self._draw(g, g.start, fresh)
            if drawn is None:
                return None
            decision = self._decide(g, *drawn, look=False)
            if decision.accepted or g.start >= ceiling:
                return decision
        if g.look >= g.most:
            return decision
        drawn = self._draw(g, n, fresh)
        if drawn is None:
            return decision
        decision = self._decide(g, *drawn, look=not judged)
        while n < ceiling and g.look < g.most:
            more = gating.wants_more(decision, g.cfg, ceiling)
            if not more:
                break
            n = min(ceiling, n + step)
            drawn = self._draw(g, n, [tid for tid in more if g.wanted[tid] < n])
            if drawn is None:
                break
            decision = self._decide(g, *drawn)
        return decision

    def _draw(self, g: Sampling, n: int, task_ids: list[str]) -> tuple[dict, dict] | None:
        """The gate's samples once each of ``task_ids`` has ``n`` under both document sets;
        ``None`` when a capped night cannot afford them (``g.out_of_calls``; what was drawn stays
        with the evaluator, outside this gate's samples)."""
        sets = [(g.base, None), (g.cand, g.identity)]
        drawn = draw_within(self.cap, self.evaluator, sets, n, task_ids)
        if drawn is None:
            g.out_of_calls = True
            draw_what_fits(self.cap, self.evaluator, sets, n, task_ids)
            return None
        g.wanted.update({tid: max(n, g.wanted.get(tid, 0)) for tid in task_ids})
        return drawn[0], drawn[1]

    def _decide(
        self, g: Sampling, b: dict[str, list[float | None]], c: dict[str, list[float | None]], look: bool = True
    ) -> GateDecision:
        """The verdict on the samples this gate asked for; ``look``: it counts as one more look
        (``False``: the same evidence an earlier look judged, at that look's rate)."""
        g.look += look
        targeted = None
        if g.targets:
            ev = self.evaluator
            wanted = {tid: n for tid, n in g.wanted.items() if tid in g.focus}
            targeted = (
                first_draws(ev.targeted(g.base, g.targets), wanted),
                first_draws(ev.targeted(g.cand, g.targets), wanted),
            )
        return gating.decide(
            first_draws(b, g.wanted),
            first_draws(c, g.wanted),
            g.cfg,
            self.overlap,
            g.focus,
            g.share,
            g.look,
            targeted=targeted,
            kinds=self.kinds,
            gain_known=g.gain_known,
        )


@dataclass
class Sampling:
    """One gate's state across its focus-first and all-task rounds."""

    cfg: gating.GateConfig
    base: DocumentSet
    cand: DocumentSet
    focus: set[str]
    share: float
    identity: str | None
    start: int  # pooled samples the candidate already had
    budget: int  # new samples per task at most
    wanted: dict[str, int] = field(default_factory=dict)  # samples per task this gate uses
    look: int = 0
    targets: list[str] = field(default_factory=list)  # the checks the edit fixes (``Edit.targets``)
    gain_known: bool = False  # the gain was shown before; only what it does to every task is asked
    out_of_calls: bool = False  # a capped night could not afford the next draw
    looks_before: int = 0  # looks an earlier night's cap stopped this test after (``resumed``)
    most: int = 1 << 30  # looks this test may take in all (``resumed``)


def resumed(g: Sampling, share: float, looks_before: int) -> None:
    """A test an earlier night's cap stopped, resumed as the same sequential test: its looks are
    numbered on from that night's (the false-accept rate each look spends, ``GateConfig.part``,
    follows the one plan), at the share its first night gave it (``share``, already its part of
    that night's family), drawing toward that plan's ceiling rather than a new one, and the
    pooled evidence it was last judged on is not judged again as a new look. It may take as
    many looks in all as one uncapped gate can (its own tasks' round, then every task's, each to
    ``looks``); past them it has spent its rate (``spent``)."""
    g.share = share
    g.look = g.looks_before = looks_before
    g.most = 2 * max(1, g.cfg.looks)


def spent(looks: int) -> GateDecision:
    """The verdict on a resumed test with no look left."""
    return GateDecision(
        False,
        "reject",
        0.0,
        0.0,
        statistic={"look": looks},
        reasons=[
            f"refused: its test took {looks} looks over its nights, every one the gate allows one rule, "
            "without showing a gain"
        ],
    )


def gain_refused(decision: GateDecision) -> bool:
    """Refused on the gain alone (or skipped): more val tasks cannot change the verdict."""
    if decision.action == "skip":
        return True
    return any(r.startswith("gain ") for r in decision.reasons)


def first_draws(scores: dict[str, list[float | None]], wanted: dict[str, int]) -> dict[str, list[float]]:
    """The scores of each task's first ``wanted`` draws; a task none of whose draws could be
    scored is left out of the comparison."""
    first = {
        tid: [x for x in samples[: wanted[tid]] if x is not None] for tid, samples in scores.items() if tid in wanted
    }
    return {tid: xs for tid, xs in first.items() if xs}
