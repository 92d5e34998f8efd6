"""The records a night passes between stages: UTC times, JSON round trips, bad input named."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillopt_sleep.types import (
    Attempt,
    Edit,
    Feedback,
    GateDecision,
    NightReport,
    SessionDigest,
    TaskDelta,
    TaskRecord,
    Usage,
    format_time,
    parse_time,
)

NOON = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-23T12:00:00Z",
        "2026-11-23T12:00:00z",
        "2026-11-23T12:00:00+00:00",
        "2026-11-23T13:00:00+01:00",
        "2026-11-23T07:00:00-05:00",
        " 2026-11-23T12:00:00 ",
    ],
)
def test_every_spelling_of_one_instant_parses_to_the_same_aware_utc_time(text: str) -> None:
    parsed = parse_time(text)
    assert parsed == NOON and parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "yesterday",
        1732363200,
        "2026-13-01T00:00:00Z",
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:00:00-05:00",
    ],
)
def test_what_is_not_a_comparable_time_is_none(value: object) -> None:
    assert parse_time(value) is None


def test_a_naive_datetime_is_taken_as_utc_and_written_with_z() -> None:
    assert parse_time(datetime(2026, 11, 23, 12)) == NOON
    assert format_time(NOON.astimezone(timezone(timedelta(hours=9)))) == "2026-11-23T12:00:00Z"
    assert format_time(None) is None and parse_time(format_time(NOON)) == NOON


def test_a_session_digest_round_trips_with_its_times_and_feedback() -> None:
    digest = SessionDigest(
        source="claude",
        session_id="s1",
        project="/p",
        path="/t/s1.jsonl",
        started=NOON,
        user_prompts=["write it", "no, shorter"],
        feedback=[Feedback("negative", "no, shorter", 1)],
    )
    data = json.loads(json.dumps(digest.to_dict()))
    assert data["started"] == "2026-11-23T12:00:00Z" and data["ended"] is None
    again = SessionDigest.from_dict(data)
    assert again == digest and isinstance(again.feedback[0], Feedback)


def test_unknown_keys_are_ignored_and_a_missing_field_is_a_value_error() -> None:
    task = TaskRecord.from_dict({"id": "t1", "intent": "do it", "from_a_newer_version": 1})
    assert task == TaskRecord(id="t1", intent="do it")
    with pytest.raises(ValueError, match="TaskRecord"):
        TaskRecord.from_dict({"intent": "no id"})
    with pytest.raises(ValueError, match="TaskRecord: expected a JSON object, got list"):
        TaskRecord.from_dict(["t1"])  # type: ignore[arg-type]


def test_a_night_report_round_trips_its_nested_records() -> None:
    edit = Edit("memory", "add", "Cite the ticket.", rationale="3 of 4 failed")
    decision = GateDecision(
        accepted=True,
        action="accept",
        baseline=0.25,
        candidate=0.75,
        per_task=[TaskDelta("a", 0.25, 0.75, 0.5, 4, 4)],
        edits=[edit],
    )
    report = NightReport(
        night_id="n1",
        project="/p",
        mode="run",
        status="staged",
        started=NOON,
        accepted_edits=[edit],
        decisions=[decision],
        usage=Usage(10, 5, 2, 1),
        calls={"attempt": 8},
    )
    data = json.loads(json.dumps(report.to_dict()))
    assert data["accepted"] is True and data["started"] == "2026-11-23T12:00:00Z"
    again = NightReport.from_dict(data)
    assert again == report
    assert isinstance(again.decisions[0].per_task[0], TaskDelta) and isinstance(again.usage, Usage)


def test_a_report_as_stored_carries_no_escape_sequence() -> None:
    report = NightReport(
        night_id="n1", project="/p", mode="run", status="staged", notes=["model said \x1b[2Jhello\x07"]
    )
    assert "\x1b" not in json.dumps(report.to_dict()) and "\x07" not in json.dumps(report.to_dict())
    assert "hello" in report.to_dict()["notes"][0]


def test_an_attempt_restores_its_usage() -> None:
    attempt = Attempt(task_id="a", sample=1, response="r", hard=0.0, soft=0.5, usage=Usage(input_tokens=3))
    assert Attempt.from_dict(attempt.to_dict()) == attempt


def test_usage_adds_field_by_field() -> None:
    assert Usage(1, 2, 3, 4) + Usage(10, 20, 30, 40) == Usage(11, 22, 33, 44)


def test_an_edit_describes_itself_by_its_op() -> None:
    assert Edit("skill", "add", "Be brief.").describe() == "skill: add 'Be brief.'"
    assert Edit("memory", "delete", anchor="Old.").describe() == "memory: delete 'Old.'"
    assert Edit("skill", "replace", "New.", anchor="Old.").describe() == "skill: replace 'Old.' -> 'New.'"


ZULU_CHARS = "0123456789-:T.Z +zW"


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 23), st.sampled_from(ZULU_CHARS)), max_size=3))
def test_the_zulu_fast_path_parses_as_the_general_path(changes) -> None:
    """``2026-11-22T10:00:00.000Z`` (how both agents write times) skips the general path: same result,
    also for any 24-character text close to it."""
    chars = list("2026-11-22T10:00:00.000Z")
    for at, char in changes:
        chars[at] = char
    text = "".join(chars)
    general = text.strip()
    general = general[:-1] + "+00:00" if general.endswith(("Z", "z")) else general
    try:
        expected = datetime.fromisoformat(general).astimezone(timezone.utc)
    except ValueError:
        expected = None
    if expected is not None and datetime.fromisoformat(general).tzinfo is None:
        expected = datetime.fromisoformat(general).replace(tzinfo=timezone.utc)
    parsed = parse_time(text)
    assert parsed == expected and (parsed is None or parsed.tzinfo is timezone.utc)
