"""Ranking candidate rules: reading the optimizer's order."""

from __future__ import annotations

import pytest

from skillopt_sleep.learning.rank import order_from_reply


@pytest.mark.parametrize(
    "reply, order",
    [
        ('{"order": [3, 1, 2]}', [2, 0, 1]),
        ("[2, 3, 1]", [1, 2, 0]),
        ('```json\n{"order": ["2", 1]}\n```', [1, 0, 2]),  # left-out candidates follow in their order
        ('{"order": [2, 2, 9, 0, true, 1]}', [1, 0, 2]),  # repeats and unknown numbers dropped
    ],
)
def test_order_from_reply(reply: str, order: list[int]):
    assert order_from_reply(reply, 3) == order


@pytest.mark.parametrize("reply", ["no idea", '{"ranking": [1]}', '{"order": [7, 8]}', '{"order": "1,2"}'])
def test_an_order_that_names_no_candidate_is_unusable(reply: str):
    with pytest.raises(ValueError):
        order_from_reply(reply, 3)
