"""Prices per model, in USD per million tokens, for the cost budget.

Usage convention (every backend reports this way): ``input_tokens`` are the *uncached* input
tokens; ``cache_read_tokens`` and ``cache_write_tokens`` are billed separately; the total input a
call consumed is their sum. Anthropic reports exactly this; the OpenAI backend subtracts
``cached_tokens`` from ``prompt_tokens``.

The table is a starting point, not a contract: providers change prices. Any backend spec can
override it with ``price_in``, ``price_out``, ``price_cache_read`` and ``price_cache_write``
(USD per million tokens). A model with no known price has ``None``: its calls still count against
the token budget, and the budget lists the model as unpriced so the report can say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Mapping

from skillopt_sleep.types import Usage


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float | None = None  # default: 10% of input (Anthropic), see cost()
    cache_write: float | None = None  # default: 125% of input (Anthropic 5-minute cache)

    def cost(self, usage: Usage) -> float:
        cache_read = self.input * 0.1 if self.cache_read is None else self.cache_read
        cache_write = self.input * 1.25 if self.cache_write is None else self.cache_write
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * cache_read
            + usage.cache_write_tokens * cache_write
        ) / 1_000_000

    def worst_case(self, input_tokens: int, output_tokens: int) -> float:
        """The most a call of this size can cost (nothing cached, the prefix written to cache)."""
        cache_write = self.input * 1.25 if self.cache_write is None else self.cache_write
        return (input_tokens * max(self.input, cache_write) + output_tokens * self.output) / 1_000_000


FREE = Price(0.0, 0.0, 0.0, 0.0)

# Longest matching prefix wins, so dated snapshots ("claude-sonnet-4-5-20250929") match too.
PRICES: dict[str, Price] = {
    # Anthropic (cache read 0.1x, 5-minute cache write 1.25x input)
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4": Price(15.0, 75.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-3-7-sonnet": Price(3.0, 15.0),
    "claude-3-5-sonnet": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.8, 4.0),
    "claude-3-haiku": Price(0.25, 1.25),
    # OpenAI (cached input is read at a discount; there is no cache-write charge)
    "gpt-5-mini": Price(0.25, 2.0, 0.025, 0.0),
    "gpt-5-nano": Price(0.05, 0.4, 0.005, 0.0),
    "gpt-5": Price(1.25, 10.0, 0.125, 0.0),
    "gpt-4.1-mini": Price(0.4, 1.6, 0.1, 0.0),
    "gpt-4.1-nano": Price(0.1, 0.4, 0.025, 0.0),
    "gpt-4.1": Price(2.0, 8.0, 0.5, 0.0),
    "gpt-4o-mini": Price(0.15, 0.6, 0.075, 0.0),
    "gpt-4o": Price(2.5, 10.0, 1.25, 0.0),
    "o4-mini": Price(1.1, 4.4, 0.275, 0.0),
    "o3": Price(2.0, 8.0, 0.5, 0.0),
}

_OPTION_FIELDS = {
    "price_in": "input",
    "price_out": "output",
    "price_cache_read": "cache_read",
    "price_cache_write": "cache_write",
}


def lookup(model: str, table: Mapping[str, Price] | None = None) -> Price | None:
    table = PRICES if table is None else table
    name = (model or "").lower()
    best = max((key for key in table if name.startswith(key)), key=len, default=None)
    return table[best] if best is not None else None


def price_for(model: str, options: Mapping[str, Any] | None = None) -> Price | None:
    """The table's price for ``model``, with any ``price_*`` options from the backend spec applied.

    Options alone define a price for an unknown model only when both ``price_in`` and
    ``price_out`` are given.
    """
    options = options or {}
    overrides = {field: float(options[key]) for key, field in _OPTION_FIELDS.items() if key in options}
    base = lookup(model)
    if not overrides:
        return base
    if base is None:
        if "input" not in overrides or "output" not in overrides:
            raise ValueError(f"no price known for model {model!r}: give both price_in and price_out")
        return Price(**overrides)
    return Price(**{**base.__dict__, **overrides})
