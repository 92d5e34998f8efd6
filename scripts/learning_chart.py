"""bench_learning's chart: held-out test score per night as a plain SVG line chart."""

from __future__ import annotations

from typing import Any

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def svg_chart(summaries: list[dict[str, Any]], nights: int, title: str) -> str:
    """Mean test score per night: engine solid, strict mean dashed, ceiling dotted; one colour per skill."""
    width, height, left, right, top, bottom = 760, 420, 60, 220, 40, 50
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(n: float) -> float:
        return left + plot_w * n / max(1, nights)

    def y(v: float) -> float:
        return top + plot_h * (1 - v)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{left}" y="22" font-size="14">{_xml(title)}</text>']
    for i in range(11):
        v = i / 10
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
    for n in range(nights + 1):
        parts.append(f'<text x="{x(n):.1f}" y="{top + plot_h + 18}" text-anchor="middle">{n}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 10}" text-anchor="middle">night (0 = before any)</text>')
    parts.append(f'<text x="16" y="{top + plot_h / 2}" transform="rotate(-90 16 {top + plot_h / 2})" '
                 'text-anchor="middle">held-out test score</text>')
    for i, s in enumerate(summaries):
        colour = COLOURS[i % len(COLOURS)]
        for policy, dash in (("engine", ""), ("strict_mean", ' stroke-dasharray="6 4"')):
            if policy not in s["per_night"]:
                continue
            points = [(x(n), y(v)) for n, v in enumerate(s["per_night"][policy]) if v is not None]
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        if s["ceiling"] is not None:
            parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(s["ceiling"]):.1f}" y2="{y(s["ceiling"]):.1f}" '
                         f'stroke="{colour}" stroke-dasharray="2 3"/>')
        ly = top + 16 + 18 * i
        parts.append(f'<line x1="{left + plot_w + 16}" x2="{left + plot_w + 40}" y1="{ly}" y2="{ly}" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{left + plot_w + 46}" y="{ly + 4}">{_xml(s["skill"])}</text>')
    ly = top + 16 + 18 * len(summaries) + 10
    for j, (label, dash) in enumerate((("engine", ""), ("strict mean", "6 4"), ("ceiling", "2 3"))):
        yy = ly + 18 * j
        parts.append(f'<line x1="{left + plot_w + 16}" x2="{left + plot_w + 40}" y1="{yy}" y2="{yy}" stroke="black" '
                     f'stroke-dasharray="{dash}"/>')
        parts.append(f'<text x="{left + plot_w + 46}" y="{yy + 4}">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def svg_policies_chart(summaries: list[dict[str, Any]], nights: int, title: str) -> str:
    """Mean share of the ceiling over the skills, per night, one line per policy (e.g. the engine
    at several call caps), with the 95 % line the learning target asks for."""
    width, height, left, right, top, bottom = 760, 420, 60, 220, 40, 50
    plot_w, plot_h = width - left - right, height - top - bottom
    policies = list(dict.fromkeys(p for s in summaries for p in s.get("fraction_of_ceiling", {})))

    def x(n: float) -> float:
        return left + plot_w * n / max(1, nights)

    def y(v: float) -> float:
        return top + plot_h * (1 - min(1.1, max(0.0, v)) / 1.1)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{left}" y="22" font-size="14">{_xml(title)}</text>']
    for i in range(12):
        v = i / 10
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
    parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(0.95):.1f}" y2="{y(0.95):.1f}" stroke="black" '
                 'stroke-dasharray="2 3"/>')
    for n in range(nights + 1):
        parts.append(f'<text x="{x(n):.1f}" y="{top + plot_h + 18}" text-anchor="middle">{n}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 10}" text-anchor="middle">night (0 = before any)</text>')
    parts.append(f'<text x="16" y="{top + plot_h / 2}" transform="rotate(-90 16 {top + plot_h / 2})" '
                 'text-anchor="middle">share of the ceiling (mean over skills)</text>')
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
        parts.append(f'<line x1="{left + plot_w + 16}" x2="{left + plot_w + 40}" y1="{ly}" y2="{ly}" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{left + plot_w + 46}" y="{ly + 4}">{_xml(policy)}</text>')
    ly = top + 16 + 18 * len(policies) + 10
    parts.append(f'<line x1="{left + plot_w + 16}" x2="{left + plot_w + 40}" y1="{ly}" y2="{ly}" stroke="black" '
                 'stroke-dasharray="2 3"/>')
    parts.append(f'<text x="{left + plot_w + 46}" y="{ly + 4}">95 % of ceiling</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
