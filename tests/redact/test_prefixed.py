"""Pass 5 (redact/prefixed.py): a generated-looking token behind a short service prefix that no
list names; digests, commits, the model APIs' own ids and tokens inside a path or an address stay."""

from __future__ import annotations

import pytest

from skillopt_sleep.redact.prefixed import redact_prefixed

GENERATED = "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zA"


@pytest.mark.parametrize("text", [f"glsa_{GENERATED}", f"use tvly-{GENERATED} now", f"key: nvapi-{GENERATED}."])
def test_an_unlisted_prefix_and_a_generated_body_is_a_token(text: str) -> None:
    out = redact_prefixed(text)
    assert "[REDACTED:token]" in out and GENERATED not in out
    assert redact_prefixed(out) == out


@pytest.mark.parametrize(
    "text",
    [
        "msg_01XFDUDYJgAACzvnptvVoYEL",
        "toolu_01A09q90qw90lq917835lq9x",
        f"sha256-{GENERATED}",
        "run-7c9e6679-7425-40de-944b-e07fc1f90ae7",
        "commit-" + "3f2a9c" * 6,
        f"/home/dev/glsa_{GENERATED}/file",
        f"mail glsa_{GENERATED}@example.com",
        "from .beta_memory_tool_20250818_view_command import x",
    ],
)
def test_ids_digests_paths_and_addresses_stay(text: str) -> None:
    assert redact_prefixed(text) == text
