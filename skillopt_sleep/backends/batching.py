"""Bulk phases through a provider's batch API (half price): submit, poll, download.

``run_batch`` is given exactly what it needs, no more: the backend, the items, a polling policy,
the concurrency slot to hold while it talks to the provider (it polls outside it, so other phases
keep their slots), the night's deadline and how to sleep. It returns the Completions the batch
delivered, by custom id, and raises ``BatchError`` for any batch-level failure (submit, poll,
download, deadline). Budget and accounting stay with the Client, which falls back to direct calls
for whatever the batch did not deliver: a failed batch is never a lost phase.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from skillopt_sleep.backends.base import BatchBackend, BatchError, Completion, Request
from skillopt_sleep.backends.deadline import Deadline

BATCH_DISCOUNT = 0.5


@dataclass
class BatchPolicy:
    deadline: float = 3600.0  # seconds of polling before giving up on the batch
    first_poll: float = 5.0
    max_poll: float = 60.0
    poll_errors: int = 3  # consecutive poll failures tolerated

    def next_delay(self, delay: float) -> float:
        return min(self.max_poll, delay * 2) * (1 + random.uniform(-0.1, 0.1))


def run_batch(
    backend: BatchBackend,
    items: list[tuple[str, Request]],
    *,
    policy: BatchPolicy,
    slot: AbstractContextManager[object],
    deadline: Deadline,
    sleep: Callable[[float], None],
) -> dict[str, Completion]:
    """Run ``(custom_id, request)`` items as one provider batch; the finished ones' Completions."""
    with slot:  # one HTTP request; the wait below holds no slot
        batch_id = backend.submit_batch(items)
    waited, delay, errors = 0.0, policy.first_poll, 0
    while True:
        try:
            status = backend.batch_status(batch_id)
            errors = 0
        except BatchError:
            errors += 1
            if errors > policy.poll_errors:
                backend.cancel_batch(batch_id)
                raise
            status = "running"
        if status == "ended":
            break
        if status == "failed":
            raise BatchError(f"batch {batch_id} failed at the provider")
        stop = deadline.stop_reason()
        if stop is not None:
            backend.cancel_batch(batch_id)
            raise BatchError(f"batch {batch_id} abandoned: {stop}")
        if waited >= policy.deadline:
            backend.cancel_batch(batch_id)
            raise BatchError(f"batch {batch_id} not done after {policy.deadline:g}s")
        sleep(delay)
        waited += delay
        delay = policy.next_delay(delay)
    with slot:
        return backend.batch_results(batch_id)
