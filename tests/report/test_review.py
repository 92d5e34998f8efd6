"""The staged proposal as ``review`` prints it (``report/review.py``), from a view built in memory:
the gate table, the hand-written line a rule overrides, a diff fence no diff can close, and the next
step named as the person types it. The command around it is tested in tests/commands/test_review.py."""

from __future__ import annotations

import pytest

from skillopt_sleep.report.proposal import OVERRIDES, DocumentDiff, ProposalView, build_view
from skillopt_sleep.report.review import render_review
from skillopt_sleep.types import Edit, GateDecision, NightReport, TaskDelta
from tests.report.test_markdown import HAND_WRITTEN, overriding_night


def test_review_names_the_overridden_line():
    text = render_review(build_view(overriding_night(), {}, "staged", "/s"))
    assert OVERRIDES in text and f"> {HAND_WRITTEN}" in text


def test_a_decision_shows_what_it_tested_its_numbers_reasons_and_each_task():
    night = overriding_night()
    rule = night.accepted_edits[0]
    night.decisions.append(
        GateDecision(
            accepted=False,
            action="reject",
            baseline=0.5,
            candidate=0.4,
            edits=[rule, Edit("memory", "add", "Another rule.")],
            per_task=[TaskDelta("v-2", 0.5, 0.1, -0.4, 6, 6, regressed=True)],
            statistic={"gain": -0.4, "p_value": 0.00012},
            reasons=["task v-2 regressed"],
        )
    )
    text = render_review(build_view(night, {}, "staged", "/s"))
    assert "Gate (this rule alone): **accepted**, val 0.300 → 0.900 (gain=0.600, lower_bound=0.200)" in text
    assert "Gate (2 rules together): **refused**, val 0.500 → 0.400 (gain=-0.400, p=0.00012)" in text
    assert "- task v-2 regressed" in text
    assert "| v-2 | 0.500 (n=6) | 0.100 (n=6) | -0.400 | **yes** |" in text
    assert "| v-1 | 0.300 (n=8) | 0.900 (n=8) | +0.600 | no |" in text


def test_no_diff_can_close_its_fence():
    diff = "+ a rule with ```` four backticks\n"
    view = ProposalView(
        NightReport(night_id="n", project="/p", mode="run", status="staged"),
        "staged",
        "/s",
        documents=[DocumentDiff("memory", "/p/CLAUDE.md", diff)],
    )
    text = render_review(view)
    assert "`````diff\n+ a rule with ```` four backticks\n`````" in text


@pytest.mark.parametrize("inside", [False, True])
def test_the_next_step_is_named_as_the_person_types_it(inside: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CLAUDECODE", "CODEX_THREAD_ID"):
        monkeypatch.delenv(name, raising=False)
    if inside:
        monkeypatch.setenv("CLAUDECODE", "1")
    view = ProposalView(
        NightReport(night_id="20260101T000000Z-ab12", project="/p", mode="run", status="staged"),
        "staged",
        "/s",
        documents=[DocumentDiff("memory", "/p/CLAUDE.md", "+ x\n")],
    )
    text = render_review(view)
    assert "## Next step" in text
    if inside:
        assert "`/skillopt-sleep adopt --night 20260101T000000Z-ab12`" in text
    else:
        assert "skillopt-sleep adopt --project" in text and "/skillopt-sleep adopt" not in text
