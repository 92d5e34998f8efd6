"""Recall: the past train tasks most like tonight's join tonight's train set, so a night with few
sessions does not fit its rules to those few.

Similarity is mining's: the Jaccard overlap of two requests' content words (``mining.text``).
What may be recalled, and where it goes:

- only tasks that were *train* on the night they were archived: a past val or test task stays
  held out for good (recalling it into train would let the optimizer see a task the gate may judge
  on a later night, since val evidence is pooled by content);
- a recalled task always joins *train*, never val or test: val and test are tonight's own, freshly
  mined tasks;
- a past task with the same content as one of tonight's tasks is not recalled: it is tonight's
  task (it keeps the split mining gave it), a genuinely recurring one, not a memory.
"""

from __future__ import annotations

from dataclasses import replace

from skillopt_sleep.store.archive import ArchivedTask
from skillopt_sleep.store.rule_evidence import task_content_key
from skillopt_sleep.mining.text import jaccard, signature
from skillopt_sleep.types import TaskRecord, kind_of

MIN_SIMILARITY = 0.25  # below this a past task is about something else
RECALLED_TAG = "recalled"


def similarity(a: TaskRecord, b: TaskRecord) -> float:
    """How alike two tasks' requests are (0..1)."""
    return jaccard(signature(a.intent), signature(b.intent))


def recall(past: list[ArchivedTask], tonight: list[TaskRecord], k: int) -> list[TaskRecord]:
    """Up to ``k`` archived train tasks most similar to tonight's train tasks, as train tasks of
    tonight (id ``recalled-<id>``, tagged ``recalled``). The picks are spread over the kinds of
    tonight's train tasks in turn (each past task counts for the kind it is most like), most similar
    and then newest first within a kind, so one kind's many past tasks do not crowd out the rest."""
    train = [t for t in tonight if t.split == "train"]
    if k <= 0 or not train:
        return []
    taken_keys = {task_content_key(t) for t in tonight}
    taken_ids = {t.id for t in tonight}
    by_kind: dict[str, list[tuple[float, int, ArchivedTask]]] = {}
    for order, entry in enumerate(past):
        if entry.split != "train" or entry.key in taken_keys:
            continue
        best, like = max((similarity(entry.task, t), kind_of(t)) for t in train)
        if best >= MIN_SIMILARITY:
            by_kind.setdefault(like, []).append((best, order, entry))
    queues = [sorted(items, key=lambda item: (-item[0], -item[1])) for _, items in sorted(by_kind.items())]
    queues.sort(key=lambda q: (-q[0][0], -q[0][1]))
    out: list[TaskRecord] = []
    while len(out) < k and any(queues):
        for queue in queues:
            if not queue or len(out) >= k:
                continue
            entry = queue.pop(0)[2]
            new_id = f"recalled-{entry.task.id}"
            if entry.key in taken_keys or new_id in taken_ids:
                continue
            taken_keys.add(entry.key)
            taken_ids.add(new_id)
            out.append(
                replace(entry.task, id=new_id, split="train", origin="real", tags=[*entry.task.tags, RECALLED_TAG])
            )
    return out
