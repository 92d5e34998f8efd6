"""Behaviour written once around any backend: retry, per-sample cache, one global concurrency
limit, token/cost budget, batch mode, call accounting and the evidence log.

Failure policy (one for every backend): transient errors (rate limits, 5xx, overload, timeouts,
connection resets, empty completions) are retried with exponential backoff and jitter, waiting
exactly as long as a Retry-After says, bounded in attempts and in total wait; auth, unknown-model
and bad-request errors fail at once. Either way the caller gets ``ProviderError``, never an
error dressed up as an answer.

Time (``deadline.py``): each call has a total wall-time limit across its tries (``call_timeout``),
and every client of a night shares one ``Deadline``: when it passes, or when any call fails for
good, calls in flight return at once, nothing retries and nothing new starts. A call that does
not finish in time is abandoned in a daemon thread (its answer, should it come, is dropped) and
the backend's connections are closed when the night ends (``Models.close``).

``Client`` plays the role of httpx's client around a transport: the engine only ever talks to a
Client, never to a Backend directly.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any
from collections.abc import Callable, Iterable, Sequence

from skillopt_sleep.backends.base import (
    TRANSIENT_ERRORS,
    Backend,
    BatchBackend,
    Completion,
    ProviderError,
    Request,
)
from skillopt_sleep.backends.batching import BatchPolicy, run_batch
from skillopt_sleep.backends.budget import Budget, Reservation
from skillopt_sleep.backends.deadline import Deadline
from skillopt_sleep.backends.pricing import FREE, Price
from skillopt_sleep.redact import redact, redact_obj
from skillopt_sleep.types import Usage

__all__ = [
    "Budget", "BatchPolicy", "Client", "Deadline", "Limiter", "Models", "RetryPolicy", "Stats",
    "preflight", "run_together",
]

EvidenceSink = Callable[[str, Request, Completion], None]


@lru_cache(maxsize=512)
def _redact_cached(text: str) -> str:
    return redact(text)


def redact_request(request: Request) -> Request:
    """What leaves for a provider is redacted, whatever built the request (documents, tasks,
    model output fed back to the optimizer). The static system prefix repeats across calls,
    hence the cache."""
    system, user = _redact_cached(request.system), redact(request.user)
    payload = redact_obj(request.payload) if request.payload else request.payload
    if system is request.system and user is request.user and payload is request.payload:
        return request
    return replace(request, system=system, user=user, payload=payload)


@dataclass
class RetryPolicy:
    attempts: int = 5  # total tries per call, including the first
    base_delay: float = 1.0
    max_delay: float = 30.0
    jitter: float = 0.25  # +- fraction of the delay
    max_total_wait: float = 180.0  # seconds of backoff one call may accumulate
    sleep: Callable[[float], None] | None = None  # None: wait on the client's Deadline (cancellable)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds before try ``attempt + 1``: the provider's Retry-After when it gave one."""
        if retry_after is not None and retry_after >= 0:
            return float(retry_after)
        delay = min(self.max_delay, self.base_delay * (2**attempt))
        return max(0.0, delay * (1 + random.uniform(-self.jitter, self.jitter)))


class Limiter:
    """One concurrency limit shared by every Client of a night (target and optimizer)."""

    def __init__(self, limit: int):
        self.limit = max(1, int(limit))
        self._sem = threading.BoundedSemaphore(self.limit)

    def __enter__(self) -> Limiter:
        self._sem.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sem.release()


@dataclass
class Stats:
    calls: Counter = field(default_factory=Counter)  # purpose -> provider calls made
    cache_hits: int = 0
    retries: int = 0
    usage: Usage = field(default_factory=Usage)
    batched: int = 0  # calls answered through a provider batch (billed at half price)
    batch_fallbacks: list[str] = field(default_factory=list)  # why a batch fell back to direct calls
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, purpose: str, completion: Completion) -> None:
        with self.lock:
            self.calls[purpose] += 1
            self.usage = self.usage + completion.usage


