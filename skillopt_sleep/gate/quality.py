"""The quality guard: what the checks do not measure.

A check set is always partial: a person's complaints say what went wrong, never everything that
must stay right. A rule that constrains form — a length cap, "only", "omit", "one line" — can pass
every check by breaking the work ("at most 40 characters" passes "at most 1,200 characters"), and a
rule headed to project memory reaches every kind of work. For such a rule, once it has passed its
gate, the optimizer judges its answers on the val tasks it reaches against a reference answer —
the answer the person accepted in the transcript, else the current documents' answer to the same
task — with one question: does this answer still do the task as well as the reference? The current
documents' answers are judged the same way, and the rule is refused when its answers are judged as
good significantly less often (a one-sided exact test, ``QUALITY_ALPHA``), or far less often on
what was judged (``QUALITY_MARGIN``).

The calls are counted in the night's economy and spent only where a rule could game: at least
``QUALITY_JUDGED`` answers a side, spread over the tasks the rule reaches (its own kind's val
tasks; every val task for a rule headed to memory), reusing the gate's samples and drawing more
only where there are too few.
"""

from __future__ import annotations

import math
import re

from skillopt_sleep.backends.base import Request
from skillopt_sleep.rules.conflicts import SHORT_RE
from skillopt_sleep.documents.managed_block import DocumentSet
from skillopt_sleep.gate.evaluator import draw_within
from skillopt_sleep.reply_json import extract_json
from skillopt_sleep.prompts import render
from skillopt_sleep.reply_repair import Unusable, parse_replies
from skillopt_sleep.rules.scope import split_scoped
from skillopt_sleep.types import Edit, TaskRecord

