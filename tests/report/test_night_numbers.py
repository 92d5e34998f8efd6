"""What a night measured and spent, and why it proposes nothing (``night_numbers.py``)."""

from __future__ import annotations

from skillopt_sleep.report.night_numbers import agents_named, agents_text, nothing_learned, numbers, score_text
from skillopt_sleep.types import Edit, NightReport, Usage


def _report(**fields) -> NightReport:
    return NightReport(night_id="n1", project="/p", mode="run", status="no-change", **fields)


def test_scores_print_with_three_decimals_or_na() -> None:
    assert (score_text(None), score_text(0.5), score_text(0.12345)) == ("n/a", "0.500", "0.123")


def test_agents_are_named_as_people_know_them_in_name_order() -> None:
    assert agents_named({"codex": 3, "claude": 12, "someone-else": 1}) == "Claude Code 12, Codex 3, someone-else 1"
    assert agents_text({}) == "" and agents_text({"gemini": 2}) == " (Gemini CLI 2)"


def test_the_rows_of_a_night_with_everything_measured() -> None:
    report = _report(
        n_sessions=4,
        agents={"claude": 4},
        n_tasks=9,
        splits={"train": 5, "val": 4},
        skipped={"too short": 2},
        train_baseline=0.25,
        baseline=0.5,
        candidate=0.75,
        test_baseline=0.4,
        calls={"reflect": 2, "attempt": 10},
        usage=Usage(input_tokens=12345, output_tokens=678),
    )
    assert numbers(report) == [
        ("sessions harvested", "4 (Claude Code 4)"),
        ("tasks", "9 (train 5, val 4)"),
        ("skipped: too short", "2"),
        ("train score (current documents)", "0.250"),
        ("val score, baseline → candidate", "0.500 → 0.750 (+0.250)"),
        ("test score, baseline → final (measured only, not used by the gate)", "0.400 → n/a"),
        ("model calls", "12 (attempt 10, reflect 2)"),
        ("tokens", "input 12,345, output 678, cache read 0, cache write 0"),
    ]


def test_a_night_that_measured_nothing_leaves_out_what_it_did_not_measure() -> None:
    rows = dict(numbers(_report()))
    assert rows["val score, baseline → candidate"] == "n/a → n/a" and rows["model calls"] == "none"
    assert "train score (current documents)" not in rows and not any(k.startswith("test score") for k in rows)


def test_why_a_night_proposes_nothing_is_one_line() -> None:
    rule = Edit(target="memory", op="add", content="a rule")
    assert nothing_learned(_report(accepted_edits=[rule], notes=["no val tasks"])) == ""
    notes = ["spent 5 tokens", "no val tasks: every task went to train", "stopped: the deadline"]
    assert nothing_learned(_report(notes=notes, rejected_edits=[{}])) == (
        "no val tasks: every task went to train; stopped: the deadline"
    )
    refused = nothing_learned(_report(rejected_edits=[{}, {}]))
    assert refused.startswith("the gate refused every edit tried (2)")
    assert nothing_learned(NightReport(night_id="n", project="/p", mode="run", status="budget")) == (
        "the night ended budget (see Notes)"
    )
    assert nothing_learned(_report()) == "no edit was proposed (see Notes)"
