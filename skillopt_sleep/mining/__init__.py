"""Mining: a night's SessionDigests -> recurring, checkable TaskRecords.

- ``requests``: the user's requests, each with the feedback that followed it;
- ``shape``: what a request asks to be done (its mode) and to what (its object);
- ``clustering``: requests grouped into kinds of task (average link over an inverted index);
- ``checks``: rule checks implied by the user's complaints;
- ``miner``: the whole step (``mine``), with ``llm.LlmMiner`` as the model-backed judge maker;
- ``splits``: stable train / val / test splits;
- ``taskfile``: ``skillopt_sleep.tasks.v1`` files.
"""

from __future__ import annotations

from skillopt_sleep.mining.checks import checks_by_support, checks_from_feedback, limit_check
from skillopt_sleep.mining.clustering import cluster, label_for
from skillopt_sleep.mining.miner import JudgeMaker, MineResult, mine, task_id
from skillopt_sleep.mining.requests import UserRequest, requests_from
from skillopt_sleep.mining.splits import assign_splits
from skillopt_sleep.mining.taskfile import load_tasks, save_tasks, tasks_document, validate_task
from skillopt_sleep.mining.text import jaccard, signature

__all__ = [
    "JudgeMaker",
    "MineResult",
    "UserRequest",
    "assign_splits",
    "checks_by_support",
    "checks_from_feedback",
    "cluster",
    "jaccard",
    "label_for",
    "limit_check",
    "load_tasks",
    "mine",
    "requests_from",
    "save_tasks",
    "signature",
    "task_id",
    "tasks_document",
    "validate_task",
]
