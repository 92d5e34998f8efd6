"""Per-night token, cost and call limits, enforced before every call.

A call first *reserves* its worst case (prompt length estimated from characters, plus its
``max_tokens`` of output, priced as if nothing were cached); the reservation is replaced by the
real usage when the call returns. Concurrent calls therefore cannot together cross a limit, and
the night stops with ``BudgetExceeded`` instead of overspending. One Budget is shared by both
roles' Clients, like the Limiter. The call limit (``max_calls``) is also what the learning loop
plans a capped night by (``calls_left``); this check is only its backstop.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any

from skillopt_sleep.backends.base import BudgetExceeded, Request
from skillopt_sleep.backends.pricing import Price
from skillopt_sleep.types import Usage

# Conservative: English prose runs ~4 characters a token, code and JSON nearer 3.
CHARS_PER_TOKEN = 3.0


def estimate_input_tokens(request: Request) -> int:
    return math.ceil((len(request.system) + len(request.user)) / CHARS_PER_TOKEN) + 8


def usage_tokens(usage: Usage) -> int:
    """Every token a call consumed: uncached + cached input (read or written) + output."""
    return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens + usage.output_tokens


@dataclass
class Reservation:
    tokens: int
    cost: float
    price: Price | None
    model: str
    open: bool = True
    calls: int = 1


@dataclass
class Budget:
    """``max_tokens``: input + output tokens a night may use; ``max_cost``: USD; ``max_calls``:
    provider calls. ``None`` = no limit."""

    max_tokens: int | None = None
    max_cost: float | None = None
    max_calls: int | None = None
    tokens_used: int = 0
    cost_used: float = 0.0
    calls_used: int = 0
    unpriced: set[str] = field(default_factory=set)  # models whose calls carry no known price
    exhausted: str | None = None  # the limit that stopped the night, once one did
    _reserved_tokens: int = 0
    _reserved_cost: float = 0.0
    _reserved_calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reserve(self, request: Request, price: Price | None, model: str) -> Reservation:
        """Hold the worst case of ``request``; raise BudgetExceeded if it might cross a limit."""
        tokens_in = estimate_input_tokens(request)
        tokens = tokens_in + int(request.max_tokens)
        cost = price.worst_case(tokens_in, int(request.max_tokens)) if price is not None else 0.0
        with self._lock:
            if self.max_calls is not None and self.calls_used + self._reserved_calls + 1 > self.max_calls:
                self.exhausted = self.exhausted or "calls"
                raise BudgetExceeded("calls", self.calls_used, self.max_calls)
            if self.max_tokens is not None and self.tokens_used + self._reserved_tokens + tokens > self.max_tokens:
                self.exhausted = self.exhausted or "tokens"
                raise BudgetExceeded("tokens", self.tokens_used, self.max_tokens)
            if self.max_cost is not None and self.cost_used + self._reserved_cost + cost > self.max_cost:
                self.exhausted = self.exhausted or "cost (USD)"
                raise BudgetExceeded("cost (USD)", round(self.cost_used, 6), self.max_cost)
            self._reserved_tokens += tokens
            self._reserved_cost += cost
            self._reserved_calls += 1
        return Reservation(tokens, cost, price, model)

    def settle(
        self,
        reservation: Reservation,
        usage: Usage,
        *,
        discount: float = 1.0,
        cost: float | None = None,
    ) -> None:
        """Replace the reservation with what the call really used (``discount`` 0.5 for batches).
        ``cost`` is the provider's own bill for the call when it reports one; it wins over the
        price table."""
        with self._lock:
            self._release_locked(reservation)
            self.calls_used += reservation.calls
            self.tokens_used += usage_tokens(usage)
            if cost is not None:
                self.cost_used += cost * discount
            elif reservation.price is not None:
                self.cost_used += reservation.price.cost(usage) * discount
            elif usage_tokens(usage):
                self.unpriced.add(reservation.model)

    def release(self, reservation: Reservation) -> None:
        with self._lock:
            self._release_locked(reservation)

    def _release_locked(self, reservation: Reservation) -> None:
        if reservation.open:
            reservation.open = False
            self._reserved_tokens -= reservation.tokens
            self._reserved_cost -= reservation.cost
            self._reserved_calls -= reservation.calls

    def calls_left(self) -> int | None:
        """Provider calls the night may still make (``None``: no call limit)."""
        if self.max_calls is None:
            return None
        with self._lock:
            return max(0, self.max_calls - self.calls_used - self._reserved_calls)

    def summary(self) -> dict[str, Any]:
        with self._lock:
            return {
                "max_tokens": self.max_tokens,
                "max_cost_usd": self.max_cost,
                "max_calls": self.max_calls,
                "calls_used": self.calls_used,
                "tokens_used": self.tokens_used,
                "cost_used_usd": round(self.cost_used, 6),
                "unpriced_models": sorted(self.unpriced),
                "exhausted": self.exhausted,
            }
