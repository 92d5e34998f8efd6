"""report.md and the terminal summary (report/markdown.py): sanitized text, the numbers, edits,
refusals and gate table of a night, scopes, and the hand-written line a rule overrides, under the
same words every view of a proposal uses (``review``: tests/commands/test_review.py; report.html:
test_html.py, both using the overriding night built here). A cell cannot open a code span or a
column."""

from __future__ import annotations

from datetime import datetime, timezone

from skillopt_sleep.report.markdown import cell, render_markdown, render_text, sanitize
from skillopt_sleep.report.proposal import OVERRIDES
from skillopt_sleep.types import Edit, GateDecision, NightReport, TaskDelta, Usage


def test_sanitize_strips_terminal_escapes_and_controls():
    text = (
        "\x1b[31mred\x1b[0m \x1b]0;evil title\x07ok \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"
        " bell\x07 nul\x00 back\x08 \x9b2J c1 \u202egnp.exe"
    )
    clean = sanitize(text)
    assert "\x1b" not in clean and "\x07" not in clean and "\x00" not in clean
    assert "\x9b" not in clean and "\u202e" not in clean and "\x08" not in clean
    assert clean.startswith("red ok link bell nul back")
    assert "evil title" not in clean


def test_sanitize_keeps_newlines_tabs_and_turns_carriage_returns_into_newlines():
    assert sanitize("a\tb\r\nc\rd\n") == "a\tb\nc\nd\n"


def test_sanitize_defuses_html_comments():
    clean = sanitize("x <!-- skillopt-sleep:learned:end --> y")
    assert "<!--" not in clean and "-->" not in clean
    assert "skillopt-sleep:learned:end" in clean


def test_sanitize_limit_adds_ellipsis():
    assert sanitize("abcdefghij", 5) == "abcd…"
    assert sanitize("abc", 5) == "abc"
    assert sanitize(None) == ""


def _report() -> NightReport:
    harmful = Edit("skill", "add", "Never write | tests", rationale="speed", evidence=["t-1"])
    good = Edit("memory", "add", "Use conventional commits.\x1b[2J", rationale="t-2 failed", evidence=["t-2", "t-3"])
    return NightReport(
        night_id="20250101-0300-abc",
        project="/home/dev/my proj",
        mode="run",
        status="staged",
        started=datetime(2025, 1, 1, 3, tzinfo=timezone.utc),
        backends={"target": "sim:seed=7", "optimizer": "sim:seed=7"},
        n_sessions=12,
        n_tasks=9,
        splits={"train": 5, "val": 3, "test": 1},
        baseline=0.5,
        candidate=0.75,
        test_baseline=0.4,
        test_candidate=0.6,
        accepted_edits=[good],
        rejected_edits=[{"edit": harmful.to_dict(), "reasons": ["regressed task a|b", "mean fell 0.10"]}],
        decisions=[
            GateDecision(
                accepted=False,
                action="reject",
                baseline=0.5,
                candidate=0.4,
                per_task=[TaskDelta("a|b", 1.0, 0.5, -0.5, 4, 4, regressed=True), TaskDelta("c", 0.0, 0.0, 0.0, 4, 4)],
                statistic={"wins": 0},
                reasons=["regressed task a|b"],
                edits=[harmful],
            )
        ],
        calls={"attempt": 40, "reflect": 2},
        usage=Usage(1000, 200, 50, 10),
        staging_dir="/home/dev/my proj/.skillopt-sleep/staging/20250101-0300-abc",
        notes=["val overlaps train <!-- hidden -->"],
    )


def test_markdown_report_has_numbers_edits_refusals_and_gate_table():
    md = render_markdown(_report())
    assert "# skillopt-sleep night 20250101-0300-abc" in md
    assert "0.500 → 0.750 (+0.250)" in md
    assert "0.400 → 0.600" in md  # test split, measured only
    assert "42 (attempt 40, reflect 2)" in md
    assert "input 1,000" in md
    assert "Use conventional commits." in md and "\x1b" not in md
    assert "t-2" in md and "t-3" in md
    refused = md.split("## Refused edits (1)")[1].split("## Gate decisions")[0]
    assert "Never write | tests" in refused
    assert "- regressed task a\\|b" not in refused  # only table cells are pipe-escaped
    assert "- regressed task a|b" in refused and "- mean fell 0.10" in refused
    assert "| a\\|b | 1.000 (n=4) | 0.500 (n=4) | -0.500 | **yes** |" in md
    assert "<!--" not in md
    assert "skillopt-sleep adopt --project '/home/dev/my proj' --night 20250101-0300-abc" in md


def test_markdown_table_rows_have_constant_column_count():
    md = render_markdown(_report())
    rows = [line for line in md.splitlines() if line.startswith("| a")]
    assert rows
    for row in rows:
        unescaped = row.replace("\\|", "")
        assert unescaped.count("|") == 6


