"""Decoding a transcript line (sources/decode.py): ``decode_json_line`` and ``decode_fields`` give
the standard library's outcome and values, whether ``msgspec`` decides a line or hands it to
``json``. And a line decoded for the fields its parser reads (``TranscriptParser.fields``) has
exactly the outcome and effects a decode of the whole line gives: the same outcome per line, the
same digests and state — a line cut short or holding invalid UTF-8 is reported as such either
way."""

from __future__ import annotations

import gzip
import json
import types
import typing
from pathlib import Path
from typing import Any, TypedDict

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillopt_sleep.paths import REPLAY_DIR_PREFIX
from skillopt_sleep.sources import decode
from skillopt_sleep.sources.claude_code import ClaudeParser
from skillopt_sleep.sources.codex import CodexParser
from skillopt_sleep.sources.decode import decode_record

CASES = [
    (b'{"a":"x"}', ("ok", {"a": "x"})),
    (b'{"a":"\\ud800 lone"}', ("ok", {"a": "\ufffd lone"})),  # a lone surrogate is replaced
    (b'{"a":"\\ud83d\\ude00"}', ("ok", {"a": "\U0001f600"})),  # a pair is one character
    (b'{"a":NaN}', "ok"),  # json accepts it; msgspec does not
    (b'{"a":"\xff"}', ("bad_utf8", None)),
    (b"[1,2]", ("not_object", None)),
    (b'"text"', ("not_object", None)),
    (b'{"a":', ("malformed_json", None)),
    (b"[" * 5000 + b"]" * 5000, ("malformed_json", None)),  # nested too deeply for either parser
    (b'{"a":1,"a":2}', ("ok", {"a": 2})),
]


def json_only(line: bytes):
    return decode._decode_with_json(line)


@pytest.fixture(params=["msgspec", "stdlib"])
def loads(request):
    return decode.decode_json_line if request.param == "msgspec" else json_only


@pytest.mark.parametrize(("line", "expected"), CASES)
def test_outcomes(loads, line: bytes, expected) -> None:
    got = loads(line)
    if expected == "ok":
        assert got[0] == "ok"
    elif line == b"[" * 5000 + b"]" * 5000:
        assert got[0] in ("malformed_json", "not_object")  # json may manage what msgspec refuses
    else:
        assert got == expected


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=6), st.booleans())
def test_same_value_with_and_without_msgspec(value, ascii_only: bool) -> None:
    line = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    assert same(decode.decode_json_line(line), json_only(line))


class Fields(TypedDict, total=False):
    a: Any
    b: dict | list | str | int | float | bool | None


FIELDS = msgspec.json.Decoder(Fields)


def read(value: dict) -> dict:
    return {key: value[key] for key in ("a", "b") if key in value}


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["a", "b", "c"]) | st.text(max_size=4), JSON_VALUES, max_size=6),
    st.booleans(),
    st.sampled_from([b"", b"\xff", b"\x01", b"}", b'"']),
    st.integers(0, 200),
)
def test_a_partial_decode_gives_the_status_and_values_json_gives(
    value, ascii_only: bool, damage: bytes, at: int
) -> None:
    line = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    cut = at % (len(line) + 1)
    line = line[:cut] + damage + line[cut:]
    status, part = decode.decode_record(line, FIELDS)
    expected, whole = json_only(line)
    assert status == expected
    if status == "ok":
        assert same(read(part), read(whole))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"a":1,"c":"\xff"}', ("bad_utf8", None)),  # in a field that is skipped
        (rb'{"a":1,"c":"\ud800"}', ("ok", {"a": 1})),  # msgspec refuses it, json decides
        (b'{"a":1,"c":', ("malformed_json", None)),
        (b'{"a":1,"c":[}', ("malformed_json", None)),
        (b"[1]", ("not_object", None)),
        (b'{"a":1,"c":NaN}', ("ok", {"a": 1})),
        (rb'{"a":1,"a":2,"b":"\u00e9"}', ("ok", {"a": 2, "b": "\u00e9"})),
    ],
)
def test_a_partial_decode_reports_what_json_reports(line: bytes, expected) -> None:
    status, value = decode.decode_record(line, FIELDS)
    assert (status, None if value is None else read(value)) == expected


def same(x, y) -> bool:
    """Equal, counting NaN equal to NaN."""
    return json.dumps(x, sort_keys=True) == json.dumps(y, sort_keys=True)


# -- the fields a parser reads, decoded alone ----------------------------------------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fixture_lines(source: str) -> list[bytes]:
    lines: list[bytes] = []
    for path in sorted((FIXTURES / "real" / source).rglob("*.jsonl.gz")):
        lines += gzip.decompress(path.read_bytes()).splitlines()
    for path in sorted((FIXTURES / "transcripts" / source).rglob("*.jsonl")):
        lines += path.read_bytes().splitlines()
    return lines


