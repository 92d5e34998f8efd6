"""A turn's reply is clipped (redacted, cut) once it is final; the result is what clipping every
reply as it came gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from skillopt_sleep.sources.base import MAX_REPLY_CHARS, DigestBuilder, clip

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
TEXTS = st.sampled_from(["done", "see " + SECRET, "x" * (MAX_REPLY_CHARS + 50), "a  b", "ok " * 900, "fine"])
STEPS = st.lists(st.tuples(st.sampled_from(["prompt", "new", "extend", "extend_final", "close"]), TEXTS), max_size=14)


def eager(steps: list[tuple[str, str]], prompt_base: int) -> tuple[list[str], str, bool]:
    """The finals and continuation as they were computed before clipping was deferred."""
    finals: list[str] = []
    continuation, replaces, in_turn = "", False, prompt_base > 0
    turns = 0

    def set_final(text: str, replace: bool) -> None:
        nonlocal continuation, replaces
        if turns:
            last = finals[-1]
            finals[-1] = clip(text if replace or not last else last + "\n" + text, MAX_REPLY_CHARS)
        elif replace:
            continuation, replaces = clip(text, MAX_REPLY_CHARS), True
        else:
            continuation = clip(continuation + "\n" + text if continuation else text, MAX_REPLY_CHARS)

    for kind, text in steps:
        if kind == "prompt":
            finals.append("")
            turns += 1
            in_turn = True
        elif kind == "close":
            in_turn = False
        elif in_turn and kind == "new":
            set_final(clip(text, MAX_REPLY_CHARS), True)
        elif in_turn:
            set_final(text, kind == "extend")
    return finals, continuation, replaces


@settings(max_examples=200, deadline=None)
@given(STEPS, st.sampled_from([0, 3]))
def test_deferred_clipping_gives_what_eager_clipping_gave(steps, prompt_base: int) -> None:
    builder = DigestBuilder(
        source="claude", session_id="s", path="/p", prompt_base=prompt_base, in_turn=prompt_base > 0
    )
    for kind, text in steps:
        if kind == "prompt":
            builder.add_prompt("please do it")
        elif kind == "close":
            builder.close_turn()
        elif kind == "new":
            builder.new_reply(text)
        else:
            builder.extend_reply(text, has_final=kind == "extend_final")
    digest = builder.to_digest()
    assert (digest.assistant_finals, builder.reply_continuation, builder.reply_replaces) == eager(steps, prompt_base)
    assert SECRET not in "".join(digest.assistant_finals) + builder.reply_continuation
