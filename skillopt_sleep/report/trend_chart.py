"""The project's score across nights as an inline SVG line chart (for ``report.html``).

The line is the score of the documents in effect (score_trend.py): each night's baseline, or its
candidate once adopted and not reverted. Each night's baseline is a small grey square; a proposal
is a diamond joined to its baseline by a dashed stroke, coloured by its fate (staged, adopted,
reverted), never part of the line.

Plain SVG, no script, fixed size: it renders the same in any browser and in a screenshot. Every
label is escaped. A night without a score leaves a gap; simulated nights are drawn hollow.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from skillopt_sleep.report.score_trend import night_scores
from skillopt_sleep.types import NightReport, format_time

LINE_COLOUR = "#1f6feb"
BASELINE_COLOUR = "#6e7781"
STATE_COLOURS = {"staged": "#bc4c00", "adopted": "#1a7f37", "reverted": "#cf222e"}  # a proposal's fate
WIDTH, HEIGHT = 640, 260
_LEFT, _RIGHT, _TOP, _BOTTOM = 48, 40, 16, 40


@dataclass(frozen=True)
class TrendPoint:
    night_id: str
    score: float | None  # val score of the documents in effect after the night (score_trend.py)
    when: str
    simulated: bool = False
    current: bool = False
    baseline: float | None = None  # the live documents' score when the night ran
    proposed: float | None = None  # its proposal's score (None: it proposed no rule)
    state: str = ""  # staged | adopted | reverted | no-change | ...


def trend_points(
    past_nights: list[dict[str, Any]], report: NightReport, states: dict[str, str] | None = None
) -> list[TrendPoint]:
    """History entries of the project (oldest first) plus ``report``'s night; ``states``: what the
    adoption ledger says became of each night (store.proposals.adoption_states)."""
    states = states or {}
    mine = {
        "night_id": report.night_id,
        "n_accepted": len(report.accepted_edits),
        "candidate": report.candidate,
        "baseline": report.baseline,
        "status": report.status,
        "finished": format_time(report.finished or report.started) or "",
        "simulated": report.simulated,
    }
    nights = [mine if n.get("night_id") == report.night_id else n for n in past_nights]
    if mine not in nights:  # the night being staged: not in the history yet
        nights.append(mine)
    points = []
    for n in nights:
        s = night_scores(n, states)
        points.append(
            TrendPoint(
                night_id=s.night_id,
                score=_number(s.live),
                when=s.when,
                simulated=s.simulated,
                current=n is mine,
                baseline=_number(s.baseline),
                proposed=_number(s.proposed),
                state=s.state,
            )
        )
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
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="trend-title">',
        '<title id="trend-title">Validation score across nights</title>',
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        _, y = _xy(0, 2, tick)
        out.append(f'<line x1="{_LEFT}" y1="{y}" x2="{WIDTH - _RIGHT}" y2="{y}" stroke="#d0d7de" stroke-width="1"/>')
        out.append(
            f'<text x="{_LEFT - 6}" y="{y + 4}" font-size="11" text-anchor="end" fill="#57606a">{tick:.2f}</text>'
        )
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
            out.append(
                f'<polyline points="{" ".join(seg)}" fill="none" stroke="{LINE_COLOUR}" '
                'stroke-width="3" stroke-linejoin="round"/>'
            )
    for i, p in enumerate(points):
        out += _baseline_and_proposal(i, n, p)
    for i, p in enumerate(points):
        if p.score is None:
            continue
        label = "this night" if p.current else (p.when[:10] or f"night {i + 1}")
        x, y = _xy(i, n, p.score)
        fill = "#ffffff" if p.simulated else LINE_COLOUR
        radius = 6 if p.current else 4
        tip = escape(f"{p.night_id}: documents in effect {p.score:.3f}" + (" (simulated)" if p.simulated else ""))
        out.append(
            f'<circle cx="{x}" cy="{y}" r="{radius}" fill="{fill}" stroke="{LINE_COLOUR}" '
            f'stroke-width="2" data-night="{escape(p.night_id)}"><title>{tip}</title></circle>'
        )
        if n <= 12 or p.current or i == 0:
            out.append(
                f'<text x="{x}" y="{HEIGHT - _BOTTOM + 18}" font-size="11" '
                f'text-anchor="middle" fill="#57606a">{escape(label)}</text>'
            )
    if not any(p.score is not None for p in points):
        out.append(
            f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" font-size="13" text-anchor="middle" '
            'fill="#57606a">no scored night yet</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def _baseline_and_proposal(index: int, count: int, p: TrendPoint) -> list[str]:
    """A night's baseline (grey square) and its proposal (a diamond in its state's colour, joined
    to the baseline by a dashed stroke): drawn under the line, never part of it."""
    out = []
    if p.baseline is not None:
        x, y = _xy(index, count, p.baseline)
        out.append(
            f'<rect x="{x - 3}" y="{y - 3}" width="6" height="6" fill="{BASELINE_COLOUR}" '
            f'data-baseline="{escape(p.night_id)}"><title>{escape(p.night_id)}: baseline '
            f"{p.baseline:.3f}</title></rect>"
        )
    if p.proposed is None:
        return out
    colour = STATE_COLOURS.get(p.state, BASELINE_COLOUR)
    x, y = _xy(index, count, p.proposed)
    if p.baseline is not None:
        _, y0 = _xy(index, count, p.baseline)
        out.append(
            f'<line x1="{x}" y1="{y0}" x2="{x}" y2="{y}" stroke="{colour}" stroke-width="1.5" stroke-dasharray="4 3"/>'
        )
    diamond = f"{x},{y - 6} {x + 6},{y} {x},{y + 6} {x - 6},{y}"
    fill = "#ffffff" if p.simulated or p.state != "adopted" else colour
    out.append(
        f'<polygon points="{diamond}" fill="{fill}" stroke="{colour}" stroke-width="2" '
        f'data-proposal="{escape(p.night_id)}" data-state="{escape(p.state)}"><title>'
        f"{escape(p.night_id)}: proposed {p.proposed:.3f} ({escape(p.state)})</title></polygon>"
    )
    return out
