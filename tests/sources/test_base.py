"""What every transcript source shares (sources/base.py). Property tests: the line parsers and the
line reader never raise and always account for input. And a turn's reply is clipped (redacted,
cut) once it is final; the result is what clipping every reply as it came gives."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillopt_sleep.sources.base import IGNORED, MAX_REPLY_CHARS, USED, DigestBuilder, LineReader, clip
from skillopt_sleep.sources.claude_code import ClaudeParser
from skillopt_sleep.sources.codex import CodexParser

REASONS = {
    USED,
    IGNORED,
    "bad_utf8",
    "malformed_json",
    "not_object",
    "wrong_field_type",
    "sidechain",
    "headless_session",
    "headless_turn",
    "subagent_thread",
    "own_replay",
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
field_names = st.sampled_from(
    [
        "type",
        "message",
        "content",
        "payload",
        "cwd",
        "timestamp",
        "isSidechain",
        "entrypoint",
        "isMeta",
        "role",
        "text",
        "name",
        "input",
        "snapshot",
        "originator",
    ]
)
type_values = st.sampled_from(
    [
        "user",
        "assistant",
        "summary",
        "file-history-snapshot",
        "session_meta",
        "turn_context",
        "response_item",
        "event_msg",
        "message",
        "user_message",
        "agent_message",
        "function_call",
        "tool_use",
        "text",
        "tool_result",
    ]
)
# Records shaped like the real ones, with fields of random types at every level.
record_like = st.recursive(
    st.dictionaries(field_names, json_values | type_values, max_size=6),
    lambda inner: st.dictionaries(field_names, inner | st.lists(inner, max_size=3) | type_values, max_size=6),
    max_leaves=10,
)
lines = st.one_of(
    st.binary(max_size=200),
    record_like.map(lambda r: json.dumps(r).encode()),
    json_values.map(lambda v: json.dumps(v).encode()),
    record_like.map(lambda r: json.dumps(r).encode()[: len(json.dumps(r)) // 2]),
)


def parsers_never_raise(batch: list[bytes]) -> None:
    for make in (lambda: ClaudeParser("/p/s.jsonl", {}), lambda: CodexParser("/p/rollout-x.jsonl", {})):
        parser = make()
        for line in batch:
            assert parser.feed(line) in REASONS
        parts, state, excluded = parser.finish()
        json.dumps(state)  # the resumable state must be storable
        resumed = type(parser)("/p/s.jsonl", state)
        for line in batch:
            assert resumed.feed(line) in REASONS
        for part in parts:
            part.to_digest().to_dict()


@settings(max_examples=100, deadline=None)
@given(st.lists(lines, max_size=12))
def test_parsers_never_raise_and_every_line_has_one_outcome(batch):
    parsers_never_raise(batch)


@pytest.mark.slow  # the same property over ten times the batches
@settings(max_examples=1000, deadline=None)
@given(st.lists(lines, max_size=12))
def test_parsers_never_raise_over_many_batches(batch):
    parsers_never_raise(batch)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000), st.integers(1, 64), st.integers(8, 200))
def test_line_reader_accounts_for_every_byte(tmp_path_factory, data, chunk, cap):
    import skillopt_sleep.sources.base as base

    path = tmp_path_factory.mktemp("lines") / "f.jsonl"
    path.write_bytes(data)
    old = base.READ_CHUNK, base.MAX_LINE_BYTES
    base.READ_CHUNK, base.MAX_LINE_BYTES = chunk, cap
    try:
        skipped: Counter[str] = Counter()
        got = list(LineReader(str(path), 0, skipped))
    finally:
        base.READ_CHUNK, base.MAX_LINE_BYTES = old
    pieces = data.split(b"\n")
    complete, tail = pieces[:-1], pieces[-1]
    expected, offset = [], 0
    for piece in complete:
        offset += len(piece) + 1
        if len(piece) <= cap:
            expected.append((piece, offset))
    assert got == expected
    assert skipped["oversized_line"] == sum(len(p) > cap for p in complete) + (len(tail) > cap)
    assert skipped["truncated_line"] == (1 if tail.strip() and len(tail) <= cap else 0)


# -- the digest builder: clipping deferred until a reply is final --------------------------------

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
