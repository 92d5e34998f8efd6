"""Lookahead: a proposed rule replayed on its own train tasks before the gate, and rewritten when it
breaks what already passed there.

A rule that fixes one check can break another of the same kind of work: a length cap that ends a
verbose model's padding also cuts replies below the length the work needs. Gated as proposed, such
a rule shows no gain (what it fixes, it breaks), and the check it breaks never failed before, so no
night proposes its fix: the two halves are never tested together. So each candidate the night will
gate is first replayed on up to ``tasks_per_edit`` of the train tasks it was drawn from: once per
task, and up to ``samples`` per task unless the first replays show a clean fix (``clear``). Checks
that fail clearly more often under it than in the night's own attempts of the same tasks
(``newly_broken``) are shown to the optimizer with the rule (one ``refine`` request per
such rule, all at once), which rewrites it as one line that keeps the fix and stops the breakage;
the rewrite replaces the candidate and faces the gate like any edit. Only train tasks are replayed
and shown: val and test stay unseen. A rule that breaks nothing costs its replays and no request;
an unusable reply (after one repair) keeps the rule as proposed and is counted.

The same replays name what a rule fixes: the checks that failed clearly less often under it than in
the night's attempts of the same tasks (``fixed``) become its ``targets``, the checks the gate tests
its gain on (``gate/decide.py``). Chosen on train replays before any val task is drawn for the rule, they
are a hypothesis fixed in advance, so testing it on val stays honest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.models import run_together
from skillopt_sleep.documents.optimizer_view import optimizer_view
from skillopt_sleep.documents.managed_block import (
    DocumentSet,
    EditRefused,
    Limits,
    apply_edit,
    clean_rule,
)
from skillopt_sleep.replay.dream import run_attempts
from skillopt_sleep.checks.judges import check_from_id
from skillopt_sleep.prompts import render
from skillopt_sleep.reply_repair import CONTENT_SCHEMA, Unusable, content_of, parse_replies
from skillopt_sleep.replay.rubric import RubricJudge
from skillopt_sleep.sanitize import clean_text
from skillopt_sleep.rules.scope import render_scoped, split_scoped
from skillopt_sleep.types import Attempt, Edit, TaskRecord

SAMPLES = 2  # replays per task under a candidate
TASKS_PER_EDIT = 3  # train tasks a candidate is replayed on
WAS_RARE = 0.2  # a check is newly broken when it failed at most this share of the night's attempts ...
NOW_OFTEN = 0.5  # ... and at least this share of the replays under the candidate ...
MIN_FAILURES = 2  # ... and at least this many times
CLEAR_FIX = 0.6  # one replay per task suffices when a check that failed this often before passes in all


@dataclass
class Lookahead:
    edits: list[Edit]  # the candidates, rewritten where the optimizer did so
    replays: int = 0  # attempt requests made
    calls: int = 0  # refine requests made (repairs included)
    rewritten: list[tuple[str, str]] = field(default_factory=list)  # (before, after)
    unusable: list[str] = field(default_factory=list)
    replayed: set[int] = field(default_factory=set)  # positions in ``edits`` that were replayed

    def fixed_nothing(self, i: int) -> bool:
        """The edit at ``i`` was replayed on its own train tasks and no check failed less often
        there than in the night's attempts: it fixed nothing it was drawn from."""
        return i in self.replayed and not self.edits[i].targets

    def slots(self, n: int, screen: bool = True) -> tuple[list[Edit], list[tuple[Edit, str, str]]]:
        """The ``n`` edits the night gates, and the others with why and at which stage they stop.

        With ``screen``, the rules that fixed something on their own train tasks take the slots
        first (in rank order); one that fixed nothing is gated only while a slot is left, never
        vetoed outright: a few replays of a useful rule can be unlucky, and a single proposal must
        keep its full chance."""
        nothing = [i for i in range(len(self.edits)) if self.fixed_nothing(i)] if screen else []
        order = [i for i in range(len(self.edits)) if i not in nothing] + nothing
        left_out = []
        for i in order[n:]:
            if i in nothing:
                left_out.append(
                    (
                        self.edits[i],
                        "fixed nothing on its own train tasks (no check failed less often when "
                        f"it was replayed there than in the night's attempts), and the night's {n} slot(s) "
                        "went to rules that did or ranked higher",
                        "lookahead",
                    )
                )
            else:
                left_out.append(
                    (
                        self.edits[i],
                        f"ranked below the best {n} that fixed something on their own train tasks",
                        "guardrail",
                    )
                )
        return [self.edits[i] for i in order[:n]], left_out

    def notes(self) -> list[str]:
        """What the night's report says about it."""
        return [
            f"rewritten before the gate (it broke checks on its own train tasks): {before} -> {after}"
            for before, after in self.rewritten
        ] + [f"lookahead: {why}; the rule was gated as proposed" for why in self.unusable]


