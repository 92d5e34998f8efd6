"""A line dropped after a look at its type (``peek`` + each parser's ``drop``) has exactly the
outcome and effects a full parse gives: the same outcome per line, the same digests and state."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillopt_sleep.paths import REPLAY_DIR_PREFIX
from skillopt_sleep.sources import base
from skillopt_sleep.sources.claude_code import ClaudeParser
from skillopt_sleep.sources.codex import CodexParser
from skillopt_sleep.sources.peek import peek

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fixture_lines(source: str) -> list[bytes]:
    lines: list[bytes] = []
    for path in sorted((FIXTURES / "real" / source).rglob("*.jsonl.gz")):
        lines += gzip.decompress(path.read_bytes()).splitlines()
    for path in sorted((FIXTURES / "transcripts" / source).rglob("*.jsonl")):
        lines += path.read_bytes().splitlines()
    return lines


def run(parser_type: type, lines: list[bytes], peeking: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(base, "PEEK_MIN_BYTES", 0 if peeking else 1 << 60)
    parser = parser_type("/home/u/.x/0b5c2d1e-6f7a-4b8c-9d0e-1f2a3b4c5d61.jsonl", {})
    outcomes = [parser.feed(line) for line in lines]
    parts, state, excluded = parser.finish()
    return outcomes, [p.to_digest().to_dict() for p in parts], state, excluded


def test_peek_reads_a_leading_type_and_refuses_the_rest() -> None:
    look = peek(b'{"timestamp":"t","ordinal":3,"type":"world_state","payload":{"a":[1]}}')
    assert look is not None and look.kind == "world_state"
    assert look.head(b'{"timestamp":"t","ordinal":3,"type":"world_state","payload":{"a":[1]}}') == \
        {"timestamp": "t", "ordinal": 3}
    assert peek(b'{"attachment":{"type":"x"},"type":"attachment"}') is None  # nested value first
    assert peek(b'{"a":"[","type":"mode"}') is None  # a bracket before it, even in a string
    assert peek(b'{"type":"api-request","params":{"x":') is None  # cut short
    assert peek(b'{"type":"a\\"b"}') is None  # an escape in the type
    assert peek(b'["type":"mode"]') is None
    assert peek(b'{"note":"say \\"type\\":\\"mode\\"","type":"user"}').kind == "user"


@pytest.mark.parametrize(("source", "parser_type"), [("claude", ClaudeParser), ("codex", CodexParser)])
def test_fixture_transcripts_parse_the_same_with_and_without_peeking(source, parser_type, monkeypatch) -> None:
    lines = fixture_lines(source)
    assert run(parser_type, lines, True, monkeypatch) == run(parser_type, lines, False, monkeypatch)


def test_peeking_drops_most_bytes_of_the_real_sessions(monkeypatch) -> None:
    """Not a speed test: that the look does skip the bulk it is meant to skip."""
    monkeypatch.setattr(base, "PEEK_MIN_BYTES", 0)
    for source, parser_type in (("claude", ClaudeParser), ("codex", CodexParser)):
        lines = fixture_lines(source)
        parser = parser_type("/x/0b5c2d1e-6f7a-4b8c-9d0e-1f2a3b4c5d61.jsonl", {})
        dropped = sum(len(line) for line in lines if line.strip() and parser.drop(line) is not None)
        assert dropped > 0.25 * sum(map(len, lines)), source


# Records whose keys come in any order, with the fields every Claude kind is read for.
CLAUDE_KINDS = ["user", "assistant", "file-history-snapshot", "attachment", "api-request", "mode", "system", 7]
CWDS = ["/work/app", "/work/app/sub", f"/tmp/{REPLAY_DIR_PREFIX}abc", "", None]


@st.composite
def claude_record(draw: st.DrawFn) -> bytes:
    pairs: list[tuple[str, Any]] = [("type", draw(st.sampled_from(CLAUDE_KINDS)))]
    if draw(st.booleans()):
        pairs.append(("cwd", draw(st.sampled_from(CWDS))))
    if draw(st.booleans()):
        pairs.append(("gitBranch", draw(st.sampled_from(["main", "feature/x", "", 3]))))
    if draw(st.booleans()):
        pairs.append(("isSidechain", draw(st.booleans())))
    if draw(st.booleans()):
        pairs.append(("blob", {"type": "user", "cwd": "/elsewhere", "nested": ["[", "{"]}))
    if draw(st.booleans()):
        pairs.append(("message", {"role": "user", "content": draw(st.sampled_from(["fix the bug", "thanks", ""]))}))
    pairs.append(("timestamp", "2026-11-22T10:00:00.000Z"))
    order = draw(st.permutations(pairs))
    line = json.dumps(dict(order), separators=(",", ":"))
    if draw(st.integers(0, 9)) == 0:
        line = line[: len(line) // 2]
    return line.encode()


@st.composite
def codex_record(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["session_meta", "turn_context", "response_item", "event_msg", "world_state",
                                 "compacted", "reasoning", 5]))
    item = draw(st.sampled_from(["message", "function_call", "reasoning", "function_call_output", "user_message",
                                 "agent_message", "task_started", "token_count", None]))
    payload: Any = {"type": item, "role": "user", "content": [{"type": "input_text", "text": "do it"}],
                    "message": "do it", "name": "shell", "cwd": draw(st.sampled_from(CWDS))}
    if item is None:
        payload.pop("type")
    if draw(st.integers(0, 5)) == 0:
        payload = draw(st.sampled_from([None, "text", [1]]))
    pairs = [("timestamp", "2026-11-22T10:00:00.000Z"), ("type", kind), ("payload", payload)]
    line = json.dumps(dict(draw(st.permutations(pairs))), separators=(",", ":"))
    return line.encode()


@settings(max_examples=200, deadline=None)
@given(st.lists(claude_record(), max_size=12))
def test_claude_records_parse_the_same_with_and_without_peeking(lines: list[bytes]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        assert run(ClaudeParser, lines, True, mp) == run(ClaudeParser, lines, False, mp)


@settings(max_examples=200, deadline=None)
@given(st.lists(codex_record(), max_size=12))
def test_codex_records_parse_the_same_with_and_without_peeking(lines: list[bytes]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        assert run(CodexParser, lines, True, mp) == run(CodexParser, lines, False, mp)
