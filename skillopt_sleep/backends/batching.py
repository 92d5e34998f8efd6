"""Bulk phases through a provider's batch API (half price), with a direct-call fallback.

``run_batch`` submits the requests a Client has not cached as one batch, polls it with backoff up
to a deadline (sleeping outside the concurrency limiter, so other phases keep their slots),
matches results by custom id and returns a Completion for each finished request, ``None`` for the
rest; the Client then makes direct calls for those. Any batch-level failure (submit, poll,
download, deadline) is a fallback, never a lost phase.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skillopt_sleep.backends.base import BatchBackend, BatchError, Completion, Request
from skillopt_sleep.backends.budget import Reservation

if TYPE_CHECKING:
    from skillopt_sleep.backends.layers import Client

BATCH_DISCOUNT = 0.5


@dataclass
class BatchPolicy:
    deadline: float = 3600.0  # seconds of polling before giving up on the batch
    first_poll: float = 5.0
    max_poll: float = 60.0
    poll_errors: int = 3  # consecutive poll failures tolerated

    def next_delay(self, delay: float) -> float:
        return min(self.max_poll, delay * 2) * (1 + random.uniform(-0.1, 0.1))


def run_batch(client: Client, requests: list[Request], pending: list[int]) -> list[Completion | None]:
    """Completions for ``requests[i]``, i in ``pending``, that the batch delivered (else None)."""
    backend = client.backend
    assert isinstance(backend, BatchBackend)
    out: list[Completion | None] = [None] * len(requests)
    reservations: dict[int, Reservation] = {}
    try:
        for i in pending:  # the whole batch must fit the budget before anything is sent
            reservations[i] = client.reserve(requests[i])
        ids = {f"r{i}": i for i in pending}
        try:
            results = _submit_and_wait(client, backend, [(cid, requests[i]) for cid, i in ids.items()])
        except BatchError as exc:
            client.note_batch_fallback(str(exc))
            return out
        for cid, i in ids.items():
            completion = results.get(cid)
            if completion is None:
                continue
            client.settle(reservations.pop(i), completion, discount=BATCH_DISCOUNT)
            if completion.ok and completion.text.strip():
                client.record(requests[i], completion, batched=True)
                out[i] = completion
        missing = sum(1 for i in pending if out[i] is None)
        if missing:
            client.note_batch_fallback(f"{missing} of {len(pending)} batch items unfinished")
        return out
    finally:
        for reservation in reservations.values():
            client.release(reservation)


def _submit_and_wait(
    client: Client, backend: BatchBackend, items: list[tuple[str, Request]]
) -> dict[str, Completion]:
    policy = client.batch_policy
    with client.limiter:  # one HTTP request; the wait below holds no slot
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
        stop = client.deadline.stop_reason()
        if stop is not None:
            backend.cancel_batch(batch_id)
            raise BatchError(f"batch {batch_id} abandoned: {stop}")
        if waited >= policy.deadline:
            backend.cancel_batch(batch_id)
            raise BatchError(f"batch {batch_id} not done after {policy.deadline:g}s")
        if client.retry.sleep is None:
            client.deadline.wait(delay)
        else:
            client.retry.sleep(delay)
        waited += delay
        delay = policy.next_delay(delay)
    with client.limiter:
        return backend.batch_results(batch_id)
