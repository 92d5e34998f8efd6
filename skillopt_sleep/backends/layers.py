"""Behaviour written once around any backend: retry, per-sample cache, one global concurrency
limit, call accounting and the evidence log.

``Client`` plays the role of httpx's client around a transport: the engine only ever talks to a
Client, never to a Backend directly.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from skillopt_sleep.backends.base import (
    TRANSIENT_ERRORS,
    Backend,
    Completion,
    ProviderError,
    Request,
)
from skillopt_sleep.types import Usage

EvidenceSink = Callable[[str, Request, Completion], None]


@dataclass
class RetryPolicy:
    attempts: int = 5  # total tries per call, including the first
    base_delay: float = 1.0
    max_delay: float = 30.0
    jitter: float = 0.25  # +- fraction of the delay
    sleep: Callable[[float], None] = time.sleep

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_delay * 4)
        delay = min(self.max_delay, self.base_delay * (2**attempt))
        return max(0.0, delay * (1 + random.uniform(-self.jitter, self.jitter)))


class Limiter:
    """One concurrency limit shared by every Client of a night (target and optimizer)."""

    def __init__(self, limit: int):
        self.limit = max(1, int(limit))
        self._sem = threading.BoundedSemaphore(self.limit)

    def __enter__(self) -> "Limiter":
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
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, purpose: str, completion: Completion) -> None:
        with self.lock:
            self.calls[purpose] += 1
            self.usage = self.usage + completion.usage


class Client:
    """A backend plus the shared layers. Thread-safe."""

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
    ):
        self.backend = backend
        self.limiter = limiter or Limiter(4)
        self.retry = retry or RetryPolicy()
        self.role = role
        self.stats = stats or Stats()
        self._evidence = evidence
        self._cache: dict[str, Completion] | None = {} if cache else None
        self._cache_lock = threading.Lock()

    @property
    def id(self) -> str:
        return self.backend.id

    def complete(self, request: Request) -> Completion:
        """One call; raises ProviderError when it fails for good. Never returns an error."""
        key = request.cache_key(self.backend.id) if self._cache is not None else None
        if key is not None:
            with self._cache_lock:
                hit = self._cache.get(key)
            if hit is not None:
                with self.stats.lock:
                    self.stats.cache_hits += 1
                return hit
        completion = self._call_with_retry(request)
        if key is not None:
            with self._cache_lock:
                self._cache[key] = completion
        return completion

    def map(self, requests: Sequence[Request], *, bulk: bool = False) -> list[Completion]:
        """Run many calls concurrently (bounded by the shared limiter), results in order.

        ``bulk`` marks a bulk phase (dream rollouts, val evaluations) that may go through a
        provider's batch API when batch mode is on.
        """
        if not requests:
            return []
        if len(requests) == 1:
            return [self.complete(requests[0])]
        with ThreadPoolExecutor(max_workers=min(len(requests), self.limiter.limit)) as pool:
            futures = [pool.submit(self.complete, r) for r in requests]
            return [f.result() for f in futures]

    def _call_with_retry(self, request: Request) -> Completion:
        last: Completion | None = None
        for attempt in range(self.retry.attempts):
            with self.limiter:
                started = time.monotonic()
                try:
                    completion = self.backend.complete(request)
                except ProviderError:
                    raise
                except Exception as exc:  # a transport bug must not look like an answer
                    completion = Completion(text="", error="unknown", error_message=repr(exc))
                if not completion.latency:
                    completion.latency = time.monotonic() - started
            if completion.ok and not completion.text.strip():
                completion.error, completion.error_message = "empty", "empty completion"
            self.stats.record(request.purpose, completion)
            if self._evidence is not None:
                self._evidence(self.role, request, completion)
            if completion.ok:
                return completion
            last = completion
            if completion.error not in TRANSIENT_ERRORS or attempt + 1 >= self.retry.attempts:
                break
            with self.stats.lock:
                self.stats.retries += 1
            self.retry.sleep(self.retry.delay(attempt, completion.retry_after))
        assert last is not None
        raise ProviderError(self.backend.id, last.error or "unknown", last.error_message or "failed")


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