def run(parser_type: type, lines: list[bytes], partly: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    if not partly:
        monkeypatch.setattr(parser_type, "fields", None)
    parser = parser_type("/home/u/.x/0b5c2d1e-6f7a-4b8c-9d0e-1f2a3b4c5d61.jsonl", {})
    outcomes = [parser.feed(line) for line in lines]
    parts, state, excluded = parser.finish()
    return outcomes, [p.to_digest().to_dict() for p in parts], state, excluded


@pytest.mark.parametrize(("source", "parser_type"), [("claude", ClaudeParser), ("codex", CodexParser)])
def test_fixture_transcripts_parse_the_same_whole_and_in_part(source, parser_type, monkeypatch) -> None:
    lines = fixture_lines(source)
    assert run(parser_type, lines, True, monkeypatch) == run(parser_type, lines, False, monkeypatch)


def test_the_fields_read_are_a_small_part_of_the_real_sessions() -> None:
    """Not a speed test: that most of a real session is skipped, not built."""
    # Codex's messages (instructions, AGENTS.md and environment context among them) are read whole.
    for source, parser_type, share in (("claude", ClaudeParser, 0.2), ("codex", CodexParser, 0.35)):
        lines = [line for line in fixture_lines(source) if line.strip()]
        built = sum(
            len(json.dumps(part))
            for status, part in (decode_record(line, parser_type.fields) for line in lines)
            if status == "ok"
        )
        assert built < share * sum(map(len, lines)), source


# Records whose keys come in any order, with the fields every Claude kind is read for.
CLAUDE_KINDS = ["user", "assistant", "file-history-snapshot", "attachment", "api-request", "mode", "system", 7]
CWDS = ["/work/app", "/work/app/sub", f"/tmp/{REPLAY_DIR_PREFIX}abc", "", None, "/work/caf\u00e9"]
NOTES = ["plain", "caf\u00e9", "lone \udcff", 'tab\tand \\ quote " brace }']


def damaged(draw: st.DrawFn, line: str) -> bytes:
    """The line, sometimes cut short or with a byte that is not UTF-8 inside a string."""
    data = line.encode("utf-8", "surrogatepass")
    damage = draw(st.integers(0, 9))
    if damage == 0:
        return data[: len(data) // 2]
    if damage == 1 and b"plain" in data:
        return data.replace(b"plain", b"pl\xffin", 1)
    return data


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
    if draw(st.booleans()):
        pairs.append(("note", draw(st.sampled_from(NOTES))))
    pairs.append(("timestamp", "2026-11-22T10:00:00.000Z"))
    order = draw(st.permutations(pairs))
    return damaged(draw, json.dumps(dict(order), separators=(",", ":"), ensure_ascii=draw(st.booleans())))


@st.composite
def codex_record(draw: st.DrawFn) -> bytes:
    kind = draw(
        st.sampled_from(
            ["session_meta", "turn_context", "response_item", "event_msg", "world_state", "compacted", "reasoning", 5]
        )
    )
    item = draw(
        st.sampled_from(
            [
                "message",
                "function_call",
                "reasoning",
                "function_call_output",
                "user_message",
                "agent_message",
                "task_started",
                "token_count",
                None,
            ]
        )
    )
    payload: Any = {
        "type": item,
        "role": "user",
        "content": [{"type": "input_text", "text": "do it"}],
        "message": "do it",
        "name": "shell",
        "cwd": draw(st.sampled_from(CWDS)),
        "note": draw(st.sampled_from(NOTES)),
    }
    if item is None:
        payload.pop("type")
    if kind == "session_meta":  # what decides whether the session is excluded
        payload.update(
            draw(
                st.sampled_from(
                    [
                        {},
                        {"originator": "codex_exec"},
                        {"source": "exec"},
                        {"source": {"subagent": {"depth": 1}}},
                        {"thread_source": "subagent"},
                        {"parent_thread_id": "t1"},
                        {"git": {"branch": "main"}},
                        {"git": "main"},
                    ]
                )
            )
        )
    if draw(st.integers(0, 5)) == 0:
        payload = draw(st.sampled_from([None, "text", [1]]))
    pairs = [("timestamp", "2026-11-22T10:00:00.000Z"), ("type", kind), ("payload", payload)]
    line = json.dumps(dict(draw(st.permutations(pairs))), separators=(",", ":"), ensure_ascii=draw(st.booleans()))
    return damaged(draw, line)


@settings(max_examples=200, deadline=None)
@given(st.lists(claude_record(), max_size=12))
def test_claude_records_parse_the_same_whole_and_in_part(lines: list[bytes]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        assert run(ClaudeParser, lines, True, mp) == run(ClaudeParser, lines, False, mp)


@settings(max_examples=200, deadline=None)
@given(st.lists(codex_record(), max_size=12))
def test_codex_records_parse_the_same_whole_and_in_part(lines: list[bytes]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        assert run(CodexParser, lines, True, mp) == run(CodexParser, lines, False, mp)


class Tracked(dict):
    """A decoded object that notes every key read from it (``get``, ``[]``, ``in``), by path."""

    def __init__(self, value: dict, path: tuple[str, ...], log: set[tuple[str, ...]]) -> None:
        super().__init__({key: track(item, path + (key,), log) for key, item in value.items()})
        self.path, self.log = path, log

    def get(self, key, default=None):
        self.log.add(self.path + (key,))
        return super().get(key, default)

    def __getitem__(self, key):
        self.log.add(self.path + (key,))
        return super().__getitem__(key)

    def __contains__(self, key) -> bool:
        self.log.add(self.path + (key,))
        return super().__contains__(key)


def track(value: Any, path: tuple[str, ...], log: set[tuple[str, ...]]) -> Any:
    if isinstance(value, dict):
        return Tracked(value, path, log)
    if isinstance(value, list):
        return [track(item, path + ("[]",), log) for item in value]
    return value


def declared(schema: Any, path: tuple[str, ...]) -> bool:
    """Whether ``fields``'s type builds the value at ``path`` (a field typed Any builds all of it)."""
    if not path:
        return True
    if schema is Any:
        return True
    options = typing.get_args(schema) if typing.get_origin(schema) in (typing.Union, types.UnionType) else (schema,)
    for option in options:
        if path[0] == "[]" and typing.get_origin(option) is list:
            args = typing.get_args(option)
            return declared(args[0] if args else Any, path[1:])
        if typing.is_typeddict(option):
            hints = typing.get_type_hints(option)
            return path[0] in hints and declared(hints[path[0]], path[1:])
    return path[0] == "[]"  # a bare list's items are built whole


# Records that take the branches the recorded sessions do not.
CLAUDE_EXTRA = [
    {"type": "user", "isMeta": True, "message": {"content": "meta"}, "timestamp": "2026-11-22T10:00:00Z"},
    {"type": "user", "isCompactSummary": True, "message": {"content": "summary"}},
    {"type": "user", "promptSource": "sdk", "message": {"content": "headless"}},
    {"type": "user", "entrypoint": "sdk-cli", "message": {"content": "old headless"}},
    {"type": "user", "turnOrigin": "human", "message": {"content": [{"type": "text", "text": "fix it"}]}},
    {
        "type": "assistant",
        "uuid": "u1",
        "message": {
            "id": "m1",
            "model": "m",
            "content": [
                {"type": "tool_use", "name": "Skill", "input": {"skill": "release"}},
                {"type": "tool_use", "name": "NotebookEdit", "input": {"notebook_path": "/n.ipynb"}},
                {"type": "tool_use", "name": "Edit", "input": {"file_path": "/a.py"}},
                {"type": "text", "text": "done"},
            ],
        },
    },
    {"type": "assistant", "isApiErrorMessage": True, "message": {"content": "error"}},
    {"type": "file-history-snapshot", "snapshot": {"trackedFileBackups": {"/a.py": {}}}},
]
CODEX_EXTRA = [
    {
        "type": "session_meta",
        "payload": {
            "cwd": "/w",
            "originator": "x",
            "source": {"subagent": 1},
            "thread_source": "user",
            "parent_thread_id": None,
            "git": {"branch": "b"},
        },
    },
    {"type": "event_msg", "payload": {"type": "task_started", "turn_attribution": {"turn_trigger": "exec"}}},
    {"type": "event_msg", "payload": {"type": "user_message", "message": "go"}},
    {
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "go"}],
            "internal_chat_message_metadata_passthrough": {"content_item_kinds": ["user.text"]},
        },
    },
    {
        "type": "response_item",
        "payload": {"type": "message", "role": "assistant", "content": "x", "metadata": {}, "compaction_output": True},
    },
    {
        "type": "response_item",
        "payload": {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch"},
    },
    {"type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": "{}"}},
    {"type": "response_item", "payload": {"type": "local_shell_call"}},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "old format"}]},
    {"instructions": "old header"},
]


@pytest.mark.parametrize(
    ("source", "parser_type", "extra"), [("claude", ClaudeParser, CLAUDE_EXTRA), ("codex", CodexParser, CODEX_EXTRA)]
)
def test_every_field_a_parser_reads_is_one_it_decodes(source, parser_type, extra) -> None:
    """``record`` run on whole records that note what is read: each key it reads, at any depth, is
    built by ``fields`` (a key left out of it would read as absent, silently)."""
    schema = parser_type.fields.type
    lines = [line for line in fixture_lines(source) if line.strip()] + [json.dumps(r).encode() for r in extra]
    read: set[tuple[str, ...]] = set()
    for _round in range(2):  # the second round reads with the state the first left (turns open)
        parser = parser_type("/home/u/.x/0b5c2d1e-6f7a-4b8c-9d0e-1f2a3b4c5d61.jsonl", {})
        for line in lines:
            status, record = decode_record(line, None)
            if status == "ok":
                parser.record(track(record, (), read))
    assert len(read) > 15
    assert sorted(path for path in read if not declared(schema, path)) == []
