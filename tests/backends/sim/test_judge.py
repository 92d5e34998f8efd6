"""The simulator as a judge (backends/sim/judge.py): a rubric's score is the share of its quoted
phrases the response holds."""

from __future__ import annotations

from skillopt_sleep.checks import judges
from skillopt_sleep.backends.base import Request

from tests.backends.sim.test_target import sim


def test_sim_rubric_judge():
    rubric = 'Mentions "retries" and "backoff".'
    c = sim().complete(Request("judge", "", "", payload={"rubric": rubric, "response": "Adds retries."}))
    assert judges.parse_rubric_reply(c.text)[0] == 0.5
