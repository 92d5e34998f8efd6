"""Stable train / val / test splits."""

from __future__ import annotations

import hashlib

from skillopt_sleep.types import TaskRecord


def _unit(task_id: str, seed: int) -> float:
    h = hashlib.sha256(f"{seed}:{task_id}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def assign_splits(
    tasks: list[TaskRecord], *, seed: int = 0, val_fraction: float = 0.34, test_fraction: float = 0.0
) -> None:
    """Stable splits from a hash of id + seed, stratified by kind of task (``skill_hint``).

    Within a kind, instances are ordered by their hash; the first ones go to test and val, the
    rest to train, and a kind with >= 2 instances keeps at least one train and one val instance,
    so a rule learned on one instance is measured on another. Kinds with a single instance split
    by hash alone. Dream tasks are always train; with >= 2 real tasks val is never empty.
    """
    real = [t for t in tasks if t.origin != "dream"]
    for t in tasks:
        t.split = "train"
    by_kind: dict[str, list[TaskRecord]] = {}
    for t in real:
        by_kind.setdefault(t.skill_hint or t.id, []).append(t)
    for kind_tasks in by_kind.values():
        ordered = sorted(kind_tasks, key=lambda t: _unit(t.id, seed))
        n = len(ordered)
        if n == 1:
            u = _unit(ordered[0].id, seed)
            ordered[0].split = "test" if u < test_fraction else "val" if u < test_fraction + val_fraction else "train"
            continue
        n_test = min(int(n * test_fraction), n - 2) if n >= 3 else 0
        n_val = min(max(1, round(n * val_fraction)), n - n_test - 1)  # >= 1: n - n_test >= 2
        for i, t in enumerate(ordered):
            t.split = "test" if i < n_test else "val" if i < n_test + n_val else "train"
    # Only single-instance kinds can leave these empty; fix them up from single-instance tasks.
    singles = sorted((t for ts in by_kind.values() if len(ts) == 1 for t in ts), key=lambda t: _unit(t.id, seed))
    if len(real) >= 2 and not any(t.split == "val" for t in real) and singles:
        singles[-1].split = "val"
    if len(real) >= 2 and not any(t.split == "train" for t in real) and singles:
        next((t for t in singles if t.split != "val"), singles[0]).split = "train"
