"""Environments that point the real ``claude`` / ``codex`` CLIs at the fake providers.

Both start from ``tests.support.real_clients.client_env`` (a throwaway HOME / CODEX_HOME under ``root``):

- ``claude_env``: ``ANTHROPIC_BASE_URL`` + ``ANTHROPIC_API_KEY`` for a ``FakeAnthropic``, and a
  ``~/.claude.json`` that has finished onboarding and approved that key, so the interactive TUI
  starts straight at the prompt (``trust`` marks directories whose trust dialog was accepted).
- ``codex_env``: a ``config.toml`` in the throwaway CODEX_HOME whose custom ``model_providers``
  entry streams the Responses API from a ``FakeOpenAI``; the key travels in ``FAKE_OPENAI_KEY``.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.anthropic_server import FakeAnthropic
from tests.support.openai_server import FakeOpenAI

CODEX_KEY_ENV = "FAKE_OPENAI_KEY"


def _client_env(root: Path, **extra: str) -> dict[str, str]:
    from tests.support.real_clients import client_env

    return client_env(root, **extra)


def claude_env(root: Path, fake: FakeAnthropic, *, trust: tuple[Path, ...] = (), **extra: str) -> dict[str, str]:
    env = _client_env(root, ANTHROPIC_BASE_URL=fake.root, ANTHROPIC_API_KEY=fake.key, **extra)
    state = {
        "hasCompletedOnboarding": True,
        "lastOnboardingVersion": "2.1.328",
        "theme": "dark",
        "numStartups": 1,
        "customApiKeyResponses": {"approved": [fake.key[-20:]], "rejected": []},
        "projects": {str(path): {"hasTrustDialogAccepted": True, "allowedTools": []} for path in trust},
    }
    (Path(env["HOME"]) / ".claude.json").write_text(json.dumps(state, indent=2), encoding="utf-8")
    return env


def codex_env(
    root: Path,
    fake: FakeOpenAI,
    *,
    model: str = "gpt-5-codex",
    stream_max_retries: int = 2,
    request_max_retries: int = 0,
    stream_idle_timeout_ms: int = 20_000,
    config_extra: str = "",
    **extra: str,
) -> dict[str, str]:
    env = _client_env(root, **{CODEX_KEY_ENV: fake.key}, **extra)
    config = f'''model = "{model}"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = "{fake.root}/v1"
env_key = "{CODEX_KEY_ENV}"
wire_api = "responses"
request_max_retries = {request_max_retries}
stream_max_retries = {stream_max_retries}
stream_idle_timeout_ms = {stream_idle_timeout_ms}
{config_extra}'''
    (Path(env["CODEX_HOME"]) / "config.toml").write_text(config, encoding="utf-8")
    return env