def failure_rates(attempts: list[Attempt]) -> dict[str, float]:
    """Per check id, the share of ``attempts`` that failed it."""
    if not attempts:
        return {}
    counts: dict[str, int] = {}
    for a in attempts:
        for check in set(a.failed_checks):
            counts[check] = counts.get(check, 0) + 1
    return {c: n / len(attempts) for c, n in counts.items()}


def fixed(before: list[Attempt], after: list[Attempt]) -> list[str]:
    """Check ids that failed less often in ``after`` than in ``before`` (the same tasks, pooled):
    by at least one replay's worth and at least half the largest drop, so a check that merely
    wobbled beside the one a rule fixes does not dilute what the gate tests."""
    if not before or not after:
        return []
    was, now = failure_rates(before), failure_rates(after)
    drops = {c: rate - now.get(c, 0.0) for c, rate in was.items()}
    best = max(drops.values(), default=0.0)
    floor = max(1 / len(after), 0.5 * best)
    return sorted(c for c, drop in drops.items() if drop > 0 and drop >= floor)


def newly_broken(before: list[Attempt], after: list[Attempt]) -> list[str]:
    """Check ids that passed reliably in ``before`` (failed at most ``WAS_RARE`` of the time) and
    fail in at least ``NOW_OFTEN`` of ``after`` — the same tasks, pooled. A check that failed often
    already is the night's ordinary evidence, not the rule's doing; a few replays of a check
    that fails at random must not pass for breakage."""
    was, now = failure_rates(before), failure_rates(after)
    return sorted(
        c
        for c, rate in now.items()
        if was.get(c, 0.0) <= WAS_RARE and rate >= NOW_OFTEN and rate * len(after) >= MIN_FAILURES
    )


def _own_tasks(
    edit: Edit, tasks: dict[str, TaskRecord], attempts: dict[str, list[Attempt]], limit: int
) -> list[TaskRecord]:
    return [tasks[t] for t in edit.evidence if t in tasks and attempts.get(t)][:limit]


def _request(
    edit: Edit, checks: list[str], broken: list[tuple[TaskRecord, list[Attempt]]], docs: DocumentSet, limits: Limits
) -> Request:
    """One refine request: the rule, and the replies under it that failed a newly broken check (the
    judges' reasons for those checks only)."""
    scope, body = split_scoped(edit.content)
    wanted = set(checks)
    lines = []
    for task, xs in broken:
        reasons = sorted({r for a in xs for c, r in zip(a.failed_checks, a.fail_reasons, strict=False) if c in wanted})
        lines.append(
            f"- task {task.id}: {clean_text(task.intent)[:300]}\n  now fails: "
            f"{clean_text('; '.join(reasons))[:400] or 'a check that passed before'}"
        )
    return Request(
        purpose="refine",
        system=render("refine_system", max_rule_chars=limits.max_rule_chars),
        user=render(
            "refine_user", rule=clean_text(edit.content), failures="\n".join(lines), documents=optimizer_view(docs)
        ),
        max_tokens=400,
        temperature=0.0,
        json_schema=CONTENT_SCHEMA,
        payload={
            "rule": body,
            "scope": scope or edit.scope,
            "tasks": [
                {
                    "task_id": t.id,
                    "intent": t.intent,
                    "kind": t.kind,
                    "failed_checks": [check_from_id(c) for c in checks if any(c in a.failed_checks for a in xs)],
                }
                for t, xs in broken
            ],
        },
    )


def clear(before: list[Attempt], after: list[Attempt]) -> bool:
    """Whether one replay per task already tells what a rule does, so the next ones are not drawn:
    some check that failed in at least ``CLEAR_FIX`` of the night's attempts passed in every
    replay, and no check that passed reliably before (``WAS_RARE``) failed in any. Anything less
    clean — no fix yet, or a hint of breakage — gets the rule's full replays."""
    was, now = failure_rates(before), failure_rates(after)
    if not after or not any(rate >= CLEAR_FIX and c not in now for c, rate in was.items()):
        return False
    return all(was.get(c, 0.0) > WAS_RARE for c in now)


def _replay(
    target: Client,
    plans: Mapping[int, tuple[list[TaskRecord], DocumentSet]],
    samples: range,
    rubric: RubricJudge | None,
) -> dict[int, dict[str, list[Attempt]]]:
    """``samples`` replays of each planned rule's own tasks under it, all rules at once."""
    if not plans or not samples:
        return {}
    got: list[dict[str, list[Attempt]]] = run_together(
        *[(lambda own=own, cand=cand: run_attempts(target, own, cand, samples, rubric)) for own, cand in plans.values()]
    )
    return dict(zip(plans, got, strict=True))


