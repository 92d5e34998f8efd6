"""The LLM miner: the optimizer model turns a recurring group of requests (with the replies and
the user's follow-ups) into a checkable judge — rule checks and/or a rubric.

Every check it proposes is validated like a task file's; invalid ones are dropped and counted,
never silently scored. A reply that is not JSON gets one repair request; still unusable, it is
counted (``unusable``, in the night report) and the heuristic checks alone make the judge. The heuristic checks are shown to the model as a starting point, so a model
that adds nothing still leaves the task as checkable as the heuristic path would.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.reply_json import extract_json
from skillopt_sleep.checks.judges import RULE_OPS, JudgeError, validate_check
from skillopt_sleep.mining.requests import UserRequest
from skillopt_sleep.prompts import render
from skillopt_sleep.reply_repair import Unusable, parse_replies

EXCERPT = 600
MINE_SCHEMA = {
    "type": "object",
    "properties": {
        "checkable": {"type": "boolean"},
        "checks": {
            "type": "array",
            "items": {"type": "object", "properties": {"op": {"type": "string"}, "arg": {}}, "required": ["op"]},
        },
        "rubric": {"type": "string"},
    },
    "required": ["checkable", "checks"],
}


def _parse_judge(text: str) -> dict[str, Any]:
    data = extract_json(text)
    if not isinstance(data, dict):
        raise ValueError('expected a JSON object {"checkable": ..., "checks": [...]}')
    return data


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT else text[:EXCERPT] + " …"


class LlmMiner:
    """Callable as ``mining.mine(..., judge_maker=LlmMiner(optimizer))``."""

    def __init__(self, optimizer: Client, max_examples: int = 6):
        self.optimizer = optimizer
        self.max_examples = max_examples
        self.rejected: Counter[str] = Counter()  # why proposed checks were dropped
        self.unusable = 0  # replies not JSON even after one repair (counted in the night report)
        self._lock = threading.Lock()

    def __call__(self, label: str, group: list[UserRequest], heuristic: list[dict[str, Any]]) -> dict[str, Any] | None:
        examples = group[: self.max_examples]
        lines = []
        for n, r in enumerate(examples, 1):
            lines.append(f"### Request {n}\n{_clip(r.text)}")
            if r.reply:
                lines.append(f"Reply given:\n{_clip(r.reply)}")
            for fb in r.feedback:
                lines.append(f"User complained: {_clip(fb)}")
            if r.praised:
                lines.append("User was satisfied.")
        request = Request(
            purpose="mine",
            system=render("mine_system", ops=", ".join(RULE_OPS)),
            user=render(
                "mine_user",
                label=label,
                examples="\n".join(lines),
                heuristic="\n".join(f"- {c['op']}: {c.get('arg')!r}" for c in heuristic) or "(none)",
            ),
            max_tokens=800,
            temperature=0.0,
            payload={"label": label, "feedback": [fb for r in group for fb in r.feedback], "heuristic": heuristic},
            json_schema=MINE_SCHEMA,
        )
        completion = self.optimizer.complete(request)
        data: dict[str, Any] | Unusable | None
        (data,), _ = parse_replies(self.optimizer, [request], [completion], _parse_judge, who="miner")
        if isinstance(data, Unusable):  # the heuristic checks below still make the judge
            with self._lock:
                self.unusable += 1
            data = None
        checks: list[dict[str, Any]] = []
        for raw in (data.get("checks") if isinstance(data, dict) else None) or []:
            try:
                check = validate_check(raw)
            except JudgeError as exc:
                with self._lock:
                    self.rejected[str(exc).split(" (")[0][:80]] += 1
                continue
            if check not in checks:
                checks.append(check)
        for check in heuristic:  # the user's own explicit complaints always count
            if check not in checks:
                checks.append(check)
        rubric = data.get("rubric") if isinstance(data, dict) else ""
        if not isinstance(rubric, str):
            rubric = ""
        if checks:
            if {"op": "no_refusal", "arg": None} not in checks:
                checks.append({"op": "no_refusal", "arg": None})
            return {"kind": "rule", "checks": checks}
        if rubric.strip():
            return {"kind": "rubric", "rubric": rubric.strip()[:2000]}
        return None
