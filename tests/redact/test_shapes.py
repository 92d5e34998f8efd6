"""Documented key shapes (``redact/shapes.py``) found whatever characters a key happened to draw."""

from __future__ import annotations

import pytest

from skillopt_sleep.redact import redact

LETTERS_ONLY = "NRAK-CFPWGCYVZWBTGEAOWXJPMTBAJNI"  # 27 after the prefix, as any user key; no digit


@pytest.mark.parametrize(
    "line",
    [
        LETTERS_ONLY,
        f"curl https://api.example.com/v1/items -d x={LETTERS_ONLY}",
        f"key {LETTERS_ONLY} here",
        "x=NRAK-CFPWGCYVZWBTGEAOWXJPMTBAJN1",
    ],
)
def test_a_new_relic_user_key_is_redacted_also_when_it_drew_no_digit(line: str) -> None:
    out = redact(line)
    assert "NRAK-" not in out and "CFPWGCYVZWBTGEAOWXJPMTBAJN" not in out, out


def test_a_word_after_a_new_relic_prefix_that_is_not_a_key_shape_is_left() -> None:
    assert redact("see the NRAK-Onboarding_guide_for_details page") == "see the NRAK-Onboarding_guide_for_details page"
