"""``decode_json_line`` and ``decode_fields`` give the standard library's outcome and values, whether
``msgspec`` decides a line or hands it to ``json``."""

from __future__ import annotations

import json
from typing import Any, TypedDict

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillopt_sleep.sources import decode

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
