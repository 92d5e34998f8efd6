"""The simulator as a ranker: it orders candidates by the failures they address, with noise."""

from __future__ import annotations

import json

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.sim import SimBackend, SimKnobs

FAILING = [
    {"task_id": "a", "failed_checks": [{"op": "contains", "arg": "Refs:"}]},
    {"task_id": "b", "failed_checks": [{"op": "contains", "arg": "Refs:"}]},
    {"task_id": "c", "failed_checks": [{"op": "section_present", "arg": "Testing"}]},
]
CANDIDATES = [
    "Keep every response short: at most 40 characters.",  # addresses nothing
    'Never include "Refs:" in the response.',  # contradicts two failures
    'Always include a section headed "Testing".',  # addresses one
    'Always include "Refs:" in the response.',
]  # addresses two


def order(knobs: SimKnobs, salt: str) -> list[int]:
    request = Request(
        purpose="rank",
        system="s",
        user=f"rank {salt}",
        payload={"candidates": [{"content": c} for c in CANDIDATES], "tasks": FAILING, "keep": 2},
    )
    return json.loads(SimBackend(knobs).complete(request).text)["order"]


def test_without_misjudgement_the_rules_addressing_most_failures_come_first():
    for salt in range(40):
        assert order(SimKnobs(harmful=0.0, seed=salt), str(salt)) == [4, 3, 1, 2]


def test_misjudgement_puts_another_candidate_first_at_about_the_harmful_rate():
    firsts = [order(SimKnobs(harmful=0.5, seed=salt), str(salt))[0] for salt in range(400)]
    wrong = sum(f != 4 for f in firsts) / len(firsts)
    # a misjudged pick is uniform over 4 candidates, so 0.5 * 3/4 of the time another comes first
    assert 0.28 < wrong < 0.47
    assert all(sorted(order(SimKnobs(harmful=0.5, seed=s), "x")) == [1, 2, 3, 4] for s in range(20))
