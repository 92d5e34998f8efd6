"""A night under a call cap (``max_calls``): the learning loop plans its phases to fit.

The budget's check before every call (``backends.budget``) is only the backstop that ends a night
which would overspend; a capped night asks ``left`` before each phase and before each of the
gate's draws, so that it does not reach it:

  * most calls go to the gate: one rule's verdict takes some 100-150 val calls (its kind's tasks
    to 8-12 samples under both document sets, then the other val tasks as far), so the train
    tasks get at most a fifth of the calls left (fewer samples each, at least two) and the
    candidate rules' replays on them (``lookahead``) a sixth of what is left after that;
  * no val task is measured ahead of the gate: each gate draws what it needs, and a draw whose
    answers the client already holds (this night's memory, the score cache, the journal) costs
    nothing in the plan; a round that does not fit draws the tasks that do, for a later night;
  * edits are gated one at a time, best ranked first, each drawing only while its next look fits;
    one still undecided when the calls run out is refused for tonight without a ban (stage
    ``budget``), its pooled samples kept (``rule_evidence``), and resumed first on a later night,
    before that night dreams (``pending_rules``); the edits ranked below it are not started but
    held in the pool (no look, nothing spent) and resumed with it, so a night's proposals are not
    dreamt and ranked again;
  * several edits are gated on their own tasks first (one at a time) and then measured together
    (``gate.together``); those that passed on their own tasks when the calls ran out before the
    combination's verdict are undecided, resumed first on a later night without their own tasks
    judged again, and the nights go to the resumed rules alone until they are decided; the test
    split is measured only when it fits.

An edit is never accepted on less evidence than the uncapped gate asks for: running out of calls
can only leave it undecided, never pass it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from skillopt_sleep.backends.budget import Budget
from skillopt_sleep.backends.models import Models
from skillopt_sleep.gate.settings import LoopSettings
from skillopt_sleep.types import GateDecision

OUT_OF_CALLS = "out_of_calls"  # GateDecision.statistic key: the gate stopped for the cap
DREAM_SHARE = 1 / 5  # of the calls left when the night starts learning
RESERVE = 0.1  # of the least a learning night needs, kept for repairs outside the gate (``too_small``)
LOOKAHEAD_SHARE = 1 / 6  # of the calls left after dreaming


@dataclass
class CallCap:
    budget: Budget | None = None

    @classmethod
    def of(cls, models: Models) -> CallCap:
        return cls(getattr(models.target, "budget", None))

    @property
    def capped(self) -> bool:
        return self.budget is not None and self.budget.max_calls is not None

    @property
    def limit(self) -> int | None:
        return self.budget.max_calls if self.budget is not None else None

    def left(self) -> int | None:
        """Calls the night may still make (``None``: uncapped)."""
        return self.budget.calls_left() if self.budget is not None else None

    def afford(self, cost: int) -> bool:
        """``cost`` calls fit in what is left. A draw that then takes more (a repair, a cut-off
        reply asked again) and meets the backstop is caught where it was drawn
        (``evaluator.draw_within``): its edit is left undecided, the night goes on."""
        left = self.left()
        return left is None or cost <= left

    def too_small(self, train: int, kinds: int, settings: LoopSettings) -> str | None:
        """Why the calls left cannot pay for a night's learning (None: they can, or uncapped):
        one attempt per train task, a reflect request per kind read ``reflect_samples`` times, and
        one gate's first look (two val tasks under both document sets)."""
        left = self.left()
        if left is None:
            return None
        need = train + kinds * settings.learning.reflect_samples + 2 * 2 * settings.gate.val_samples
        if left >= need + reserve(need):
            return None
        return (
            f"call cap: {left} call(s) left cannot pay for a night's learning here (at least {need}: one "
            f"attempt per train task, reflection, and one gate's first look); nothing learned tonight — "
            "raise max_calls"
        )

    def share(self, wanted: int, per_unit: int, fraction: float, least: int = 1) -> int:
        """How many of ``wanted`` units (``per_unit`` calls each) fit in ``fraction`` of the calls
        left; at least ``least``; all of them when uncapped."""
        left = self.left()
        if left is None:
            return wanted
        return max(least, min(wanted, int(left * fraction) // max(1, per_unit)))


def reserve(cost: int) -> int:
    return math.ceil(cost * RESERVE)


def in_turn(
    gates: Sequence[Callable[[], GateDecision]],
    limit: int | None,
    room: Callable[[list[GateDecision]], bool] = lambda done: True,
) -> list[GateDecision]:
    """A capped night's gates, one at a time in rank order; once one runs out of calls, or
    ``room`` (given the decisions so far) says the calls left are spoken for, the rest are left
    undecided without a draw."""
    out: list[GateDecision] = []
    for gate in gates:
        if out and (any(out_of_calls(d) for d in out) or not room(out)):
            out.append(undecided(None, limit, behind=True))
        else:
            out.append(gate())
    return out


def undecided(decision: GateDecision | None, limit: int | None, behind: bool = False) -> GateDecision:
    """The verdict on an edit whose gate ran out of calls: refused for tonight, not banned, with
    what its samples showed so far."""
    cap = f"the night's cap of {limit} calls" if limit is not None else "the night's call cap"
    if decision is None:
        why = "went to the edits ranked above it" if behind else "left no calls to test it"
        return GateDecision(
            False,
            "reject",
            0.0,
            0.0,
            statistic={OUT_OF_CALLS: True},
            reasons=[f"undecided: {cap} {why}; tested again on a later night"],
        )
    stat = dict(decision.statistic, **{OUT_OF_CALLS: True})
    so_far = ""
    if isinstance(stat.get("gain"), (int, float)) and isinstance(stat.get("lower_bound"), (int, float)):
        so_far = f" (gain so far {stat['gain']:+.3f}, lower bound {stat['lower_bound']:+.3f})"
    return GateDecision(
        False,
        "reject",
        decision.baseline,
        decision.candidate,
        list(decision.per_task),
        stat,
        [
            f"undecided: {cap} ran out before the gate could decide{so_far}; its samples are kept and it is "
            "tested again on a later night"
        ],
    )


def out_of_calls(decision: GateDecision) -> bool:
    return bool(decision.statistic.get(OUT_OF_CALLS))


def cap_note(cap: CallCap, undecided: int, val_tasks: int, max_samples: int) -> str:
    """Why a capped night left edits undecided, and what one verdict can cost here."""
    most = 2 * val_tasks * max_samples
    return (
        f"call cap: {undecided} edit(s) left undecided by the cap of {cap.limit} calls; one rule's verdict on "
        f"{val_tasks} val task(s) can take up to {most} calls (each task to {max_samples} samples under both "
        "document sets; twice that for a kind with one val task), so a cap far below that mostly postpones "
        "learning (docs/gate.md: A per-night call cap)"
    )
