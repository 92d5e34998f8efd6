"""The LLM merge pass: one batched request asking the optimizer model which of the heuristic
groups of requests are the same kind of task.

The heuristic groups are precise but miss paraphrases the vocabulary does not know; a model reads
"make the onboarding mail Portuguese" as a translation without any word list. The pass only
*merges* whole heuristic groups — it never splits one or moves a single request — so a wrong
answer can cost precision only where the model says two groups are one kind, and a model that
answers nothing usable leaves the heuristic grouping exactly as it was.

A reply that is not the JSON asked for gets one repair request (``repair.parse_replies``); a reply
still unusable leaves the heuristic groups and says so in ``notes`` (the night report shows them);
a failed call ends the night like any other (``ProviderError``). Ids the model invents, or repeats across kinds, are ignored and counted.
"""

from __future__ import annotations

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.reply_json import extract_json
from skillopt_sleep.mining.requests import UserRequest
from skillopt_sleep.prompts import render
from skillopt_sleep.reply_repair import Unusable, parse_replies

EXCERPT = 160  # characters of each example request shown
GROUPS_SCHEMA = {
    "type": "object",
    "properties": {"same_kind": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}},
    "required": ["same_kind"],
}


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT else text[:EXCERPT] + " …"


def parse_same_kind(text: str) -> list[list[int]]:
    """The ``same_kind`` lists of a reply; ValueError when the reply is not that JSON."""
    data = extract_json(text)
    if not isinstance(data, dict) or not isinstance(data.get("same_kind"), list):
        raise ValueError('expected a JSON object {"same_kind": [[<group number>, ...], ...]}')
    out = []
    for item in data["same_kind"]:
        if not isinstance(item, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in item):
            raise ValueError('each "same_kind" entry must be a list of group numbers')
        out.append(item)
    return out


class LlmGrouper:
    """Callable as ``mining.mine(..., grouper=LlmGrouper(optimizer))``: heuristic groups in, the
    same groups with those the model calls one kind of task merged out.

    Only the ``max_groups`` largest groups (by sessions) are shown, ``examples`` distinct requests
    of each: a night's recurring kinds are among its largest groups, and one request stays small
    whatever the history's length."""

    def __init__(self, optimizer: Client, max_groups: int = 150, examples: int = 3):
        self.optimizer = optimizer
        self.max_groups = max_groups
        self.examples = examples
        self.notes: list[str] = []
        self.ignored_ids = 0  # numbers the model invented or named twice
        self.merged = 0  # heuristic groups folded into another

    def _request(self, shown: list[list[UserRequest]]) -> Request:
        lines = []
        for n, group in enumerate(shown, 1):
            texts = list(dict.fromkeys(r.text for r in group))[: self.examples]
            lines.append(f"{n}. " + " | ".join(_clip(t) for t in texts))
        return Request(
            purpose="mine",
            system=render("group_system"),
            user=render("group_user", groups="\n".join(lines)),
            max_tokens=1200,
            temperature=0.0,
            payload={"grouping": True, "groups": len(shown)},
            json_schema=GROUPS_SCHEMA,
        )

    def __call__(self, groups: list[list[UserRequest]]) -> list[list[UserRequest]]:
        order = sorted(range(len(groups)), key=lambda g: -len({r.session.session_id for r in groups[g]}))
        shown_ids = order[: self.max_groups]
        if len(shown_ids) < 2:
            return groups
        if getattr(self.optimizer.backend, "offline", False):
            self.notes.append("LLM grouping skipped: the optimizer is the simulator, which has no grouping behaviour")
            return groups
        request = self._request([groups[g] for g in shown_ids])
        completion = self.optimizer.complete(request)  # a failed call ends the night, as every call does
        (answer,), _ = parse_replies(self.optimizer, [request], [completion], parse_same_kind, who="miner")
        if isinstance(answer, Unusable):
            self.notes.append(f"LLM grouping: {answer.reason}; the heuristic groups were kept")
            return groups
        return self._merge(groups, shown_ids, answer)

    def _merge(
        self, groups: list[list[UserRequest]], shown_ids: list[int], same_kind: list[list[int]]
    ) -> list[list[UserRequest]]:
        into: dict[int, int] = {}  # group index -> the group index it is merged into
        seen: set[int] = set()
        for numbers in same_kind:
            members = []
            for n in numbers:
                if not 1 <= n <= len(shown_ids) or n in seen:
                    self.ignored_ids += 1
                    continue
                seen.add(n)
                members.append(shown_ids[n - 1])
            for g in members[1:]:
                into[g] = members[0]
        if self.ignored_ids:
            self.notes.append(
                f"LLM grouping: {self.ignored_ids} group number(s) in the reply were unknown or repeated and ignored"
            )
        merged: dict[int, list[UserRequest]] = {}
        for g, group in enumerate(groups):
            merged.setdefault(into.get(g, g), []).extend(group)
        self.merged += len(into)
        if into:
            self.notes.append(f"LLM grouping merged {len(into)} heuristic group(s) into others")
        out = list(merged.values())
        return sorted(out, key=lambda g: (-len(g), g[0].text.lower(), g[0].text))
