"""A phase's target replies as scored attempts.

Rule and exact judges score a reply on the spot; rubric replies are graded together by the
optimizer (``rubric.RubricJudge``: concurrent, one repair). A reply that cannot be scored — cut
off at the output-token limit even with a larger cap, or whose rubric verdict stayed unusable — is
left out of the task's samples (never scored 0) and counted with its reason on the client
(``Client.leave_out``), which the night's report shows.
"""

from __future__ import annotations

from collections.abc import Sequence

from skillopt_sleep.checks import judges
from skillopt_sleep.backends.base import Completion
from skillopt_sleep.backends.client import Client
from skillopt_sleep.reply_repair import Unusable
from skillopt_sleep.replay.rubric import RubricJudge
from skillopt_sleep.types import Attempt, TaskRecord

CUT_OFF = "target reply was cut off at the output-token limit, also with a larger cap"


def score_replies(
    target: Client,
    pairs: Sequence[tuple[TaskRecord, int]],
    completions: Sequence[Completion],
    rubric: RubricJudge | None,
) -> dict[str, list[Attempt]]:
    """(task, sample) pairs and their replies -> scored attempts per task, in sample order;
    every task of ``pairs`` has an entry, empty when none of its replies could be scored."""
    scores: list[judges.Score | Unusable | None] = [None] * len(pairs)
    graded: list[int] = []
    for i, ((task, _), completion) in enumerate(zip(pairs, completions, strict=True)):
        if completion.truncated:
            scores[i] = Unusable(CUT_OFF)
        elif task.judge.get("kind", "rule") == "rubric":
            graded.append(i)
        else:
            scores[i] = judges.score(task.judge, task.reference, completion.text, completion.tools_called)
    if graded:
        if rubric is None:
            raise judges.JudgeError("a rubric judge needs the optimizer model")
        items = [(judges.rubric_text(pairs[i][0].judge, pairs[i][0].reference), completions[i].text) for i in graded]
        for i, verdict in zip(graded, rubric.grade(items), strict=True):
            scores[i] = verdict
    out: dict[str, list[Attempt]] = {task.id: [] for task, _ in pairs}
    for (task, sample), completion, result in zip(pairs, completions, scores, strict=True):
        if isinstance(result, Unusable):
            target.leave_out(result.reason)
            continue
        assert result is not None
        out[task.id].append(
            Attempt(
                task_id=task.id,
                sample=sample,
                response=completion.text,
                hard=result.hard,
                soft=result.soft,
                fail_reasons=result.fail_reasons,
                failed_checks=result.failed_checks,
                tools_called=list(completion.tools_called),
                usage=completion.usage,
                latency=completion.latency,
            )
        )
    return out


def left_out_notes(left_out: dict[str, int]) -> list[str]:
    """One report line for the results a night could not use, with how many and why."""
    if not left_out:
        return []
    parts = [f"{n} x {why}" for why, n in sorted(left_out.items(), key=lambda kv: (-kv[1], kv[0]))]
    return ["left out, not scored: " + "; ".join(parts)]
