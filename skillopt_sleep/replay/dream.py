"""Dreams: replay tasks under a document set, K independent samples each, scored by each task's
judge. The same function serves train rollouts and val/test evaluations."""

from __future__ import annotations

from collections.abc import Callable

from skillopt_sleep.checks import judges
from skillopt_sleep.backends.base import Request, can_offer_tools
from skillopt_sleep.backends.client import Client
from skillopt_sleep.documents.managed_block import DocumentSet
from skillopt_sleep.prompts import render
from skillopt_sleep.replay.rubric import RubricJudge
from skillopt_sleep.replay.scoring import score_replies
from skillopt_sleep.types import Attempt, TaskRecord


def attempt_request(task: TaskRecord, docs: DocumentSet, sample: int, max_tokens: int = 1024) -> Request:
    """The prompt a target model sees for one task: documents in the cacheable system prefix,
    the task after it. The payload holds the same facts for the simulator."""
    documents = docs.prompt_prefix()
    context = f"\nContext:\n{task.context_excerpt}\n" if task.context_excerpt else ""
    contract = f"\nOutput contract:\n{task.system}\n" if task.system else ""
    return Request(
        purpose="attempt",
        system=render("attempt_system", documents=documents or "(no project documents)"),
        user=render("attempt_user", intent=task.intent, context=context, contract=contract),
        max_tokens=max_tokens,
        temperature=1.0,
        sample=sample,
        payload={"task": task.to_dict(), "documents": documents},
        tools=judges.required_tools(task.judge),
    )


def split_measurable(tasks: list[TaskRecord], target: Client) -> tuple[list[TaskRecord], list[TaskRecord]]:
    """Tasks the target can be scored on, and those it cannot: a ``tool_called`` check can only
    pass when the tool is offered, so on a backend that cannot offer it the task is left out of
    the score (never scored 0)."""
    measurable: list[TaskRecord] = []
    left_out: list[TaskRecord] = []
    for task in tasks:
        fits = can_offer_tools(target.backend, judges.required_tools(task.judge))
        (measurable if fits else left_out).append(task)
    return measurable, left_out


def rubric_scorer(optimizer: Client) -> RubricJudge:
    """The night's rubric judge: the optimizer model grading rubric replies (``rubric.py``)."""
    return RubricJudge(optimizer)


def run_attempts(
    target: Client, tasks: list[TaskRecord], docs: DocumentSet, samples: range, rubric: RubricJudge | None = None
) -> dict[str, list[Attempt]]:
    """Every task x every sample index, concurrently; results grouped per task in sample order.
    A reply that cannot be scored is left out of its task's list (``scoring.py``)."""
    pairs = [(task, s) for task in tasks for s in samples]
    completions = target.map([attempt_request(task, docs, s) for task, s in pairs], bulk=True)
    return score_replies(target, pairs, completions, rubric)


def mean_soft(attempts: dict[str, list[Attempt]]) -> float | None:
    """Mean over tasks of each task's mean soft score."""
    per_task = [sum(a.soft for a in xs) / len(xs) for xs in attempts.values() if xs]
    return sum(per_task) / len(per_task) if per_task else None


def run_train_attempts(
    target: Client,
    tasks: list[TaskRecord],
    docs: DocumentSet,
    k: int,
    rubric: RubricJudge | None = None,
    agree_after: int = 2,
) -> dict[str, list[Attempt]]:
    """``k`` samples per train task, drawn adaptively.

    Every task first gets ``agree_after`` samples. A task whose samples all scored alike (the same
    score and the same failed checks) stops there: more draws of a task the model always passes,
    or always fails in the same way, would show the optimizer nothing new. The others are drawn up
    to ``k``, as is a task with a sample that could not be scored. ``agree_after`` 0 draws ``k``
    for every task. Sample indices are the same as a full
    draw's, so answers kept from earlier nights still apply."""
    first = k if agree_after <= 0 else min(k, agree_after)
    out = run_attempts(target, tasks, docs, range(first), rubric)
    # agreement needs every first sample scored: one left out (cut off, say) is no evidence
    undecided = [t for t in tasks if len(out[t.id]) < first or not samples_agree(out[t.id])]
    if first < k and undecided:
        for task_id, attempts in run_attempts(target, undecided, docs, range(first, k), rubric).items():
            out[task_id].extend(attempts)
    return out


def samples_agree(attempts: list[Attempt]) -> bool:
    """Every sample got the same score and failed the same rule checks (as data, not wording)."""
    return len({(a.soft, tuple(sorted(a.failed_checks))) for a in attempts}) <= 1


def teaches(attempts: list[Attempt]) -> bool:
    """Whether a train task's attempts show reflection something: good and bad attempts to
    contrast, or a failure in every attempt (``reflect.select`` shows exactly these)."""
    if not attempts:
        return False
    return len({a.soft for a in attempts}) > 1 or attempts[0].soft < 1.0


def dream_by_kind(
    target: Client,
    tasks: list[TaskRecord],
    docs: DocumentSet,
    k: int,
    kind_of: Callable[[TaskRecord], str],
    enough: int,
    rubric: RubricJudge | None = None,
    agree_after: int = 2,
    always: Callable[[TaskRecord], bool] = lambda task: False,
) -> dict[str, list[Attempt]]:
    """Train attempts, a kind at a time only as far as reflection can use them.

    Reflection shows the optimizer at most a few tasks per kind (contrastive pairs first, then
    failures). Each round dreams, for every kind still short of ``enough`` tasks that teach
    something (``teaches``), its next tasks — as many as it is short — with
    ``run_train_attempts``; a kind stops once it has ``enough`` or runs out of tasks. Every kind
    advances in the same round, so the rounds run concurrently across kinds. Tasks for which
    ``always`` holds (recalled past tasks, dream variants: the night added them on purpose) are
    dreamed in the first round whatever their kind has. ``enough`` 0 dreams every task. Tasks not
    dreamed have no entry."""
    if enough <= 0:
        return run_train_attempts(target, tasks, docs, k, rubric, agree_after)
    queues: dict[str, list[TaskRecord]] = {}
    batch = [task for task in tasks if always(task)]
    for task in tasks:
        if not always(task):
            queues.setdefault(kind_of(task), []).append(task)
    useful = dict.fromkeys(queues, 0)
    out: dict[str, list[Attempt]] = {}
    while True:
        for kind, queue in queues.items():
            short = enough - useful[kind]
            if short > 0 and queue:
                batch.extend(queue[:short])
                del queue[:short]
        if not batch:
            return out
        got = run_train_attempts(target, batch, docs, k, rubric, agree_after)
        for task in batch:
            out[task.id] = got[task.id]
            useful[kind_of(task)] = useful.get(kind_of(task), 0) + teaches(got[task.id])
        batch = []
