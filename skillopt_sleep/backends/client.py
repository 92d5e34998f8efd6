"""The client around any backend: redaction, per-sample cache, budget, batch mode, call accounting
and the evidence log, with the failure policy of ``retry.py`` and the limits of ``limits.py``.

``Client`` plays the role of httpx's client around a transport: the engine only ever talks to a
Client, never to a Backend directly.

Time (``deadline.py``, ``limits.py``): each call has a total wall-time limit across its tries
(``call_timeout``), and every client of a night shares one ``Deadline``: when it passes, or when
any call fails for good, calls in flight return at once, nothing retries and nothing new starts.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any
from collections.abc import Callable, Sequence

from skillopt_sleep.backends.base import (
    AnswerPending,
    Backend,
    BatchBackend,
    BatchError,
    Completion,
    ProviderError,
    Request,
)
from skillopt_sleep.backends.batching import BATCH_DISCOUNT, BatchPolicy, run_batch
from skillopt_sleep.backends.budget import Budget, Reservation
from skillopt_sleep.backends.deadline import Deadline
from skillopt_sleep.backends.limits import Limiter, call_within
from skillopt_sleep.backends.retry import RetryPolicy, call_with_retry, stop_if_over
from skillopt_sleep.backends.stores import CallStore
from skillopt_sleep.backends.truncation import with_more_room
from skillopt_sleep.redact import redact, redact_obj
from skillopt_sleep.sanitize import clean_obj, clean_text
from skillopt_sleep.types import Usage

EvidenceSink = Callable[[str, Request, Completion], None]

PREFLIGHT_TIMEOUT = 60.0  # seconds for the preflight call, all tries: a dead server shows fast


def _outgoing(text: str) -> str:
    """Clean first (removing a control character can join a secret back together), then redact."""
    return redact(clean_text(text))


@lru_cache(maxsize=512)
def _outgoing_cached(text: str) -> str:
    return _outgoing(text)


def redact_request(request: Request) -> Request:
    """What leaves for a provider is redacted and free of control characters and escape
    sequences, whatever built the request (documents, transcript text, model output fed back to
    the optimizer). The static system prefix repeats across calls, hence the cache."""
    system, user = _outgoing_cached(request.system), _outgoing(request.user)
    payload = redact_obj(clean_obj(request.payload)) if request.payload else request.payload
    if system == request.system and user == request.user and payload == request.payload:
        return request
    return replace(request, system=system, user=user, payload=payload)


def redact_completion(completion: Completion) -> Completion:
    """What a model answers enters the engine redacted: a secret in a reply (echoed, made up, or
    fed back from a journal) never becomes a rule, a rationale, a task or a report line."""
    text = redact(completion.text) if completion.text else completion.text
    message = redact(completion.error_message) if completion.error_message else completion.error_message
    if text == completion.text and message == completion.error_message:
        return completion
    return replace(completion, text=text, error_message=message)


@dataclass
class Stats:
    calls: Counter = field(default_factory=Counter)  # purpose -> provider calls made
    cache_hits: int = 0
    reused: int = 0  # answered by a persistent store (an earlier night, an interrupted night)
    retries: int = 0
    usage: Usage = field(default_factory=Usage)
    batched: int = 0  # calls answered through a provider batch (billed at half price)
    truncation_retries: int = 0  # calls repeated with a larger output cap (``truncation.py``)
    left_out: Counter = field(default_factory=Counter)  # "purpose: why" -> results not scored
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
        stores: Sequence[CallStore] = (),
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
        self.stores = list(stores)  # persistent answers beyond this night's memory (``stores.py``)

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
                hit = self._cached(key, request)
                if hit is not None:
                    return hit
                leader, finished = self._claim(key)
                if leader:
                    break
                finished.wait()  # the same request is in flight: share its answer
            try:
                completion = self._with_more_room(request, self._call_with_retry(request))
                self._store(key, completion, request)
                return completion
            finally:
                self._unclaim(key, finished)
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
        results: list[Completion | None] = [self._cached(self._key(r), r) for r in requests]
        pending = [i for i, r in enumerate(results) if r is None]
        if bulk and self.supports_batch and len(pending) > 1:
            for i, completion in self._batch(requests, pending).items():
                results[i] = completion = self._with_more_room(requests[i], completion)
                self._store(self._key(requests[i]), completion, requests[i])
            pending = [i for i in pending if results[i] is None]
        if self.calls_progress is not None:
            self.calls_progress.expect(len(pending))
        if len(pending) == 1:
            results[pending[0]] = self._complete(requests[pending[0]], True)
        elif pending:
            with ThreadPoolExecutor(max_workers=min(len(pending), self.limiter.limit)) as pool:
                futures = {i: pool.submit(self._complete, requests[i], True) for i in pending}
                waiting: list[AnswerPending] = []
                try:
                    for i, future in futures.items():
                        try:
                            results[i] = future.result()
                        except AnswerPending as exc:  # the others still write their prompts
                            waiting.append(exc)
                except BaseException:
                    for future in futures.values():
                        future.cancel()
                    raise
                if waiting:
                    raise AnswerPending(waiting[0].key, sum(w.count for w in waiting))
        return [r for r in results if r is not None]

    def _with_more_room(self, request: Request, completion: Completion) -> Completion:
        """A reply cut off at the output cap is asked for once more with a larger cap."""
        roomier = with_more_room(request, self.backend) if completion.truncated else None
        if roomier is None:
            return completion
        with self.stats.lock:
            self.stats.truncation_retries += 1
        return self._call_with_retry(roomier)

    def leave_out(self, reason: str, n: int = 1) -> None:
        """Count results a caller could not score (``reason``: "purpose: why"), for the report."""
        with self.stats.lock:
            self.stats.left_out[reason] += n

    # -- cache ------------------------------------------------------------------------------

    def _key(self, request: Request) -> str | None:
        if self._cache is None or request.purpose == "preflight":
            return None
        return request.cache_key(self.backend.id)

    def _cached(self, key: str | None, request: Request) -> Completion | None:
        if key is None:
            return None
        with self._cache_lock:
            hit = self._cache.get(key) if self._cache is not None else None
        if hit is not None:
            with self.stats.lock:
                self.stats.cache_hits += 1
            return hit
        for store in self.stores:
            hit = store.get(key, request)
            if hit is not None:
                hit = redact_completion(hit)  # a stored answer is read back like a fresh one
                with self._cache_lock:
                    if self._cache is not None:
                        self._cache[key] = hit
                with self.stats.lock:
                    self.stats.reused += 1
                reused = getattr(self._evidence, "reused", None)  # the night's log lists these too
                if callable(reused):
                    reused(self.role, request, hit)
                return hit
        return None

    def has(self, request: Request) -> bool:
        """Whether ``complete(request)`` would be answered without a provider call: by this
        night's memory or a store that can say so (``CallStore.has``). Nothing is counted or
        copied: a capped night plans its draws with it (``evaluator.Evaluator.cost``)."""
        request = redact_request(request)
        key = self._key(request)
        if key is None:
            return False
        with self._cache_lock:
            if self._cache is not None and key in self._cache:
                return True
        for store in self.stores:
            has = getattr(store, "has", None)
            if callable(has) and has(key, request):
                return True
        return False

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

    def _unclaim(self, key: str | None, finished: threading.Event) -> None:
        if key is not None:
            with self._cache_lock:
                self._inflight.pop(key, None)
        finished.set()

    def _store(self, key: str | None, completion: Completion, request: Request) -> None:
        if key is not None and self._cache is not None:
            with self._cache_lock:
                self._cache[key] = completion
            for store in self.stores:
                store.put(key, request, completion)

    # -- budget and accounting --------------------------------------------------------------

    def _reserve(self, request: Request) -> Reservation | None:
        if self.budget is None:
            return None
        return self.budget.reserve(request, self.backend.price, self.backend.id)

    def _settle(self, reservation: Reservation | None, completion: Completion, *, discount: float = 1.0) -> None:
        if self.budget is not None and reservation is not None:
            self.budget.settle(reservation, completion.usage, discount=discount, cost=completion.cost_usd)

    def _release(self, reservation: Reservation | None) -> None:
        if self.budget is not None and reservation is not None:
            self.budget.release(reservation)

    def _record(self, request: Request, completion: Completion, *, batched: bool = False) -> None:
        self.stats.record(request.purpose, completion)
        if batched:
            with self.stats.lock:
                self.stats.batched += 1
        if self._evidence is not None:
            self._evidence(self.role, request, completion)

    def _note_batch_fallback(self, reason: str) -> None:
        with self.stats.lock:
            self.stats.batch_fallbacks.append(reason)

    # -- batch mode -------------------------------------------------------------------------

    def _batch(self, requests: list[Request], pending: list[int]) -> dict[int, Completion]:
        """The completions of ``requests[i]``, i in ``pending``, that one provider batch delivered.

        The whole batch must fit the budget before anything is sent; items billed at the batch
        discount; whatever is missing (or the whole batch, on ``BatchError``) is left to direct
        calls."""
        assert isinstance(self.backend, BatchBackend)
        delivered: dict[int, Completion] = {}
        reservations: dict[int, Reservation | None] = {}
        try:
            for i in pending:
                reservations[i] = self._reserve(requests[i])
            ids = {f"r{i}": i for i in pending}
            try:
                results = run_batch(
                    self.backend,
                    [(cid, requests[i]) for cid, i in ids.items()],
                    policy=self.batch_policy,
                    slot=self.limiter,
                    deadline=self.deadline,
                    sleep=lambda seconds: self.retry.wait(seconds, self.deadline),
                )
            except BatchError as exc:
                self._note_batch_fallback(str(exc))
                return delivered
            for cid, i in ids.items():
                completion = results.get(cid)
                if completion is None:
                    continue
                completion = redact_completion(completion)
                self._settle(reservations.pop(i), completion, discount=BATCH_DISCOUNT)
                if completion.ok and completion.text.strip():
                    self._record(requests[i], completion, batched=True)
                    delivered[i] = completion
            missing = len(pending) - len(delivered)
            if missing:
                self._note_batch_fallback(f"{missing} of {len(pending)} batch items unfinished")
            return delivered
        finally:
            for reservation in reservations.values():
                self._release(reservation)

    # -- one call, and its retries ----------------------------------------------------------

    def _call_once(self, request: Request, limit: float | None = None) -> Completion:
        with self.limiter:
            stop_if_over(self.deadline, self.backend.id)  # waiting for a slot can outlast the night
            reservation = self._reserve(request)  # BudgetExceeded propagates: the night ends
            started = time.monotonic()
            try:
                completion = call_within(
                    lambda: self.backend.complete(request),
                    limit,
                    self.deadline,
                    name=f"skillopt-call-{request.purpose}",
                )
            except (ProviderError, AnswerPending):
                self._release(reservation)
                raise
            except Exception as exc:  # a transport bug must not look like an answer
                completion = Completion(text="", error="unknown", error_message=repr(exc))
            if not completion.latency:
                completion.latency = time.monotonic() - started
            self._settle(reservation, completion)
        if completion.ok and not completion.text.strip() and not completion.tools_called and not completion.truncated:
            completion.error, completion.error_message = "empty", "empty completion"
        if not completion.ok:
            completion.text = ""  # whatever came with an error is not an answer
        completion = redact_completion(completion)
        self._record(request, completion)
        return completion

    def _call_limit(self, request: Request) -> float | None:
        if request.purpose == "preflight":
            return PREFLIGHT_TIMEOUT if self.call_timeout is None else min(self.call_timeout, PREFLIGHT_TIMEOUT)
        return self.call_timeout

    def _count_retry(self) -> None:
        with self.stats.lock:
            self.stats.retries += 1

    def _call_with_retry(self, request: Request) -> Completion:
        try:
            return call_with_retry(
                lambda left: self._call_once(request, left),
                policy=self.retry,
                deadline=self.deadline,
                backend_id=self.backend.id,
                limit=self._call_limit(request),
                on_retry=self._count_retry,
            )
        except ProviderError as exc:
            # one call failing for good ends the night: stop every other call of it too
            self.deadline.cancel(f"another call failed ({exc.backend_id}: {exc.kind})", exc)
            raise


def preflight(client: Client) -> None:
    """One tiny call before a night spends anything; raises ProviderError with one clear line
    naming the provider and the cause (missing key, unknown model, unreachable server…)."""
    request = Request(
        purpose="preflight",
        system="",
        user="Reply with the single word OK.",
        max_tokens=16,
        temperature=0.0,
    )
    try:
        client.complete(request)
    except ProviderError as exc:
        cause = " ".join(exc.message.split())
        raise ProviderError(exc.backend_id, exc.kind, f"preflight failed: {cause}") from None
