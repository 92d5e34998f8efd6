"""The one primitive every model transport implements: ``complete(Request) -> Completion``.

Prompt rendering, retries, caching, budgets, concurrency and the evidence log are written once
in ``client.py`` (with ``retry.py`` and ``limits.py``) and wrap any backend; a backend only moves
one request over its wire, and declares what it costs and whether a real model answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from skillopt_sleep.backends.pricing import Price
from skillopt_sleep.types import Usage

# Error kinds a Completion may carry. Transient ones are retried; the rest fail fast.
TRANSIENT_ERRORS = frozenset({"rate_limit", "server", "timeout", "connection", "empty", "overloaded"})
# "unavailable": the transport itself is missing (a CLI not on PATH, an SDK not installed).
FATAL_ERRORS = frozenset({"auth", "model", "bad_request", "budget", "unavailable", "unknown"})


@dataclass
class Request:
    """One model call.

    ``purpose`` says which step of the night makes it: ``attempt``, ``judge``, ``reflect``,
    ``mine``, ``vary`` (dream variants of train tasks), ``rank``, ``refine`` (``lookahead.py``) or ``preflight`` (call counts and the evidence log are kept by purpose; the
    simulator answers by it). ``system`` is the static prefix (documents + role instructions): identical across the tasks
    of one phase so providers can cache it. ``user`` is the per-call text. ``payload`` carries the
    same information in structured form for the offline simulator; real backends ignore it.
    """

    purpose: str
    system: str
    user: str
    max_tokens: int = 1024
    temperature: float = 1.0
    sample: int = 0
    payload: dict[str, Any] = field(default_factory=dict)
    json_schema: dict[str, Any] | None = None  # ask for schema-constrained JSON when supported
    # Tools a task's checks name: a backend that can declares them as stubs (calls are recorded in
    # ``Completion.tools_called``, never executed); see ``can_offer_tools``.
    tools: tuple[str, ...] = ()

    def cache_key(self, backend_id: str) -> str:
        import hashlib
        import json

        fields = [
            backend_id,
            self.purpose,
            self.system,
            self.user,
            self.max_tokens,
            self.temperature,
            self.sample,
            self.json_schema,
        ]
        if self.tools:
            fields.append(list(self.tools))
        blob = json.dumps(fields, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class Completion:
    text: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    latency: float = 0.0
    error: str | None = None  # an error kind (see TRANSIENT_ERRORS / FATAL_ERRORS) or None
    error_message: str = ""
    retry_after: float | None = None  # seconds, when the provider said so
    tools_called: list[str] = field(default_factory=list)
    cost_usd: float | None = None  # what the provider itself billed, when it says (claude -p does)
    # The model stopped at its output-token limit (Anthropic ``stop_reason: "max_tokens"``, Chat
    # ``finish_reason: "length"``, Responses ``status: "incomplete"``, the CLIs' own reports): the
    # text, if any, is a fragment. Never an error (retrying the same call cannot help) and never
    # an answer to score: the client retries once with a larger cap, callers leave it out.
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


@runtime_checkable
class Backend(Protocol):
    """A transport.

    ``id`` names backend + model (used in cache keys and reports). ``price`` is what its calls
    cost (``None``: unknown, so the cost budget cannot hold them; ``pricing.FREE`` for a backend
    that bills nothing). ``offline`` is True when no model answers at all (the simulator): its
    answers are not findings about a real model, which the night must say and never adopt unasked.
    """

    id: str
    price: Price | None
    offline: bool

    def complete(self, request: Request) -> Completion: ...


STUB_TOOL_DESCRIPTION = (
    "Declared for this task so a call to it can be recorded; in this replay it is not executed and returns nothing."
)


def can_offer_tools(backend: object, names: tuple[str, ...] | list[str]) -> bool:
    """Whether ``backend`` can offer the model these tools as stubs. A backend says so with a
    ``can_offer_tools(names)`` method; one without it (the CLI backends: the agent's own tools are
    all turned off) cannot, and a task that needs a tool call is not measurable on it."""
    if not names:
        return True
    check = getattr(backend, "can_offer_tools", None)
    return bool(check(tuple(names))) if callable(check) else False


class BatchError(RuntimeError):
    """A provider batch failed as a whole (submit, poll or download); callers fall back to direct
    calls for whatever is unfinished."""


@runtime_checkable
class BatchBackend(Protocol):
    """Optional: a backend that can run many requests through its provider's batch API.

    ``submit_batch`` takes ``(custom_id, request)`` pairs and returns a batch id;
    ``batch_status`` says "running", "ended" or "failed"; ``batch_results`` maps custom ids to
    Completions for the requests that finished (an errored item may be an error Completion or
    simply absent). Any of them may raise ``BatchError``.
    """

    id: str

    def submit_batch(self, items: list[tuple[str, Request]]) -> str: ...

    def batch_status(self, batch_id: str) -> str: ...

    def batch_results(self, batch_id: str) -> dict[str, Completion]: ...

    def cancel_batch(self, batch_id: str) -> None: ...


class ProviderError(RuntimeError):
    """A model call failed for good (after retries, or fatally). Ends the night loudly."""

    def __init__(self, backend_id: str, kind: str, message: str):
        self.backend_id = backend_id
        self.kind = kind
        self.message = message
        super().__init__(f"{backend_id}: {kind}: {message}")


class AnswerPending(RuntimeError):
    """No answer yet for this call, and none is coming during this run (``handoff.py``: the
    person's agent answers between runs). Not a failure: the client lets the other calls of the
    phase go on, then the night stops for the answers."""

    def __init__(self, key: str, count: int = 1):
        self.key = key
        self.count = count  # calls of the phase left waiting
        super().__init__(f"{count} call(s) wait for an answer")


class BudgetExceeded(RuntimeError):
    """A per-night token, cost or call limit would be crossed by the next call."""

    def __init__(self, limit: str, used: float, cap: float):
        self.limit = limit
        self.used = used
        self.cap = cap
        super().__init__(f"{limit} budget reached ({used:g} of {cap:g})")
