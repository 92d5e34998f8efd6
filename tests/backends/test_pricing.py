"""The price table and per-backend price overrides."""

from __future__ import annotations

import pytest

from skillopt_sleep.backends.pricing import lookup, price_for

from tests.support.fake_backend import ok


def test_price_table_and_overrides():
    assert lookup("claude-sonnet-4-5-20250929").input == 3.0
    assert lookup("gpt-4o-mini-2024-07-18").input == pytest.approx(0.15)  # not gpt-4o's price
    assert lookup("llama-local") is None
    assert price_for("llama-local", {"price_in": 0, "price_out": 0}).cost(ok().usage) == 0
    assert price_for("claude-haiku-4-5", {"price_out": 7}).output == 7
    with pytest.raises(ValueError):
        price_for("llama-local", {"price_in": 1})
