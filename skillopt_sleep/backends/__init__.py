"""The models a night talks to: the simulator (``sim/``), the Anthropic and OpenAI SDKs, the Claude
Code and Codex CLIs (one module each), the client that budgets, retries and journals calls
(``client.py``), and the registry that builds one from a spec string (``registry.py``)."""

from skillopt_sleep.backends.base import Backend, BudgetExceeded, Completion, ProviderError, Request
from skillopt_sleep.backends.registry import (
    BACKEND_NAMES,
    BackendSpecError,
    cli_command,
    key_env,
    make_backend,
    parse_spec,
    spec_options,
)

__all__ = [
    "Backend",
    "BudgetExceeded",
    "Completion",
    "ProviderError",
    "Request",
    "BackendSpecError",
    "parse_spec",
    "spec_options",
    "make_backend",
    "cli_command",
    "key_env",
    "BACKEND_NAMES",
]
