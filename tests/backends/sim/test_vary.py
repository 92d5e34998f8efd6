"""The simulator writing dream variants (``sim/vary.py``): a new concrete subject, the context
kept, the same variants for the same request."""

from __future__ import annotations

import json

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.sim import SimKnobs
from skillopt_sleep.backends.sim.vary import vary


def _variants(knobs: SimKnobs, intent: str, n: object = 3, sample: int = 0) -> list[dict]:
    task = {"id": "t1", "intent": intent, "context_excerpt": "in the billing service"}
    request = Request(purpose="vary", system="s", user="u", sample=sample, payload={"task": task, "n": n})
    text, tools = vary(knobs, request)
    assert tools == []
    return json.loads(text)["variants"]


def test_numbers_are_redrawn_and_the_context_kept() -> None:
    variants = _variants(SimKnobs(), "Write the commit message for change 12 of 40")
    assert len(variants) == 3
    for variant in variants:
        assert variant["context_excerpt"] == "in the billing service"
        words = variant["intent"].split()
        assert words[:6] == "Write the commit message for change".split() and words[7] == "of"
        assert all(2 <= int(words[i]) <= 999 for i in (6, 8))


def test_a_request_without_numbers_gets_a_case_number() -> None:
    [variant] = _variants(SimKnobs(), "Draft the release notes", n=1)
    assert variant["intent"].startswith("Draft the release notes (case ") and variant["intent"].endswith(")")


def test_the_same_request_draws_the_same_variants_and_another_sample_others() -> None:
    intent = "Fix bug 7"
    assert _variants(SimKnobs(seed=1), intent) == _variants(SimKnobs(seed=1), intent)
    assert _variants(SimKnobs(seed=1), intent) != _variants(SimKnobs(seed=1), intent, sample=1)
    assert _variants(SimKnobs(seed=1), intent) != _variants(SimKnobs(seed=2), intent)


def test_one_variant_when_no_count_is_asked_for() -> None:
    assert len(_variants(SimKnobs(), "x 1", n=None)) == 1 and len(_variants(SimKnobs(), "x 1", n=0)) == 1
