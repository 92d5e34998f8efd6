"""Pass 4 (redact/keyed.py): a generated-looking value after any credential-ish label, whatever the
vendor; a label alone is not enough, the value must look generated."""

from __future__ import annotations

import pytest

from skillopt_sleep.redact.keyed import entropy, looks_generated, name_like, redact_keyed

GENERATED = "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zA"


@pytest.mark.parametrize(
    "text",
    [
        f"os.environ.get('WEATHER_API_KEY', '{GENERATED}')",
        f'  fbApiKey:            "{GENERATED}",',
        "sonar.login=3f2a9c8e1b7d4a6f0c5e9b2a8d7f1e3c4b6a9d0e",
        f"X-Okta-Key: {GENERATED}",
    ],
)
def test_a_generated_value_after_a_label_is_redacted(text: str) -> None:
    out = redact_keyed(text)
    assert "[REDACTED:" in out and GENERATED not in out and "3f2a9c8e1b7d" not in out


@pytest.mark.parametrize(
    "text",
    [
        "WEATHER_API_KEY = 'weather-service-default'",
        "cache_key: user_profile_v2",
        "sort_key=name",
        "checksum sha256:3f2a9c8e1b7d4a6f0c5e9b2a8d7f1e3c4b6a9d0e3f2a9c8e1b7d4a6f0c5e9b2a",
    ],
)
def test_a_label_with_a_wordy_value_or_a_digest_stays(text: str) -> None:
    assert redact_keyed(text) == text


def test_looks_generated_is_long_mixed_and_not_a_run_of_words() -> None:
    assert looks_generated(GENERATED)
    assert not looks_generated("BetaMemoryTool20250818ViewCommand")
    assert not looks_generated("short1A")
    assert name_like("BetaMemoryTool") and not name_like("xq7Zk2Lp")
    assert entropy("aaaa") == 0 and entropy("abcd") == 2.0