def test_markdown_without_staging_says_nothing_staged():
    report = NightReport(night_id="n", project="/p", mode="dry-run", status="no-tasks")
    md = render_markdown(report)
    assert "Nothing was staged." in md
    assert "None." in md


def test_render_text_is_a_compact_summary():
    text = render_text(_report())
    assert "staged (run)" in text
    assert "val score 0.500 → 0.750" in text
    assert "accepted 1 edit(s)" in text and "refused 1 edit(s)" in text
    assert "regressed task a|b" in text
    assert "adopt with: skillopt-sleep adopt" in text
    assert "\x1b" not in text


def _scoped_report() -> NightReport:
    rule = Edit(
        "skill",
        "add",
        "When writing a commit message, end with a trailer.",
        scope="writing a commit message",
        evidence=["t-1"],
    )
    broad = Edit("memory", "add", "Money is Decimal.", evidence=["t-1", "t-2"])
    return NightReport(
        night_id="n",
        project="/p",
        mode="demo",
        status="staged",
        baseline=0.5,
        candidate=0.7,
        accepted_edits=[rule, broad],
        decisions=[
            GateDecision(
                accepted=True,
                action="accept",
                baseline=0.5,
                candidate=0.6,
                edits=[rule],
                per_task=[
                    TaskDelta("v-1", 0.25, 0.75, 0.5, 4, 4),
                    TaskDelta("v-2", 0.5, 0.5, 0.0, 4, 4),
                    TaskDelta("v-3", 1.0, 0.9, -0.1, 4, 4),
                ],
                statistic={"gain": 0.5, "lower_bound": 0.125},
            ),
            GateDecision(accepted=False, action="reject", baseline=0.5, candidate=0.5, edits=[broad]),
        ],
        task_index={
            "v-1": {"kind": "commit message"},
            "v-2": {"kind": "commit message"},
            "v-3": {"kind": "release notes"},
        },
    )


def test_text_report_shows_each_rules_scope_and_why_it_was_accepted():
    text = render_text(_scoped_report())
    assert "scope: writing a commit message" in text and "scope: all kinds" in text
    why = [line for line in text.splitlines() if "why:" in line]
    assert len(why) == 1  # no accepting decision recorded for the broad rule: no reason invented
    assert "this rule alone" in why[0]
    assert "commit message +0.25 on 2 task(s)" in why[0] and "release notes -0.10 on 1 task(s)" in why[0]
    assert "val 0.500 -> 0.600, gain +0.500 (lower bound +0.125)" in why[0]


def test_markdown_report_shows_scope_and_reason():
    md = render_markdown(_scoped_report())
    assert "Scope: writing a commit message" in md and "Scope: all kinds" in md
    assert "Accepted because: this rule alone: commit message +0.25 on 2 task(s)" in md


def test_why_names_the_checks_a_rule_was_gated_on():
    report = _scoped_report()
    rule = report.accepted_edits[0]
    rule.targets = ['{"arg": "Refs: ACME-", "op": "contains"}']
    report.decisions[0].statistic["gain_of"] = "the checks it fixes"
    [why] = [line for line in render_text(report).splitlines() if "why:" in line]
    assert 'gain +0.500 on what it fixes (must contain "Refs: ACME-") (lower bound +0.125)' in why
    report.decisions[0].statistic["gain_of"] = "the score"
    [why] = [line for line in render_text(report).splitlines() if "why:" in line]
    assert "what it fixes" not in why, "a gain measured on the score is not said to be the checks'"
    assert why.endswith('(lower bound +0.125); on its train tasks it fixed: must contain "Refs: ACME-"')


# -- the overridden hand-written line, in every view ---------------------------------------------

HAND_WRITTEN = "Never run the whole test suite."


def overriding_night() -> NightReport:
    rule = Edit("memory", "add", "Run the whole test suite before a commit.", supersedes=HAND_WRITTEN, evidence=["v-1"])
    decision = GateDecision(
        accepted=True,
        action="accept",
        baseline=0.3,
        candidate=0.9,
        edits=[rule],
        per_task=[TaskDelta("v-1", 0.3, 0.9, 0.6, 8, 8)],
        statistic={"gain": 0.6, "lower_bound": 0.2},
    )
    return NightReport(
        night_id="n",
        project="/p",
        mode="run",
        status="staged",
        accepted_edits=[rule],
        decisions=[decision],
        task_index={"v-1": {"kind": "commit", "split": "val", "excerpt": "x"}},
    )


def test_report_md_names_the_overridden_line():
    text = render_markdown(overriding_night())
    assert OVERRIDES in text and f"> {HAND_WRITTEN}" in text


def test_a_cell_cannot_open_a_code_span_or_a_column():
    assert cell("a`b|c") == "a'b\\|c"
