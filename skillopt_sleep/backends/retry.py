"""The failure policy, one for every backend.

Transient errors (rate limits, 5xx, overload, timeouts, connection resets, empty completions) are
retried with exponential backoff and jitter, waiting exactly as long as a Retry-After says,
bounded in attempts, in total wait and by the call's own time limit; auth, unknown-model and
bad-request errors fail at once. Either way the caller gets ``ProviderError``, never an error
dressed up as an answer. A night whose deadline passed, or that was cancelled because another
call failed for good, retries nothing and starts nothing: every stopped call reports the root
cause.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from skillopt_sleep.backends.base import TRANSIENT_ERRORS, Completion, ProviderError
from skillopt_sleep.backends.deadline import Deadline


@dataclass
class RetryPolicy:
    attempts: int = 5  # total tries per call, including the first
    base_delay: float = 1.0
    max_delay: float = 30.0
    jitter: float = 0.25  # +- fraction of the delay
    max_total_wait: float = 180.0  # seconds of backoff one call may accumulate
    sleep: Callable[[float], None] | None = None  # None: wait on the night's Deadline (cancellable)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds before try ``attempt + 1``: the provider's Retry-After when it gave one."""
        if retry_after is not None and retry_after >= 0:
            return float(retry_after)
        delay = min(self.max_delay, self.base_delay * (2**attempt))
        return max(0.0, delay * (1 + random.uniform(-self.jitter, self.jitter)))

    def wait(self, seconds: float, deadline: Deadline) -> None:
        """Back off; on the deadline unless a test gave its own ``sleep``, so a cancel or the
        night's end cuts the wait short."""
        if self.sleep is None:
            deadline.wait(seconds)
        else:
            self.sleep(seconds)


def stop_if_over(deadline: Deadline, backend_id: str) -> None:
    """Raise ``ProviderError`` once the night's calls must stop (deadline passed or cancelled)."""
    reason = deadline.stop_reason()
    if reason is None:
        return
    cause = deadline.cause
    if isinstance(cause, ProviderError):  # every stopped call reports the root cause
        raise ProviderError(cause.backend_id, cause.kind, cause.message)
    raise ProviderError(backend_id, "cancelled" if deadline.cancelled else "deadline", reason)


def call_with_retry(
    attempt: Callable[[float | None], Completion],
    *,
    policy: RetryPolicy,
    deadline: Deadline,
    backend_id: str,
    limit: float | None,
    on_retry: Callable[[], None] = lambda: None,
) -> Completion:
    """Try ``attempt(seconds_left)`` until it succeeds or the policy gives up.

    ``limit`` is the call's total wall time across all its tries (None: no limit). Returns a
    successful Completion or raises ``ProviderError``; ``on_retry`` runs before each retry."""
    waited = 0.0
    tries = 0
    ends = None if limit is None else time.monotonic() + limit
    while True:
        stop_if_over(deadline, backend_id)
        left = None if ends is None else ends - time.monotonic()
        if left is not None and left <= 0:
            raise ProviderError(backend_id, "timeout", f"no answer within the call's {limit:g}s limit ({tries} tries)")
        completion = attempt(left)
        tries += 1
        if completion.ok:
            return completion
        if completion.error == "cancelled":
            stop_if_over(deadline, backend_id)
        if completion.error not in TRANSIENT_ERRORS or tries >= policy.attempts:
            break
        delay = policy.delay(tries - 1, completion.retry_after)
        if waited + delay > policy.max_total_wait:
            break
        if ends is not None and time.monotonic() + delay >= ends:
            break  # the wait alone would use up the call's time
        on_retry()
        policy.wait(delay, deadline)
        waited += delay
    message = completion.error_message or "failed"
    if completion.error in TRANSIENT_ERRORS:
        message += f" (gave up after {tries} tries, {waited:.0f}s of backoff)"
        if completion.retry_after is not None:
            message += f"; provider asked to wait {completion.retry_after:.0f}s"
    raise ProviderError(backend_id, completion.error or "unknown", message)
