"""What a person must see about a rule is in every view of a proposal: report.md, ``review`` and
report.html show the hand-written line a rule overrides, under the same words."""

from __future__ import annotations

from skillopt_sleep.commands.review import render_review
from skillopt_sleep.report.html import render_html
from skillopt_sleep.report.markdown import cell, render_markdown
from skillopt_sleep.report.proposal import OVERRIDES, build_view
from skillopt_sleep.types import Edit, GateDecision, NightReport, TaskDelta

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


def test_review_names_the_overridden_line():
    text = render_review(build_view(overriding_night(), {}, "staged", "/s"))
    assert OVERRIDES in text and f"> {HAND_WRITTEN}" in text


def test_report_html_names_the_overridden_line():
    html = render_html(build_view(overriding_night(), {}, "staged", "/s"), [])
    assert OVERRIDES in html and f"<blockquote>{HAND_WRITTEN}</blockquote>" in html


def test_a_cell_cannot_open_a_code_span_or_a_column():
    assert cell("a`b|c") == "a'b\\|c"
