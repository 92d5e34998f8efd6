"""Completions kept beyond the client's memory (``stores.py``): only whole answers, written
redacted, read back strictly."""

from __future__ import annotations

import json

import pytest

from skillopt_sleep.backends.base import Completion
from skillopt_sleep.backends.stores import completion_from, completion_record, keepable
from skillopt_sleep.types import Usage

SECRET = "sk-ant-api03-" + "a" * 40


def test_only_a_whole_answer_is_kept() -> None:
    assert keepable(Completion(text="an answer"))
    assert not keepable(Completion(text="", error="server"))
    assert not keepable(Completion(text="a fragm", truncated=True))


def test_a_kept_completion_comes_back_redacted_with_its_model_usage_and_tools() -> None:
    usage = Usage(input_tokens=10, output_tokens=3, cache_read_tokens=2)
    record = completion_record(
        Completion(text=f"use {SECRET} here", usage=usage, model="m1", latency=2.5, tools_called=["run_tests"])
    )
    back = completion_from(json.loads(json.dumps(record)))
    assert back is not None and SECRET not in back.text and "[REDACTED:" in back.text
    assert (back.model, back.usage, back.tools_called, back.latency) == ("m1", usage, ["run_tests"], 0.0)


@pytest.mark.parametrize(
    "record",
    [None, "text", [], {}, {"text": 3}, {"text": "t", "tools_called": "run"}, {"text": "t", "tools_called": [1]}],
)
def test_a_malformed_record_is_none(record: object) -> None:
    assert completion_from(record) is None


def test_usage_counts_that_are_not_counts_are_dropped() -> None:
    record = {
        "text": "t",
        "model": None,
        "usage": {"input_tokens": 5, "output_tokens": -1, "cache_read_tokens": True, "cache_write_tokens": "2", "x": 1},
    }
    back = completion_from(record)
    assert back is not None and back.usage == Usage(input_tokens=5) and back.model == ""
    assert completion_from({"text": "t", "usage": [1, 2]}) == Completion(text="t")
