"""A backend spec string, read: ``sim:follow=0.9,seed=7`` or ``anthropic`` names a backend and its
options. The names and their modules are listed here, below the backends themselves, so the config
can check a setting without importing a backend (``backends/registry.py`` builds one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

BACKEND_MODULES = {
    "sim": "skillopt_sleep.backends.sim.backend",
    "anthropic": "skillopt_sleep.backends.anthropic_api",
    "openai": "skillopt_sleep.backends.openai_api",
    "claude-cli": "skillopt_sleep.backends.claude_cli",
    "codex-cli": "skillopt_sleep.backends.codex_cli",
    "pi-cli": "skillopt_sleep.backends.pi_cli",
    "gemini-cli": "skillopt_sleep.backends.gemini_cli",
    "copilot-cli": "skillopt_sleep.backends.copilot_cli",
    "opencode-cli": "skillopt_sleep.backends.opencode_cli",
    "handoff": "skillopt_sleep.backends.handoff",
}
BACKEND_NAMES = tuple(BACKEND_MODULES)


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
    if name not in BACKEND_MODULES:
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
