"""bench_learning's report: the per-skill summary of its runs, the JSON it prints, and its charts
(held-out test score per night; mean share of the ceiling per policy) as plain SVG."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


@dataclass
class Summary:
    skill: str
    ceiling: float | None = None
    per_night: dict[str, list[float | None]] = field(default_factory=dict)
    calls: dict[str, list[float | None]] = field(default_factory=dict)
    rules_lowering_a_kind: dict[str, int] = field(default_factory=dict)
    final_rules: dict[str, float | None] = field(default_factory=dict)


def emit(report: dict[str, Any], out: Path | None) -> None:
    """Print the report as JSON, and write it to ``out`` too when given."""
    text = json.dumps(report, indent=2)
    print(text)
    if out:
        out.write_text(text + "\n", encoding="utf-8")


def summarise(results: list[dict[str, Any]], nights: int, order: list[str]) -> list[dict[str, Any]]:
    """Per skill (in ``order``) and policy: mean test score and calls per night, rules that lower
    a kind, final rule count, share of the ceiling, and the first night at 95 % of it."""
    out = []
    for skill in sorted({r["skill"] for r in results}, key=order.index):
        mine = [r for r in results if r["skill"] == skill]
        summary = Summary(skill)
        summary.ceiling = _mean([r["ceiling"]["all"] for r in mine if r["policy"] == mine[0]["policy"]])
        for policy in dict.fromkeys(r["policy"] for r in mine):
            runs = [r for r in mine if r["policy"] == policy]
            summary.per_night[policy] = [
                _mean([r["nights"][n]["test"]["all"] for r in runs]) for n in range(nights + 1)
            ]
            summary.calls[policy] = [_mean([r["nights"][n]["calls"] for r in runs]) for n in range(1, nights + 1)]
            summary.rules_lowering_a_kind[policy] = sum(len(r["rules_lowering_a_kind"]) for r in runs)
            summary.final_rules[policy] = _mean([len(r["final_rules"]) for r in runs])
        row = summary.__dict__.copy()
        if summary.ceiling:
            row["fraction_of_ceiling"] = {
                p: [None if v is None else round(v / summary.ceiling, 3) for v in vs]
                for p, vs in summary.per_night.items()
            }
            night3 = min(3, nights)
            row["reaches_95pct_by_night_3"] = {
                p: bool(any(v is not None and v >= 0.95 * summary.ceiling for v in vs[1 : night3 + 1]))
                for p, vs in summary.per_night.items()
            }
            row["first_night_at_95pct"] = {
                p: next((n for n, v in enumerate(vs) if v is not None and v >= 0.95 * summary.ceiling), None)
                for p, vs in summary.per_night.items()
            }
        out.append(row)
    return out


class _Frame:
    """The plot area both charts share: nights along x, 0..``top_value`` up y."""

    width, height, left, right, top, bottom = 760, 420, 60, 220, 40, 50

    def __init__(self, nights: int, top_value: float):
        self.nights, self.top_value = nights, top_value
        self.plot_w = self.width - self.left - self.right
        self.plot_h = self.height - self.top - self.bottom

    def x(self, n: float) -> float:
        return self.left + self.plot_w * n / max(1, self.nights)

    def y(self, v: float) -> float:
        return self.top + self.plot_h * (1 - min(self.top_value, max(0.0, v)) / self.top_value)

    def axes(self, title: str, y_label: str) -> list[str]:
        """The SVG's opening, title, grid every 0.1, night numbers and axis labels."""
        left, plot_w, plot_h, top = self.left, self.plot_w, self.plot_h, self.top
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
            f'font-family="sans-serif" font-size="12">',
            f'<rect width="{self.width}" height="{self.height}" fill="white"/>',
            f'<text x="{left}" y="22" font-size="14">{_xml(title)}</text>',
        ]
        for i in range(round(self.top_value * 10) + 1):
            v = i / 10
            parts.append(
                f'<line x1="{left}" x2="{left + plot_w}" y1="{self.y(v):.1f}" y2="{self.y(v):.1f}" stroke="#eee"/>'
            )
            parts.append(f'<text x="{left - 8}" y="{self.y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
        for n in range(self.nights + 1):
            parts.append(f'<text x="{self.x(n):.1f}" y="{top + plot_h + 18}" text-anchor="middle">{n}</text>')
        parts.append(
            f'<text x="{left + plot_w / 2}" y="{self.height - 10}" text-anchor="middle">night (0 = before any)</text>'
        )
        parts.append(
            f'<text x="16" y="{top + plot_h / 2}" transform="rotate(-90 16 {top + plot_h / 2})" '
            f'text-anchor="middle">{_xml(y_label)}</text>'
        )
        return parts


def svg_chart(summaries: list[dict[str, Any]], nights: int, title: str) -> str:
    """Mean test score per night: engine solid, strict mean dashed, ceiling dotted; one colour per skill."""
    frame = _Frame(nights, 1.0)
    parts = frame.axes(title, "held-out test score")
    x, y = frame.x, frame.y
    left, plot_w, top = frame.left, frame.plot_w, frame.top
    for i, s in enumerate(summaries):
        colour = COLOURS[i % len(COLOURS)]
        for policy, dash in (("engine", ""), ("strict_mean", ' stroke-dasharray="6 4"')):
            if policy not in s["per_night"]:
                continue
            points = [(x(n), y(v)) for n, v in enumerate(s["per_night"][policy]) if v is not None]
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        if s["ceiling"] is not None:
            parts.append(
                f'<line x1="{left}" x2="{left + plot_w}" y1="{y(s["ceiling"]):.1f}" y2="{y(s["ceiling"]):.1f}" '
                f'stroke="{colour}" stroke-dasharray="2 3"/>'
            )
        ly = top + 16 + 18 * i
        parts.append(
            f'<line x1="{left + plot_w + 16}" x2="{left + plot_w + 40}" y1="{ly}" y2="{ly}" '
            f'stroke="{colour}" stroke-width="2"/>'
        )
        parts.append(f'<text x="{left + plot_w + 46}" y="{ly + 4}">{_xml(s["skill"])}</text>')
    ly = top + 16 + 18 * len(summaries) + 10
    for j, (label, dash) in enumerate((("engine", ""), ("strict mean", "6 4"), ("ceiling", "2 3"))):
        yy = ly + 18 * j
        parts.append(
            f'<line x1="{left + plot_w + 16}" x2="{left + plot_w + 40}" y1="{yy}" y2="{yy}" stroke="black" '
            f'stroke-dasharray="{dash}"/>'
        )
        parts.append(f'<text x="{left + plot_w + 46}" y="{yy + 4}">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def svg_policies_chart(summaries: list[dict[str, Any]], nights: int, title: str) -> str:
    """Mean share of the ceiling over the skills, per night, one line per policy (e.g. the engine
    at several call caps), with the 95 % line the learning target asks for."""
    policies = list(dict.fromkeys(p for s in summaries for p in s.get("fraction_of_ceiling", {})))
    frame = _Frame(nights, 1.1)
    parts = frame.axes(title, "share of the ceiling (mean over skills)")
    x, y = frame.x, frame.y
    left, plot_w, top = frame.left, frame.plot_w, frame.top
    parts.append(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{y(0.95):.1f}" y2="{y(0.95):.1f}" stroke="black" '
        'stroke-dasharray="2 3"/>'
    )
    for i, policy in enumerate(policies):
        colour = COLOURS[i % len(COLOURS)]
        rows = [s["fraction_of_ceiling"][policy] for s in summaries if policy in s.get("fraction_of_ceiling", {})]
        points = []
        for n in range(nights + 1):
            values = [r[n] for r in rows if n < len(r) and r[n] is not None]
            if values:
                points.append((x(n), y(sum(values) / len(values))))
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        ly = top + 16 + 18 * i
        parts.append(
            f'<line x1="{left + plot_w + 16}" x2="{left + plot_w + 40}" y1="{ly}" y2="{ly}" '
            f'stroke="{colour}" stroke-width="2"/>'
        )
        parts.append(f'<text x="{left + plot_w + 46}" y="{ly + 4}">{_xml(policy)}</text>')
    ly = top + 16 + 18 * len(policies) + 10
    parts.append(
        f'<line x1="{left + plot_w + 16}" x2="{left + plot_w + 40}" y1="{ly}" y2="{ly}" stroke="black" '
        'stroke-dasharray="2 3"/>'
    )
    parts.append(f'<text x="{left + plot_w + 46}" y="{ly + 4}">95 % of ceiling</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
