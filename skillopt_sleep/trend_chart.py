"""The project's score across nights as an inline SVG line chart (for ``report.html``).

Plain SVG, no script, fixed size: it renders the same in any browser and in a screenshot. Every
label is escaped. A night without a score leaves a gap; simulated nights are drawn hollow.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from skillopt_sleep.history import night_score
from skillopt_sleep.types import NightReport, format_time

LINE_COLOUR = "#1f6feb"
WIDTH, HEIGHT = 640, 260
_LEFT, _RIGHT, _TOP, _BOTTOM = 48, 40, 16, 40


@dataclass(frozen=True)
class TrendPoint:
    night_id: str
    score: float | None  # val score of the documents the night left staged
    when: str
    simulated: bool = False
    current: bool = False


def trend_points(past_nights: list[dict[str, Any]], report: NightReport) -> list[TrendPoint]:
    """History entries of the project (oldest first) plus the night being staged."""
    points = [TrendPoint(night_id=str(n.get("night_id") or "?"), score=_number(night_score(n)),
                         when=str(n.get("finished") or n.get("started") or ""),
                         simulated=bool(n.get("simulated")))
              for n in past_nights if n.get("night_id") != report.night_id]
    current = night_score({"n_accepted": len(report.accepted_edits), "candidate": report.candidate,
                           "baseline": report.baseline})
    points.append(TrendPoint(night_id=report.night_id, score=_number(current),
                             when=format_time(report.finished or report.started) or "",
                             simulated=report.simulated, current=True))
    return points


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return min(1.0, max(0.0, float(value)))


def _xy(index: int, count: int, score: float) -> tuple[float, float]:
    span_x = WIDTH - _LEFT - _RIGHT
    x = _LEFT + (span_x / 2 if count == 1 else span_x * index / (count - 1))
    y = _TOP + (HEIGHT - _TOP - _BOTTOM) * (1.0 - score)
    return round(x, 1), round(y, 1)


def render_svg(points: list[TrendPoint], last: int = 30) -> str:
    """An SVG line chart of the last ``last`` nights' scores (0..1)."""
    points = points[-last:]
    n = len(points)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="trend-title">',
           '<title id="trend-title">Validation score across nights</title>',
           f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>']
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        _, y = _xy(0, 2, tick)
        out.append(f'<line x1="{_LEFT}" y1="{y}" x2="{WIDTH - _RIGHT}" y2="{y}" stroke="#d0d7de" '
                   'stroke-width="1"/>')
        out.append(f'<text x="{_LEFT - 6}" y="{y + 4}" font-size="11" text-anchor="end" '
                   f'fill="#57606a">{tick:.2f}</text>')
    segment: list[str] = []
    segments = []
    for i, p in enumerate(points):
        if p.score is None:
            if segment:
                segments.append(segment)
            segment = []
            continue
        x, y = _xy(i, n, p.score)
        segment.append(f"{x},{y}")
    if segment:
        segments.append(segment)
    for seg in segments:
        if len(seg) > 1:
            out.append(f'<polyline points="{" ".join(seg)}" fill="none" stroke="{LINE_COLOUR}" '
                       'stroke-width="3" stroke-linejoin="round"/>')
    for i, p in enumerate(points):
        if p.score is None:
            continue
        label = "this night" if p.current else (p.when[:10] or f"night {i + 1}")
        x, y = _xy(i, n, p.score)
        fill = "#ffffff" if p.simulated else LINE_COLOUR
        radius = 6 if p.current else 4
        tip = escape(f"{p.night_id}: {p.score:.3f}" + (" (simulated)" if p.simulated else ""))
        out.append(f'<circle cx="{x}" cy="{y}" r="{radius}" fill="{fill}" stroke="{LINE_COLOUR}" '
                   f'stroke-width="2"><title>{tip}</title></circle>')
        if n <= 12 or p.current or i == 0:
            out.append(f'<text x="{x}" y="{HEIGHT - _BOTTOM + 18}" font-size="11" '
                       f'text-anchor="middle" fill="#57606a">{escape(label)}</text>')
    if not any(p.score is not None for p in points):
        out.append(f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" font-size="13" text-anchor="middle" '
                   'fill="#57606a">no scored night yet</text>')
    out.append("</svg>")
    return "\n".join(out)
