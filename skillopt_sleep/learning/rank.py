"""Ranking the night's candidate rules with the optimizer, so the best L reach the gate.

Reflection over every failing kind can propose more rules than a night may test. Rather than
keeping the first ones proposed, the optimizer is shown every candidate beside the failures they
came from and asked, in one request (purpose ``rank``), to order them best first. A reply that is
not JSON is repaired once; one still unusable is reported (``Ranking.unusable``) and the candidates
keep the order of their support (how many evidence tasks they cite) —
never a silent cut.
"""

from __future__ import annotations

from dataclasses import dataclass

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.reply_json import extract_json
from skillopt_sleep.prompts import render
from skillopt_sleep.reply_repair import Unusable, parse_replies
from skillopt_sleep.sanitize import clean_text
from skillopt_sleep.rules.scope import scope_label
from skillopt_sleep.types import Edit

ORDER_SCHEMA = {
    "type": "object",
    "properties": {"order": {"type": "array", "items": {"type": "integer"}}},
    "required": ["order"],
}


@dataclass
class Ranking:
    order: list[int]  # indices into the candidates, best first; every index exactly once
    calls: int = 0  # rank requests made (repairs included)
    unusable: str = ""  # why the optimizer's order could not be used ("" when it was)


def order_from_reply(text: str, n: int) -> list[int]:
    """The candidate order in a rank reply (``{"order": [...]}`` or a bare list of 1-based
    numbers); ValueError when the reply holds none. Unknown or repeated numbers are dropped and
    candidates the reply left out follow in their given order."""
    data = extract_json(text)
    if isinstance(data, dict):
        data = data.get("order")
    if not isinstance(data, list):
        raise ValueError('the reply has no JSON "order" list')
    order: list[int] = []
    for item in data:
        if isinstance(item, bool) or not isinstance(item, (int, float, str)):
            continue
        try:
            index = int(item) - 1
        except ValueError:
            continue
        if 0 <= index < n and index not in order:
            order.append(index)
    if not order and n:
        raise ValueError("the order names none of the candidates")
    return order + [i for i in range(n) if i not in order]


def _listing(candidates: list[Edit]) -> str:
    lines = []
    for i, edit in enumerate(candidates, 1):
        lines.append(
            f"{i}. [{edit.target}, for {clean_text(scope_label(edit))}] {clean_text(edit.content)}\n"
            f"   Rationale: {clean_text(edit.rationale)[:300] or '(none)'}\n"
            f"   Evidence: {', '.join(edit.evidence[:10]) or '(none)'}"
        )
    return "\n".join(lines)


def rank(optimizer: Client, candidates: list[Edit], keep: int, evidence: str, tasks_payload: list[dict]) -> Ranking:
    """Order ``candidates`` best first with one optimizer request (no request when there are no
    more candidates than ``keep``). ``evidence`` is the failures they came from, as the reflect
    requests showed them; ``tasks_payload`` is the same as data."""
    if len(candidates) <= keep:
        return Ranking(order=list(range(len(candidates))))
    request = Request(
        purpose="rank",
        system=render("rank_system", keep=keep),
        user=render("rank_user", candidates=_listing(candidates), evidence=evidence),
        max_tokens=400,
        temperature=0.0,
        json_schema=ORDER_SCHEMA,
        payload={
            "candidates": [
                {"content": e.content, "target": e.target, "scope": e.scope, "evidence": list(e.evidence)}
                for e in candidates
            ],
            "tasks": tasks_payload,
            "keep": keep,
        },
    )
    replies = optimizer.map([request])
    [result], repairs = parse_replies(
        optimizer, [request], replies, lambda text: order_from_reply(text, len(candidates)), who="optimizer"
    )
    if isinstance(result, Unusable):
        optimizer.leave_out(f"rank: {result.reason}")
        fallback = sorted(range(len(candidates)), key=lambda i: -len(candidates[i].evidence))
        why = result.reason + (f" ({result.detail})" if result.detail else "")
        return Ranking(order=fallback, calls=1 + repairs, unusable=why)
    return Ranking(order=result, calls=1 + repairs)
