"""The backend registry: what each backend declares it needs from the machine (read by
``backend = "auto"`` and the scheduler's preflight) is what the built backend really uses."""

from __future__ import annotations

import pytest

from skillopt_sleep.backends import BACKEND_NAMES, cli_command, key_env, make_backend


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_declared_needs_match_the_built_backend(name: str) -> None:
    backend = make_backend(name)
    assert cli_command(name) == getattr(backend, "command", None)
    assert key_env(name) == (getattr(backend, "key_env", "") or None)


def test_the_cli_and_sdk_backends_need_what_their_users_install() -> None:
    assert [cli_command(n) for n in ("claude-cli", "codex-cli")] == ["claude", "codex"]
    assert [key_env(n) for n in ("anthropic", "openai")] == ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]
    assert cli_command("sim") is None and key_env("sim") is None and cli_command("nonesuch") is None
