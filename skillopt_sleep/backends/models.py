"""The two roles of a night (target and optimizer), and running independent phases at once."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import TypeVar

from skillopt_sleep.backends.client import Client, Stats
from skillopt_sleep.backends.deadline import Deadline
from skillopt_sleep.types import Usage

T = TypeVar("T")


@dataclass
class Models:
    """The two roles of a night. They may share a backend, a limiter and stats."""

    target: Client
    optimizer: Client
    notes: list[str] = field(default_factory=list)  # what building the backends cost (a slow SDK import)

    @property
    def stats(self) -> list[Stats]:
        if self.target.stats is self.optimizer.stats:
            return [self.target.stats]
        return [self.target.stats, self.optimizer.stats]

    @property
    def simulated(self) -> bool:
        """Some role is answered by an offline backend (the simulator), not a real model."""
        return self.target.backend.offline or self.optimizer.backend.offline

    @property
    def offline(self) -> bool:
        """No role talks to a real model."""
        return self.target.backend.offline and self.optimizer.backend.offline

    def calls(self) -> dict[str, int]:
        total: Counter = Counter()
        for s in self.stats:
            total.update(s.calls)
        return dict(total)

    def left_out(self) -> dict[str, int]:
        """Results the night could not use, by why (see ``Client.leave_out``)."""
        total: Counter = Counter()
        for s in self.stats:
            total.update(s.left_out)
        return dict(total)

    @property
    def deadline(self) -> Deadline:
        return self.target.deadline

    def close(self, reason: str = "the night ended") -> None:
        """Cancel whatever is still in flight and close the backends' connections (a drip or a
        hang held by an abandoned call ends with them)."""
        self.target.deadline.cancel(reason)
        self.optimizer.deadline.cancel(reason)
        for backend in {id(c.backend): c.backend for c in (self.target, self.optimizer)}.values():
            close = getattr(backend, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - closing is best effort at the end of a night
                    pass

    def usage(self) -> Usage:
        total = Usage()
        for s in self.stats:
            total = total + s.usage
        return total

    def spending_notes(self) -> list[str]:
        """Budget use, models without a known price, and batch use, for the night's report."""
        notes = []
        budget = self.target.budget
        if budget is not None:
            summary = budget.summary()
            limits = [
                f"{summary['tokens_used']:,} tokens"
                + (f" of {summary['max_tokens']:,}" if summary["max_tokens"] else "")
            ]
            if summary["cost_used_usd"] or summary["max_cost_usd"]:
                limits.append(
                    f"${summary['cost_used_usd']:.4f}"
                    + (f" of ${summary['max_cost_usd']:.2f}" if summary["max_cost_usd"] else "")
                )
            if summary["max_calls"]:
                limits.append(f"{summary['calls_used']:,} calls of {summary['max_calls']:,}")
            notes.append("spent " + ", ".join(limits))
            if summary["unpriced_models"]:
                notes.append(
                    "no price known for "
                    + ", ".join(summary["unpriced_models"])
                    + " (cost budget not enforced for them; set price_in/price_out)"
                )
        for stats in self.stats:
            if stats.batched:
                notes.append(f"{stats.batched} call(s) answered through provider batches (half price)")
            for why in stats.batch_fallbacks:
                notes.append(f"batch fell back to direct calls: {why}")
        return notes


def run_together(*thunks: Callable[[], T]) -> list[T]:
    """Run independent phases at once (each phase still obeys the shared limiter)."""
    if len(thunks) == 1:
        return [thunks[0]()]
    with ThreadPoolExecutor(max_workers=len(thunks)) as pool:
        futures = [pool.submit(t) for t in thunks]
        return [f.result() for f in futures]