class Client:
    """A backend plus the shared layers. Thread-safe.

    ``budget`` (shared by both roles, like ``limiter``) is checked before every call and raises
    ``BudgetExceeded``; ``batch`` lets ``map(..., bulk=True)`` use the provider's batch API when the
    backend has one.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        limiter: Limiter | None = None,
        retry: RetryPolicy | None = None,
        cache: bool = True,
        evidence: EvidenceSink | None = None,
        role: str = "target",
        stats: Stats | None = None,
        budget: Budget | None = None,
        batch: bool = False,
        batch_policy: BatchPolicy | None = None,
        deadline: Deadline | None = None,
        call_timeout: float | None = None,
    ):
        self.backend = backend
        self.limiter = limiter or Limiter(4)
        self.retry = retry or RetryPolicy()
        self.role = role
        self.stats = stats or Stats()
        self.budget = budget
        self.batch = batch
        self.batch_policy = batch_policy or BatchPolicy()
        self.deadline = deadline or Deadline()
        self.call_timeout = call_timeout  # seconds per call, across all its tries
        self.calls_progress: Any = None  # a progress.CallProgress while a night shows progress
        self._evidence = evidence
        self._cache: dict[str, Completion] | None = {} if cache else None
        self._cache_lock = threading.Lock()
        self._inflight: dict[str, threading.Event] = {}

    @property
    def id(self) -> str:
        return self.backend.id

    @property
    def supports_batch(self) -> bool:
        return self.batch and isinstance(self.backend, BatchBackend)

    def complete(self, request: Request) -> Completion:
        """One call; raises ProviderError when it fails for good. Never returns an error."""
        return self._complete(redact_request(request))

    def _complete(self, request: Request, expected: bool = False) -> Completion:
        """``complete`` for a request that is already redacted (``expected``: ``map`` already
        counted it for the progress line)."""
        progress = self.calls_progress
        if progress is not None and not expected:
            progress.expect(1)
        try:
            key = self._key(request)
            while True:
                hit = self._cached(key)
                if hit is not None:
                    return hit
                leader, finished = self._claim(key)
                if leader:
                    break
                finished.wait()  # the same request is in flight: share its answer
            try:
                completion = self._call_with_retry(request)
                self._store(key, completion)
                return completion
            finally:
                self._release(key, finished)
        finally:
            if progress is not None:
                progress.done()

    def map(self, requests: Sequence[Request], *, bulk: bool = False) -> list[Completion]:
        """Run many calls concurrently (bounded by the shared limiter), results in order.

        ``bulk`` marks a bulk phase (dream rollouts, val evaluations); with batch mode on and a
        backend that has a batch API, its uncached requests go as one provider batch, and
        whatever the batch does not deliver is called directly.
        """
        requests = [redact_request(r) for r in requests]
        if not requests:
            return []
        results: list[Completion | None] = [self._cached(self._key(r)) for r in requests]
        pending = [i for i, r in enumerate(results) if r is None]
        if bulk and self.supports_batch and len(pending) > 1:
            for i, completion in enumerate(run_batch(self, list(requests), pending)):
                if completion is not None:
                    results[i] = completion
                    self._store(self._key(requests[i]), completion)
            pending = [i for i in pending if results[i] is None]
        if self.calls_progress is not None:
            self.calls_progress.expect(len(pending))
        if len(pending) == 1:
            results[pending[0]] = self._complete(requests[pending[0]], True)
        elif pending:
            with ThreadPoolExecutor(max_workers=min(len(pending), self.limiter.limit)) as pool:
                futures = {i: pool.submit(self._complete, requests[i], True) for i in pending}
                try:
                    for i, future in futures.items():
                        results[i] = future.result()
                except BaseException:
                    for future in futures.values():
                        future.cancel()
                    raise
        return [r for r in results if r is not None]

    # -- cache ------------------------------------------------------------------------------

    def _key(self, request: Request) -> str | None:
        if self._cache is None or request.purpose == "preflight":
            return None
        return request.cache_key(self.backend.id)

    def _cached(self, key: str | None) -> Completion | None:
        if key is None:
            return None
        with self._cache_lock:
            hit = self._cache.get(key) if self._cache is not None else None
        if hit is not None:
            with self.stats.lock:
                self.stats.cache_hits += 1
        return hit

    def _claim(self, key: str | None) -> tuple[bool, threading.Event]:
        """(True, event) when this thread is to make the call for ``key``; (False, event) when an
        identical request is already in flight (wait on the event, then look in the cache again:
        if that call failed, the cache is still empty and the waiter calls itself)."""
        if key is None:
            return True, threading.Event()
        with self._cache_lock:
            running = self._inflight.get(key)
            if running is not None:
                return False, running
            self._inflight[key] = event = threading.Event()
            return True, event

    def _release(self, key: str | None, finished: threading.Event) -> None:
        if key is not None:
            with self._cache_lock:
                self._inflight.pop(key, None)
        finished.set()

    def _store(self, key: str | None, completion: Completion) -> None:
        if key is not None and self._cache is not None:
            with self._cache_lock:
                self._cache[key] = completion

    # -- budget and accounting (also used by batching.run_batch) ------------------------------

    @property
    def price(self) -> Price | None:
        """The backend's price; a backend without the attribute (the simulator) is free."""
        return getattr(self.backend, "price", FREE)

    def reserve(self, request: Request) -> Reservation | None:
        if self.budget is None:
            return None
        return self.budget.reserve(request, self.price, self.backend.id)

    def settle(self, reservation: Reservation | None, completion: Completion, *, discount: float = 1.0) -> None:
        if self.budget is not None and reservation is not None:
            self.budget.settle(reservation, completion.usage, discount=discount, cost=completion.cost_usd)

    def release(self, reservation: Reservation | None) -> None:
        if self.budget is not None and reservation is not None:
            self.budget.release(reservation)

    def record(self, request: Request, completion: Completion, *, batched: bool = False) -> None:
        self.stats.record(request.purpose, completion)
        if batched:
            with self.stats.lock:
                self.stats.batched += 1
        if self._evidence is not None:
            self._evidence(self.role, request, completion)

    def note_batch_fallback(self, reason: str) -> None:
        with self.stats.lock:
            self.stats.batch_fallbacks.append(reason)

    # -- the failure policy -----------------------------------------------------------------

    def _stop_if_over(self) -> None:
        reason = self.deadline.stop_reason()
        if reason is not None:
            cause = self.deadline.cause
            if isinstance(cause, ProviderError):  # every stopped call reports the root cause
                raise ProviderError(cause.backend_id, cause.kind, cause.message)
            kind = "cancelled" if self.deadline.cancelled else "deadline"
            raise ProviderError(self.backend.id, kind, reason)

    def _within(self, request: Request, limit: float | None) -> Completion:
        """``backend.complete`` bounded by ``limit`` seconds and the night's deadline/cancel.

        Without any limit the call runs inline. Otherwise it runs in a daemon thread that is
        abandoned when time is up (see the module docstring)."""
        night_left = self.deadline.remaining()
        if night_left is not None:
            limit = night_left if limit is None else min(limit, night_left)
        if limit is None and self.call_timeout is None and self.deadline.seconds is None:
            return self.backend.complete(request)
        box: dict[str, object] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["completion"] = self.backend.complete(request)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=work, name=f"skillopt-call-{request.purpose}", daemon=True).start()
        ends = None if limit is None else time.monotonic() + limit
        while not done.wait(0.05 if ends is None else max(0.0, min(0.05, ends - time.monotonic()))):
            if self.deadline.cancelled:
                return Completion(text="", error="cancelled", error_message=self.deadline.reason)
            if ends is not None and time.monotonic() >= ends:
                return Completion(text="", error="timeout",
                                  error_message=f"no complete answer within {limit:g}s")
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return box["completion"]  # type: ignore[return-value]

    def _call_once(self, request: Request, limit: float | None = None) -> Completion:
        with self.limiter:
            self._stop_if_over()  # waiting for a slot can outlast the night
            reservation = self.reserve(request)  # BudgetExceeded propagates: the night ends
            started = time.monotonic()
            try:
                completion = self._within(request, limit)
            except ProviderError:
                self.release(reservation)
                raise
            except Exception as exc:  # a transport bug must not look like an answer
                completion = Completion(text="", error="unknown", error_message=repr(exc))
            if not completion.latency:
                completion.latency = time.monotonic() - started
            self.settle(reservation, completion)
        if completion.ok and not completion.text.strip() and not completion.tools_called:
            completion.error, completion.error_message = "empty", "empty completion"
        if not completion.ok:
            completion.text = ""  # whatever came with an error is not an answer
        self.record(request, completion)
        return completion

    def _call_with_retry(self, request: Request) -> Completion:
        try:
            return self._retrying(request)
        except ProviderError as exc:
            # one call failing for good ends the night: stop every other call of it too
            self.deadline.cancel(f"another call failed ({exc.backend_id}: {exc.kind})", exc)
            raise

    def _call_limit(self, request: Request) -> float | None:
        if request.purpose == "preflight":
            return PREFLIGHT_TIMEOUT if self.call_timeout is None else min(self.call_timeout, PREFLIGHT_TIMEOUT)
        return self.call_timeout

    def _retrying(self, request: Request) -> Completion:
        waited = 0.0
        tries = 0
        limit = self._call_limit(request)
        ends = None if limit is None else time.monotonic() + limit
        while True:
            self._stop_if_over()
            left = None if ends is None else ends - time.monotonic()
            if left is not None and left <= 0:
                raise ProviderError(self.backend.id, "timeout",
                                    f"no answer within the call's {limit:g}s limit ({tries} tries)")
            completion = self._call_once(request, left)
            tries += 1
            if completion.ok:
                return completion
            if completion.error == "cancelled":
                self._stop_if_over()
            if completion.error not in TRANSIENT_ERRORS or tries >= self.retry.attempts:
                break
            delay = self.retry.delay(tries - 1, completion.retry_after)
            if waited + delay > self.retry.max_total_wait:
                break
            if ends is not None and time.monotonic() + delay >= ends:
                break  # the wait alone would use up the call's time
            with self.stats.lock:
                self.stats.retries += 1
            if self.retry.sleep is None:
                self.deadline.wait(delay)  # a cancel or the night's deadline cuts the wait short
            else:
                self.retry.sleep(delay)
            waited += delay
        message = completion.error_message or "failed"
        if completion.error in TRANSIENT_ERRORS:
            message += f" (gave up after {tries} tries, {waited:.0f}s of backoff)"
            if completion.retry_after is not None:
                message += f"; provider asked to wait {completion.retry_after:.0f}s"
        raise ProviderError(self.backend.id, completion.error or "unknown", message)