QUALITY_JUDGED = 12  # answers judged a side, at least
QUALITY_ALPHA = 0.05  # chance of refusing a rule whose answers are really as good
QUALITY_MARGIN = 0.25  # refused outright when this much less often judged as good
QUALITY_SCHEMA = {
    "type": "object",
    "properties": {"as_good": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["as_good", "reason"],
}
EXCERPT = 6000  # characters of each answer shown to the judge
OMIT_RE = re.compile(
    r"\b(?:omit|leave out|skip|drop|no (?:explanation|prose|preamble|details?|examples?|commentary)|"
    r"without (?:explanation|explaining|details?|examples?|commentary|prose)|don'?t explain|nothing else|"
    r"only (?:the|a|one|code|output)|just (?:the|a|one))\b",
    re.I,
)
FORMAT_RE = re.compile(
    r"\b(?:one|a single) (?:line|sentence|word|paragraph)\b|\bas a (?:list|table)\b|"
    r"\bbullets? only\b",
    re.I,
)


def constrains_form(edit: Edit) -> bool:
    """Whether ``edit``'s rule could pass the checks by degrading the answer: it limits length,
    leaves content out or fixes a form, or it goes to project memory, read for every kind."""
    if edit.op in ("delete", "delete_line"):
        return False
    if edit.target == "memory":
        return True
    body = split_scoped(edit.content)[1]
    return bool(SHORT_RE.search(body) or OMIT_RE.search(body) or FORMAT_RE.search(body))


def quality_request(task: TaskRecord, reference: str, answer: str) -> Request:
    return Request(
        purpose="quality",
        system=render("quality_system"),
        user=render("quality_user", task=task.intent[:EXCERPT], reference=reference[:EXCERPT], answer=answer[:EXCERPT]),
        max_tokens=200,
        temperature=0.0,
        json_schema=QUALITY_SCHEMA,
        payload={
            "task": {"id": task.id, "intent": task.intent},
            "reference": reference[:EXCERPT],
            "answer": answer[:EXCERPT],
        },
    )


def parse_verdict(text: str) -> bool:
    data = extract_json(text)
    if isinstance(data, dict) and isinstance(data.get("as_good"), bool):
        return data["as_good"]
    raise ValueError('the reply has no JSON object with an "as_good" true or false')


def fisher_p(good_base: int, n_base: int, good_cand: int, n_cand: int) -> float:
    """One-sided p of the candidate being judged as good less often than the baseline (Fisher's
    exact test: the chance of as few candidate "as good" verdicts among all of them)."""
    total, good = n_base + n_cand, good_base + good_cand
    denominator = math.comb(total, n_cand)
    return (
        sum(
            math.comb(good, k) * math.comb(total - good, n_cand - k)
            for k in range(max(0, n_cand - (total - good)), good_cand + 1)
        )
        / denominator
    )


def reference_of(task: TaskRecord) -> str:
    """The answer a person accepted in the transcript (a task's attempted solution that was not
    complained about), or "" when there is none."""
    answer = (task.attempted_solution or "").strip()
    return answer if answer and task.outcome != "failure" else ""


def reached(edit: Edit, focus: set[str], val: list[str]) -> list[str]:
    """The val tasks the rule reaches: every one for a rule headed to memory, else its own kind's."""
    return sorted(val) if edit.target == "memory" or not focus else sorted(focus)


UNDECIDED = (
    "undecided: the night's call cap has no room to judge what its checks do not measure; tested again on a later night"
)


def guard(night: object, edit: Edit, cand: DocumentSet, focus: set[str]) -> str | None:
    """Why ``edit`` is refused for what the checks do not measure, or None (module docstring).
    ``night``: the ``NightGate`` whose evaluator, documents and cap the judging uses. A capped
    night that cannot afford the answers and verdicts it needs refuses the rule for tonight with
    ``UNDECIDED`` (no verdict)."""
    evaluator, base, cap = night.evaluator, night.base, night.cap  # type: ignore[attr-defined]
    optimizer = evaluator.models.optimizer
    tasks = reached(edit, focus, list(evaluator.tasks))
    if not tasks:
        return None
    per_task = max(1, -(-QUALITY_JUDGED // len(tasks)))
    refs = {tid: reference_of(evaluator.tasks[tid]) for tid in tasks}
    # without a transcript's answer, the current documents' answers are the references, each
    # judged against the next, so one answer that happens to miss something is not the yardstick
    cand_wanted = {tid: per_task for tid in tasks}
    base_wanted = {tid: per_task if refs[tid] else max(2, per_task) for tid in tasks}
    for docs, wanted in ((cand, cand_wanted), (base, base_wanted)):
        # a pooled sample has no answer: draw only the answers missing, after every sample there is
        drawn = evaluator.scores.get(docs.fingerprint(), {})
        missing = {tid: wanted[tid] - len(evaluator.answered(docs, tid)) for tid in tasks}
        short = [tid for tid in tasks if missing[tid] > 0]
        if short:
            need = max(len(drawn.get(tid, [])) + missing[tid] for tid in short)
            if draw_within(cap, evaluator, [(docs, None)], need, short) is None:
                return UNDECIDED
    items: list[tuple[str, TaskRecord, str, str]] = []
    for tid in tasks:
        task = evaluator.tasks[tid]
        ours = evaluator.answered(base, tid)[: base_wanted[tid]]
        theirs = evaluator.answered(cand, tid)[:per_task]
        if refs[tid]:
            items += [("base", task, refs[tid], a) for a in ours[:per_task]]
            items += [("cand", task, refs[tid], a) for a in theirs]
        else:
            items += [("base", task, ours[(i + 1) % len(ours)], ours[i]) for i in range(min(per_task, len(ours)))]
            items += [("cand", task, ours[i % len(ours)], a) for i, a in enumerate(theirs)]
    requests = [quality_request(task, ref, answer) for _, task, ref, answer in items]
    if cap.capped and not cap.afford(len(requests)):
        return UNDECIDED
    replies = optimizer.map(requests)
    verdicts, _ = parse_replies(optimizer, requests, replies, parse_verdict, who="judge")
    counts = {"base": [0, 0], "cand": [0, 0]}
    for (side, *_), verdict in zip(items, verdicts, strict=True):
        if isinstance(verdict, Unusable):
            continue
        counts[side][0] += verdict
        counts[side][1] += 1
    (gb, nb), (gc, nc) = counts["base"], counts["cand"]
    if not nb or not nc:
        return None
    p = fisher_p(gb, nb, gc, nc)
    drop = gb / nb - gc / nc
    if p <= QUALITY_ALPHA or drop >= QUALITY_MARGIN:
        return (
            f"lowers what its checks do not measure: its answers were judged to do the task as well as the "
            f"reference in {gc} of {nc}, the current documents' in {gb} of {nb} (p = {p:.3f}, over "
            f"{len(tasks)} val task(s))"
        )
    return None
