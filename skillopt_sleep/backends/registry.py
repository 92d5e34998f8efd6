"""Backend registry: a spec string such as ``sim:follow=0.9,seed=7`` or ``anthropic`` names a
transport and its options; ``make_backend`` builds it.

Adding a backend is adding a module with a ``from_options(options, model) -> Backend`` function and
one line in ``_REGISTRY``. A backend that runs a CLI names its default binary in a module constant
``COMMAND``; one that needs an API key names the environment variable in ``KEY_ENV``: ``backend =
"auto"`` and the scheduler's preflight read them through ``cli_command`` and ``key_env``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from skillopt_sleep.backends.base import Backend


_REGISTRY = {
    "sim": "skillopt_sleep.backends.sim.backend",
    "anthropic": "skillopt_sleep.backends.anthropic_api",
    "openai": "skillopt_sleep.backends.openai_api",
    "claude-cli": "skillopt_sleep.backends.claude_cli",
    "codex-cli": "skillopt_sleep.backends.codex_cli",
}
BACKEND_NAMES = tuple(_REGISTRY)


class BackendSpecError(ValueError):
    pass


def _coerce(value: str) -> Any:
    low = value.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"sim:follow=0.9,seed=7"`` -> ``("sim", {"follow": 0.9, "seed": 7})``."""
    spec = (spec or "").strip()
    if not spec:
        raise BackendSpecError("empty backend spec")
    name, _, rest = spec.partition(":")
    name = name.strip().lower()
    if name not in _REGISTRY:
        raise BackendSpecError(f"unknown backend {name!r}; choose one of: {', '.join(BACKEND_NAMES)}")
    options: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise BackendSpecError(f"backend option {part!r} is not key=value")
        options[key.strip().lower()] = _coerce(value.strip())
    return name, options


def spec_options(
    spec: str, backend_options: Mapping[str, Mapping[str, Any]] | None = None
) -> tuple[str, dict[str, Any]]:
    """The backend ``spec`` names and the options it will be built with: the config's defaults
    for that backend (``backend_options``, keyed by backend name as in
    ``[backend_options.anthropic]``), overridden by the spec's own."""
    name, options = parse_spec(spec)
    merged = dict((backend_options or {}).get(name) or {})
    merged.update(options)
    return name, merged


def make_backend(
    spec: str, *, model: str | None = None, backend_options: Mapping[str, Mapping[str, Any]] | None = None
) -> Backend:
    """Build a backend from a spec, with the config's defaults (see ``spec_options``)."""
    name, merged = spec_options(spec, backend_options)
    module = importlib.import_module(_REGISTRY[name])
    try:
        return module.from_options(merged, model)
    except (TypeError, ValueError) as exc:
        raise BackendSpecError(f"backend {name}: {exc}") from None


def _declared(name: str, constant: str) -> str | None:
    return getattr(importlib.import_module(_REGISTRY[name]), constant, None) if name in _REGISTRY else None


def cli_command(name: str) -> str | None:
    """The binary backend ``name`` runs by default, or None when it runs no CLI."""
    return _declared(name, "COMMAND")


def key_env(name: str) -> str | None:
    """The environment variable backend ``name`` reads its API key from, or None when it needs none."""
    return _declared(name, "KEY_ENV")
