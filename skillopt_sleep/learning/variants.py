"""Dream variants: the optimizer writes new requests of the same kind as a night's *train* tasks,
so reflection sees more than the few instances the day's sessions held.

Only train tasks are varied — never val or test (the gate and the measurement must stay on tasks
the optimizer was not shown) — and only real ones (a variant of a variant drifts), and only for
kinds with fewer than ``ENOUGH_PER_KIND`` train tasks tonight: a kind seen often enough today needs
no made-up instances, and its variants would only cost calls. A variant keeps
its source's judge, output contract and reference: what is checked does not change, only the
request. It is a train task with ``origin = "dream"`` and ``derived_from`` = the source's id. A
variant that asks what one of tonight's tasks asks (a val task, say) is dropped. Tasks judged by an
exact reference are not varied (the reference answers only the source request).

A reply that is not the JSON asked for is repaired once (``reply_repair.py``); one still unusable is
counted in the report, never read as "no variants".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.store.rule_evidence import task_content_key
from skillopt_sleep.reply_json import extract_json
from skillopt_sleep.prompts import render
from skillopt_sleep.learning.recall import RECALLED_TAG
from skillopt_sleep.redact import redact
from skillopt_sleep.reply_repair import Unusable, parse_replies
from skillopt_sleep.sanitize import clean_text
from skillopt_sleep.types import TaskRecord, kind_of

# A kind with this many train tasks tonight (recalled ones included) has enough real instances:
# variants are written only for kinds with fewer, where one night's few sessions would overfit.
ENOUGH_PER_KIND = 4
MAX_INTENT_CHARS = 2000
MAX_CONTEXT_CHARS = 4000
DREAM_TAG = "dream"
VARIANTS_SCHEMA = {
    "type": "object",
    "properties": {
        "variants": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"intent": {"type": "string"}, "context_excerpt": {"type": "string"}},
                "required": ["intent"],
            },
        }
    },
    "required": ["variants"],
}


@dataclass
class Variants:
    tasks: list[TaskRecord] = field(default_factory=list)
    calls: int = 0  # optimizer requests made (repairs included)
    unusable: list[str] = field(default_factory=list)  # why a reply gave nothing, after a repair
    dropped: int = 0  # variants refused (empty, a copy of their source, or one of tonight's tasks)


def can_vary(task: TaskRecord) -> bool:
    """A real train task of tonight's own (not recalled), not judged by an exact reference."""
    return (
        task.split == "train"
        and task.origin == "real"
        and RECALLED_TAG not in task.tags
        and task.reference_kind != "exact"
    )


def vary_request(task: TaskRecord, n: int) -> Request:
    """The optimizer request for ``n`` variants of ``task`` (the payload for the simulator)."""
    return Request(
        purpose="vary",
        system=render("vary_system", n=n),
        user=render(
            "vary_user",
            intent=clean_text(task.intent),
            context=clean_text(task.context_excerpt) or "(none)",
            contract=clean_text(task.system) or "(none)",
        ),
        max_tokens=400 + 300 * n,
        temperature=1.0,
        payload={"task": task.to_dict(), "n": n},
        json_schema=VARIANTS_SCHEMA,
    )


def variants_from_reply(text: str) -> list[dict[str, str]]:
    """The variants in a reply (``{"variants": [...]}``); ValueError when it holds none."""
    data = extract_json(text)
    if not isinstance(data, dict) or not isinstance(data.get("variants"), list):
        raise ValueError('the reply has no JSON object with a "variants" list')
    out = []
    for item in data["variants"]:
        if isinstance(item, dict) and isinstance(item.get("intent"), str):
            context = item.get("context_excerpt")
            out.append({"intent": item["intent"], "context_excerpt": context if isinstance(context, str) else ""})
    return out


def _norm(text: str) -> str:
    return " ".join((text or "").casefold().split())


def _clean(text: str, limit: int) -> str:
    text = redact(clean_text(text)).strip()
    return text[:limit]


def dream_variants(optimizer: Client, tasks: list[TaskRecord], factor: int, enough: int = ENOUGH_PER_KIND) -> Variants:
    """Up to ``factor`` variants of every variable train task in ``tasks`` (one request each)
    whose kind has fewer than ``enough`` train tasks tonight."""
    per_kind = Counter(kind_of(t) for t in tasks if t.split == "train")
    sources = [t for t in tasks if can_vary(t) and per_kind[kind_of(t)] < enough]
    if factor <= 0 or not sources:
        return Variants()
    requests = [vary_request(t, factor) for t in sources]
    replies = optimizer.map(requests)
    parsed, repairs = parse_replies(optimizer, requests, replies, variants_from_reply, who="optimizer")
    result = Variants(calls=len(requests) + repairs)
    taken = {task_content_key(t) for t in tasks}
    asked = {_norm(t.intent) for t in tasks}
    for source, got in zip(sources, parsed, strict=True):
        if isinstance(got, Unusable):
            optimizer.leave_out(f"vary: {got.reason}")
            result.unusable.append(got.reason + (f" ({got.detail})" if got.detail else ""))
            continue
        made = 0
        for item in got:
            if made >= factor:
                break
            intent = _clean(item["intent"], MAX_INTENT_CHARS)
            variant = replace(
                source,
                id=f"{source.id}~dream{made + 1}",
                intent=intent,
                context_excerpt=_clean(item["context_excerpt"], MAX_CONTEXT_CHARS),
                split="train",
                origin="dream",
                derived_from=source.id,
                source_sessions=[],
                tags=[*source.tags, DREAM_TAG],
                recurrence=1,
            )
            key = task_content_key(variant)
            if not intent or key in taken or _norm(intent) in asked:
                result.dropped += 1
                continue
            taken.add(key)
            asked.add(_norm(intent))
            result.tasks.append(variant)
            made += 1
    return result
