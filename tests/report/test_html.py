"""report.html (report/html.py): self-contained (no script, nothing fetched), untrusted text
escaped, each rule with its scope, why it was accepted and the hand-written line it overrides, and
an inline SVG trend of the project's score across nights that really renders — checked by
screenshot in a headless Chromium. The chart's own points and lines are tested in
test_trend_chart.py."""

from __future__ import annotations

import re
from pathlib import Path

from skillopt_sleep.staging import stage as staging
from skillopt_sleep.report.html import render_html
from skillopt_sleep.report.proposal import OVERRIDES, build_view
from skillopt_sleep.report.trend_chart import LINE_COLOUR
from skillopt_sleep.types import NightReport
from tests.support.chromium import chromium_or_skip, screenshot
from tests.support.png import read_png
from tests.report.test_markdown import HAND_WRITTEN, overriding_night
from tests.report.test_trend_chart import past

SCORES = [0.30, 0.45, 0.40, 0.60]  # past nights; this night ends at 0.80


def stage_night(project: Path, past_nights: list[dict], current: float | None = 0.8) -> Path:
    report = NightReport(
        night_id="20260110T000000Z-beef",
        project=str(project),
        mode="run",
        status="no-change",
        baseline=current,
        candidate=current,
    )
    return staging.stage(project, report, [], past_nights=past_nights) / "report.html"


def test_report_html_is_self_contained(tmp_path: Path) -> None:
    html = stage_night(tmp_path, past(SCORES)).read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "<polyline" in html
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    for forbidden in ("<script", "<link", "<img", "<iframe", "@import", "url("):
        assert forbidden not in html.lower()
    assert set(re.findall(r"https?://[^\s\"'<>]+", html)) <= {"http://www.w3.org/2000/svg"}


def _line_pixels(png: bytes) -> list[tuple[int, int]]:
    image = read_png(png, max_rows=800)
    target = tuple(int(LINE_COLOUR[i : i + 2], 16) for i in (1, 3, 5))
    found = []
    for y in range(image.height):
        for x in range(image.width):
            pixel = image.pixel(x, y)
            if all(abs(pixel[c] - target[c]) <= 8 for c in range(3)):
                found.append((x, y))
    return found


def test_the_trend_chart_renders_in_a_real_browser(tmp_path: Path) -> None:
    chromium = chromium_or_skip()
    page = stage_night(tmp_path / "with", past(SCORES))
    pixels = _line_pixels(screenshot(chromium, page, tmp_path / "with.png"))
    assert len(pixels) > 300, f"only {len(pixels)} pixels of the line colour"
    xs = [x for x, _ in pixels]
    assert max(xs) - min(xs) > 400  # a line across the chart, not a stray dot
    left = [y for x, y in pixels if x < min(xs) + 10]
    right = [y for x, y in pixels if x > max(xs) - 10]
    # first night 0.30, this night 0.80: the line climbs by about half the plot height (~100 px)
    assert 70 < (sum(left) / len(left)) - (sum(right) / len(right)) < 130

    # control: the same page without any scored night has no pixel of the line colour
    (tmp_path / "without").mkdir()
    blank = stage_night(tmp_path / "without", [], current=None)
    assert "no scored night yet" in blank.read_text()
    assert _line_pixels(screenshot(chromium, blank, tmp_path / "without.png")) == []


def test_each_rule_shows_its_scope_and_why_it_was_accepted() -> None:
    from skillopt_sleep.report.proposal import build_view
    from skillopt_sleep.report.html import render_html
    from skillopt_sleep.types import Edit, GateDecision, TaskDelta

    rule = Edit(
        "skill", "add", "When writing a <commit>, end with a trailer.", scope="writing a <commit>", evidence=["v-1"]
    )
    report = NightReport(
        night_id="n",
        project="/p",
        mode="run",
        status="staged",
        accepted_edits=[rule],
        decisions=[
            GateDecision(
                accepted=True,
                action="accept",
                baseline=0.5,
                candidate=0.6,
                edits=[rule],
                per_task=[TaskDelta("v-1", 0.25, 0.75, 0.5, 4, 4)],
                statistic={"gain": 0.5, "lower_bound": 0.1},
            )
        ],
        task_index={"v-1": {"kind": "commit message", "split": "val", "excerpt": "x"}},
    )
    html = render_html(build_view(report, {}, "staged", "/s"), [])
    assert "for writing a &lt;commit&gt;" in html
    assert "Accepted because: this rule alone: commit message +0.50 on 1 task(s)" in html


def test_report_html_names_the_overridden_line():
    html = render_html(build_view(overriding_night(), {}, "staged", "/s"), [])
    assert OVERRIDES in html and f"<blockquote>{HAND_WRITTEN}</blockquote>" in html
