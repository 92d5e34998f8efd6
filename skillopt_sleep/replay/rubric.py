"""Rubric judging for a night: every rubric reply of a phase graded concurrently by the optimizer
model (one ``Client.map``, under the shared concurrency limit), a reply that is not the
``{"score", "reason"}`` JSON repaired once (``reply_repair.py``), and one still unusable after that
left out of the score instead of ending the night or counting as 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from skillopt_sleep.checks import judges
from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.prompts import render
from skillopt_sleep.reply_repair import Unusable, parse_replies

RUBRIC_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number"}, "reason": {"type": "string"}},
    "required": ["score", "reason"],
}


def rubric_request(rubric: str, response: str) -> Request:
    return Request(
        purpose="judge",
        system="You are a strict grader.",
        user=render("rubric", rubric=rubric, response=response),
        max_tokens=256,
        temperature=0.0,
        payload={"rubric": rubric, "response": response},
        json_schema=RUBRIC_SCHEMA,
    )


class RubricJudge:
    """Grades (rubric, response) pairs with the optimizer model."""

    def __init__(self, optimizer: Client):
        self.optimizer = optimizer

    def grade(self, items: Sequence[tuple[str, str]]) -> list[judges.Score | Unusable]:
        """One verdict per (rubric, response), in order; all calls of one go run concurrently."""
        if not items:
            return []
        requests = [rubric_request(rubric, response) for rubric, response in items]
        replies = self.optimizer.map(requests)
        verdicts, _ = parse_replies(self.optimizer, requests, replies, judges.parse_rubric_reply, who="judge")
        return [v if isinstance(v, Unusable) else judges.rubric_score(*v) for v in verdicts]
