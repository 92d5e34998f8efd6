"""``decode_json_line`` gives the standard library's outcome whether or not orjson is installed."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillopt_sleep.sources import decode

CASES = [
    (b'{"a":"x"}', ("ok", {"a": "x"})),
    (b'{"a":"\\ud800 lone"}', ("ok", {"a": "\ufffd lone"})),  # a lone surrogate is replaced
    (b'{"a":"\\ud83d\\ude00"}', ("ok", {"a": "\U0001f600"})),  # a pair is one character
    (b'{"a":NaN}', "ok"),  # json accepts it; orjson does not
    (b'{"a":"\xff"}', ("bad_utf8", None)),
    (b'[1,2]', ("not_object", None)),
    (b'"text"', ("not_object", None)),
    (b'{"a":', ("malformed_json", None)),
    (b"[" * 5000 + b"]" * 5000, ("malformed_json", None)),  # nested too deeply for either parser
    (b'{"a":1,"a":2}', ("ok", {"a": 2})),
]


@pytest.fixture(params=["orjson", "stdlib"])
def loads(request, monkeypatch):
    if request.param == "orjson":
        pytest.importorskip("orjson")
    else:
        monkeypatch.setattr(decode, "_fast_loads", None)
    return decode.decode_json_line


@pytest.mark.parametrize(("line", "expected"), CASES)
def test_outcomes(loads, line: bytes, expected) -> None:
    got = loads(line)
    if expected == "ok":
        assert got[0] == "ok"
    elif line == b"[" * 5000 + b"]" * 5000:
        assert got[0] in ("malformed_json", "not_object")  # json may manage what orjson refuses
    else:
        assert got == expected


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=6), st.booleans())
def test_same_value_with_and_without_orjson(value, ascii_only: bool) -> None:
    line = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    with pytest.MonkeyPatch.context() as mp:
        fast = decode.decode_json_line(line)
        mp.setattr(decode, "_fast_loads", None)
        slow = decode.decode_json_line(line)
    assert fast == slow
