"""From a night's config to its two ``Models`` roles: backends built once, wrapped in Clients that
share one concurrency limit, one budget, one deadline and one set of stats.

The night asks this module for its models and asks the models (``Backend.offline``,
``Backend.price``) what they are; adding a backend or a layer changes nothing in the night.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from skillopt_sleep.backends import BackendSpecError, make_backend
from skillopt_sleep.backends.base import Backend
from skillopt_sleep.backends.budget import Budget
from skillopt_sleep.backends.client import Client, EvidenceSink, Stats
from skillopt_sleep.backends.deadline import Deadline
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.models import Models
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.backends.stores import CallStore
from skillopt_sleep.config import Config
from skillopt_sleep.errors import EXIT_USAGE, UserError

ROLES = ("target", "optimizer")


def build_models(
    config: Config,
    evidence: EvidenceSink | None = None,
    *,
    budget: Budget | None = None,
    stores: Sequence[CallStore] = (),
    wrap: Callable[[Backend], Backend] | None = None,
) -> Models:
    """Target and optimizer clients sharing one concurrency limit, budget, deadline and stats.

    Two roles with the same spec and model share one backend. A spec that does not parse is a
    ``UserError`` (usage) naming it. ``stores``: answers kept beyond the night's memory (an
    interrupted night's journal, the score cache), consulted by both roles. ``wrap``: put each
    built backend behind another (the estimate's stand-in: ``estimate.py``)."""
    limiter = Limiter(config.models.concurrency)
    stats = Stats()
    budget = budget or Budget(
        max_tokens=config.budgets.max_tokens, max_cost=config.budgets.max_cost_usd, max_calls=config.call_cap()
    )
    retry = RetryPolicy(attempts=config.models.retries, base_delay=config.models.retry_base_delay)
    built, notes = _backends(config, wrap)  # before the clock: building one can import an SDK
    deadline = Deadline(config.models.night_deadline)  # both roles: one clock, one cancel switch
    clients = {}
    for role in ROLES:
        key = (config.backend_for(role), config.model_for(role))
        clients[role] = Client(
            built[key],
            limiter=limiter,
            evidence=evidence,
            role=role,
            stats=stats,
            budget=budget,
            batch=config.models.batch,
            retry=retry,
            deadline=deadline,
            call_timeout=config.models.call_timeout,
            stores=stores,
        )
    return Models(target=clients["target"], optimizer=clients["optimizer"], notes=notes)


def _backends(
    config: Config, wrap: Callable[[Backend], Backend] | None
) -> tuple[dict[tuple[str, str | None], Backend], list[str]]:
    """Each distinct (spec, model) of the roles built once, and what building them cost worth
    telling (``startup_notes``: a slow SDK import is the machine's stall, not the provider's)."""
    built: dict[tuple[str, str | None], Backend] = {}
    notes: list[str] = []
    for role in ROLES:
        key = (config.backend_for(role), config.model_for(role))
        if key in built:
            continue
        try:
            backend = make_backend(key[0], model=key[1], backend_options=config.models.backend_options)
        except BackendSpecError as exc:
            raise UserError(f"--backend: {exc}", EXIT_USAGE) from None
        startup = getattr(backend, "startup_notes", None)
        notes.extend(startup() if callable(startup) else [])
        built[key] = wrap(backend) if wrap is not None else backend
    return built, notes