PREFLIGHT_TIMEOUT = 60.0  # seconds for the preflight call, all tries: a dead server shows fast


def preflight(client: Client) -> None:
    """One tiny call before a night spends anything; raises ProviderError with one clear line
    naming the provider and the cause (missing key, unknown model, unreachable server…)."""
    request = Request(
        purpose="preflight", system="", user="Reply with the single word OK.",
        max_tokens=16, temperature=0.0,
    )
    try:
        client.complete(request)
    except ProviderError as exc:
        cause = " ".join(exc.message.split())
        raise ProviderError(exc.backend_id, exc.kind, f"preflight failed: {cause}") from None


@dataclass
class Models:
    """The two roles of a night. They may share a backend, a limiter and stats."""

    target: Client
    optimizer: Client

    @property
    def stats(self) -> list[Stats]:
        if self.target.stats is self.optimizer.stats:
            return [self.target.stats]
        return [self.target.stats, self.optimizer.stats]

    def calls(self) -> dict[str, int]:
        total: Counter = Counter()
        for s in self.stats:
            total.update(s.calls)
        return dict(total)

    @property
    def deadline(self) -> Deadline:
        return self.target.deadline

    def close(self, reason: str = "the night ended") -> None:
        """Cancel whatever is still in flight and close the backends' connections (a drip or a
        hang held by an abandoned call ends with them)."""
        self.target.deadline.cancel(reason)
        self.optimizer.deadline.cancel(reason)
        for backend in {id(c.backend): c.backend for c in (self.target, self.optimizer)}.values():
            close = getattr(backend, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - closing is best effort at the end of a night
                    pass

    def usage(self) -> Usage:
        total = Usage()
        for s in self.stats:
            total = total + s.usage
        return total


def run_together(*thunks: Callable[[], object]) -> list[object]:
    """Run independent phases at once (each phase still obeys the shared limiter)."""
    if len(thunks) == 1:
        return [thunks[0]()]
    with ThreadPoolExecutor(max_workers=len(thunks)) as pool:
        futures = [pool.submit(t) for t in thunks]
        return [f.result() for f in futures]


def flatten(items: Iterable[Iterable[object]]) -> list[object]:
    return [x for group in items for x in group]