def _to_replay(
    out: Lookahead, plans: Mapping[int, object], replays: Mapping[int, object], slots: int | None
) -> list[int]:
    """The rules the next round replays: every one not yet replayed (``slots`` None), or those
    among the first ``slots`` in rank order, skipping the replayed ones that fixed nothing."""
    if slots is None:
        return [i for i in plans if i not in replays]
    ahead = [i for i in range(len(out.edits)) if not out.fixed_nothing(i)][:slots]
    return [i for i in ahead if i in plans and i not in replays]


def look_ahead(
    target: Client,
    optimizer: Client,
    edits: list[Edit],
    tasks: list[TaskRecord],
    attempts: dict[str, list[Attempt]],
    docs: DocumentSet,
    *,
    rubric: RubricJudge | None = None,
    limits: Limits = Limits(),
    samples: int = SAMPLES,
    tasks_per_edit: int = TASKS_PER_EDIT,
    slots: int | None = None,
) -> Lookahead:
    """Replay each added or replacing rule of ``edits`` on its own train tasks and have the
    optimizer rewrite the ones that newly break a check there (module docstring).

    ``slots``: the night gates that many of ``edits`` (``Lookahead.slots`` with screening), so the
    rules are replayed in rank order only as far as the slots need: the best-ranked rules not yet
    shown to fix nothing are replayed, round by round, until every slot holds one replayed rule
    that fixed something. The slots come out exactly as if every rule had been replayed (a rule
    ranked below them could only have taken a slot that a better one already holds), and a rule
    the slots never reached costs no replay."""
    by_id = {t.id: t for t in tasks}
    out = Lookahead(edits=list(edits))
    plans: dict[int, tuple[list[TaskRecord], DocumentSet]] = {}
    for i, edit in enumerate(edits):
        own = _own_tasks(edit, by_id, attempts, tasks_per_edit)
        if edit.op not in ("add", "replace") or not own:
            continue
        try:
            plans[i] = (own, apply_edit(docs, edit))
        except EditRefused:
            continue
    replays: dict[int, dict[str, list[Attempt]]] = {}

    def before_of(i: int) -> list[Attempt]:
        return [a for task in plans[i][0] for a in attempts.get(task.id, [])]

    def after_of(i: int) -> list[Attempt]:
        return [a for task in plans[i][0] for a in replays[i].get(task.id, [])]

    first = min(1, samples)  # replays per task in a rule's first round; the rest only when unclear
    while wanted := _to_replay(out, plans, replays, slots):
        replays.update(_replay(target, {i: plans[i] for i in wanted}, range(first), rubric))
        unclear = [i for i in wanted if samples > first and not clear(before_of(i), after_of(i))]
        for i, more in _replay(target, {i: plans[i] for i in unclear}, range(first, samples), rubric).items():
            for task_id, xs in more.items():
                replays[i].setdefault(task_id, []).extend(xs)
        for i in wanted:
            out.edits[i] = replace(edits[i], targets=fixed(before_of(i), after_of(i)), evidence=list(edits[i].evidence))
            out.replayed.add(i)
            out.replays += len(plans[i][0]) * (samples if i in unclear else first)
    requests, which = [], []
    for i in sorted(replays):
        own = plans[i][0]
        checks = set(newly_broken(before_of(i), after_of(i)))
        broken = [
            (task, xs)
            for task in own
            if (xs := [a for a in replays[i].get(task.id, []) if checks & set(a.failed_checks)])
        ]
        if checks and broken:
            requests.append(_request(edits[i], sorted(checks), broken, docs, limits))
            which.append(i)
    if not requests:
        return out
    replies = optimizer.map(requests)
    parsed, repairs = parse_replies(optimizer, requests, replies, content_of, who="optimizer")
    out.calls = len(requests) + repairs
    for i, result in zip(which, parsed, strict=True):
        if isinstance(result, Unusable):
            optimizer.leave_out(f"refine: {result.reason}")
            out.unusable.append(result.reason)
            continue
        edit = out.edits[i]
        try:
            body = clean_rule(split_scoped(result)[1], limits)
        except EditRefused as exc:
            out.unusable.append(f"refine: {exc}")
            continue
        scope = split_scoped(edit.content)[0] or edit.scope
        content = render_scoped(scope, body)
        if content.lower() == edit.content.lower():
            continue
        why = "rewritten: as first proposed it broke checks that passed on its own train tasks"
        rewritten = replace(
            edit,
            content=content,
            rationale=f"{edit.rationale} | {why}" if edit.rationale else why,
            evidence=list(edit.evidence),
            targets=list(edit.targets),
        )
        out.rewritten.append((edit.content, content))
        out.edits[i] = rewritten
    return out
