"""Backend registry: a spec string such as ``sim:follow=0.9,seed=7`` or ``anthropic`` names a
transport and its options; ``make_backend`` builds it.

Adding a backend is adding a module with a ``from_options(options, model) -> Backend`` function and
one line in ``backend_spec.BACKEND_MODULES``. A backend that runs a CLI names its default binary in a module constant
``COMMAND``; one that needs an API key names the environment variable in ``KEY_ENV``: ``backend =
"auto"`` and the scheduler's preflight read them through ``cli_command`` and ``key_env``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from skillopt_sleep.backend_spec import (  # re-exported: the spec is read below the backends
    BACKEND_MODULES,
    BACKEND_NAMES,
    BackendSpecError,
    parse_spec,
    spec_options,
)
from skillopt_sleep.backends.base import Backend

__all__ = ["BACKEND_NAMES", "BackendSpecError", "cli_command", "key_env", "make_backend", "parse_spec", "spec_options"]


def make_backend(
    spec: str, *, model: str | None = None, backend_options: Mapping[str, Mapping[str, Any]] | None = None
) -> Backend:
    """Build a backend from a spec, with the config's defaults (see ``spec_options``)."""
    name, merged = spec_options(spec, backend_options)
    module = importlib.import_module(BACKEND_MODULES[name])
    try:
        return module.from_options(merged, model)
    except (TypeError, ValueError) as exc:
        raise BackendSpecError(f"backend {name}: {exc}") from None


def _declared(name: str, constant: str) -> str | None:
    return getattr(importlib.import_module(BACKEND_MODULES[name]), constant, None) if name in BACKEND_MODULES else None


def cli_command(name: str) -> str | None:
    """The binary backend ``name`` runs by default, or None when it runs no CLI."""
    return _declared(name, "COMMAND")


def key_env(name: str) -> str | None:
    """The environment variable backend ``name`` reads its API key from, or None when it needs none."""
    return _declared(name, "KEY_ENV")
