"""The project's score across nights as an inline SVG line chart (report/trend_chart.py): the
points are the history plus this night, and the line runs through every scored night with a gap
for one without a score. That the chart really renders is checked by screenshot in test_html.py."""

from __future__ import annotations

import re

from skillopt_sleep.report.trend_chart import TrendPoint, render_svg, trend_points
from skillopt_sleep.types import NightReport


def past(scores: list[float | None]) -> list[dict]:
    return [
        {
            "night_id": f"2026010{i + 1}T000000Z-000{i}",
            "baseline": s,
            "candidate": s,
            "n_accepted": 0,
            "finished": f"2026-01-0{i + 1}T00:00:00Z",
            "simulated": i == 1,
        }
        for i, s in enumerate(scores)
    ]


def test_trend_points_are_the_history_plus_this_night() -> None:
    report = NightReport(night_id="now", project="/p", mode="run", status="no-change", baseline=0.5)
    points = trend_points(past([0.2, None]) + [{"night_id": "now", "baseline": 0.1}], report)
    assert [p.score for p in points] == [0.2, None, 0.5]
    assert points[-1].current and not points[0].current and points[1].simulated


def test_svg_has_a_line_through_every_scored_night_and_a_gap_for_none() -> None:
    points = [TrendPoint(f"n{i}", s, "") for i, s in enumerate([0.2, 0.4, None, 0.6, 0.9])]
    svg = render_svg(points)
    lines = re.findall(r'<polyline points="([^"]+)"', svg)
    assert [len(line.split()) for line in lines] == [2, 2]
    assert svg.count("<circle") == 4 and "<script" not in svg
