"""The candidate pre-filter of pass 1 finds exactly the runs ``shapes.CANDIDATE`` defines."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from skillopt_sleep.redact import tokens
from skillopt_sleep.redact.shapes import CANDIDATE

RUN = re.compile(CANDIDATE.pattern.split(")", 1)[1])  # a candidate without its left boundary
# Token characters, separators, look-alikes outside ASCII (a Cyrillic "а", a full-width "Ａ").
ALPHABET = st.sampled_from(list("aZ09_.~-") + [" ", "/", ":", "=", "\n", "é", "\u0430", "\uff21"])


def walk(text: str, pos: int) -> list[tuple[int, int]]:
    mapped = text.translate(tokens._AS_A)
    found = []
    candidate = tokens._next_candidate(mapped, pos)
    while candidate is not None:
        found.append(candidate)
        candidate = tokens._next_candidate(mapped, candidate[1])
    return found


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(ALPHABET, st.text(alphabet="abcXYZ_-", min_size=15, max_size=30)), max_size=40),
    st.integers(min_value=0, max_value=60),
)
def test_candidates_are_candidate_regex_matches(parts: list[str], pos: int) -> None:
    text = "".join(parts)
    pos = min(pos, len(text))
    assert walk(text, pos) == [m.span() for m in CANDIDATE.finditer(text, pos)]
    mapped = text.translate(tokens._AS_A)
    run = RUN.match(text, pos)
    assert tokens._run_at(mapped, pos) == (run.span() if run else None)


def test_a_token_after_a_long_identifier_is_still_found() -> None:
    text = "see some_very_long_identifier_name then ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    assert tokens.redact_tokens(text) == "see some_very_long_identifier_name then [REDACTED:github_token]"
