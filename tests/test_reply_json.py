from __future__ import annotations

import pytest

from skillopt_sleep.reply_json import extract_json


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  \n[1, 2, 3]\n ", [1, 2, 3]),
        ('```json\n{"edits": []}\n```', {"edits": []}),
        ('```JSON\n{"a": [1]}\n```', {"a": [1]}),
        ('```\n{"a": 2}\n```', {"a": 2}),
        ('Here you go:\n```json\n{"score": 0.5}\n```\nHope that helps.', {"score": 0.5}),
        ('The answer is {"score": 1, "reason": "fine"} as requested.', {"score": 1, "reason": "fine"}),
        ('Edits: [{"op": "add"}] done', [{"op": "add"}]),
        ('Nested {"a": {"b": [1, {"c": "}"}]}} trailing }', {"a": {"b": [1, {"c": "}"}]}}),
        # a broken candidate is skipped, the next valid one is returned
        ('{not json} then {"ok": true}', {"ok": True}),
        ('```json\n{broken\n```\nand then {"ok": 1}', {"ok": 1}),
    ],
)
def test_extract_json_finds_the_value(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "no json here", "{ unclosed", "[1, 2", "}{", "```json\n{nope}\n```", None],
)
def test_extract_json_garbage_is_none(text):
    assert extract_json(text) is None


def test_first_object_wins():
    assert extract_json('{"a": 1} and {"b": 2}') == {"a": 1}


def test_fenced_block_preferred_over_prose_braces():
    text = 'I considered {"draft": true} but the final is:\n```json\n{"final": true}\n```'
    assert extract_json(text) == {"final": True}


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        '{"a": ' * 100_000,
        "```json\n" + "[" * 100_000 + "\n```",
        "prose first " + "[" * 50_000 + "]" * 10,
        "{" * 150_000,
        '{"' * 90_000,
        "x" * 10 + "[1," * 60_000,
    ],
    ids=["brackets", "objects", "fenced", "embedded", "braces", "open-strings", "unclosed-array"],
)
def test_hostile_replies_are_malformed_not_a_crash(text):
    assert extract_json(text) is None


def test_an_oversized_reply_is_malformed():
    assert extract_json('{"a": "' + "x" * 300_000 + '"}') is None


def test_nesting_within_limits_still_parses():
    expected: list = []
    for _ in range(49):
        expected = [expected]
    assert extract_json("[" * 50 + "]" * 50) == expected
    assert extract_json('noise {"edits": ' + "[" * 50 + "]" * 50 + "} end") == {"edits": expected}
