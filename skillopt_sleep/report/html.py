"""``report.html``: the staged proposal for a browser — the score trend as an inline SVG chart, and
for each proposed rule its scope, evidence and the per-task gain that justified it; refused edits;
the managed-block diffs.

Self-contained: inline CSS, no JavaScript, nothing fetched (a Content-Security-Policy says so to the
browser too). Every piece of untrusted text is sanitized and HTML-escaped.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from skillopt_sleep.documents.handwritten import conflict_notes
from skillopt_sleep.report.proposal import (
    OVERRIDES,
    decision_view,
    EvidenceTask,
    ProposalView,
    why_accepted,
)
from skillopt_sleep.report.markdown import SIMULATED_WARNING, adopt_command, nothing_learned, numbers, revert_command
from skillopt_sleep.sanitize import clean_text
from skillopt_sleep.rules.scope import scope_label
from skillopt_sleep.report.trend_chart import TrendPoint, render_svg
from skillopt_sleep.types import Edit, GateDecision, format_time

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2328;margin:24px auto;
max-width:960px;padding:0 16px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:28px}
h3{font-size:15px}table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}.warn{background:#fff1e5;border:1px solid #d4a72c;padding:8px 12px}
.rule{border:1px solid #d0d7de;border-radius:6px;padding:4px 14px;margin:12px 0}
blockquote{margin:6px 0;padding:4px 12px;border-left:4px solid #8c959f;background:#f6f8fa;
white-space:pre-wrap}pre{background:#f6f8fa;padding:8px;overflow-x:auto}
.add{color:#116329}.del{color:#82071e}.muted{color:#57606a}.yes{color:#82071e;font-weight:bold}
code{background:#f6f8fa;padding:0 3px}
"""
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _t(value: Any, limit: int | None = None) -> str:
    """Untrusted text -> safe HTML text (escaping does what ``sanitize``'s comment defusing does
    for Markdown)."""
    text = clean_text(value)
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)].rstrip() + "…"
    return escape(text)


def _edit(edit: Edit) -> list[str]:
    out = [f"<p><b>{_t(edit.target)}</b> · {_t(edit.op)} · for {_t(scope_label(edit), 200)}</p>"]
    if edit.anchor:
        out.append(f"<p class=muted>Anchor:</p><blockquote>{_t(edit.anchor, 2000)}</blockquote>")
    if edit.supersedes:
        out.append(f"<p><b>{_t(OVERRIDES)}</b></p><blockquote>{_t(edit.supersedes, 2000)}</blockquote>")
    if edit.content:
        out.append(f"<blockquote>{_t(edit.content, 2000)}</blockquote>")
    if edit.rationale:
        out.append(f"<p>Rationale: {_t(edit.rationale, 1000)}</p>")
    return out


def _scope_and_evidence(scope: list[str], evidence: list[EvidenceTask]) -> list[str]:
    out = [f"<p>Scope (task kinds of its evidence): {_t(', '.join(scope) or 'none recorded')}</p>"]
    if evidence:
        out.append("<p>Evidence:</p><ul>")
        out += [
            f"<li><code>{_t(e.task_id, 80)}</code> ({_t(e.origin, 120)}): {_t(e.excerpt, 200)}</li>" for e in evidence
        ]
        out.append("</ul>")
    return out


def _decision(decision: GateDecision) -> list[str]:
    v = decision_view(decision)
    out = [f"<p>Gate ({_t(v.label)}): <b>{v.verdict}</b>, {_t(v.scores)}"]
    if v.statistic:
        out.append(f"<br><span class=muted>{_t(v.statistic)}</span>")
    out.append("</p>")
    if v.reasons:
        out.append("<ul>" + "".join(f"<li>{_t(reason, 500)}</li>" for reason in v.reasons) + "</ul>")
    if v.rows:
        out.append(
            "<table><tr><th>val task</th><th>baseline</th><th>candidate</th><th>gain</th><th>regressed</th></tr>"
        )
        for r in v.rows:
            regressed = "<span class=yes>yes</span>" if r.regressed else "no"
            out.append(
                f"<tr><td><code>{_t(r.task_id, 80)}</code></td><td>{_t(r.baseline)}</td>"
                f"<td>{_t(r.candidate)}</td><td>{_t(r.gain)}</td><td>{regressed}</td></tr>"
            )
        out.append("</table>")
    return out


def _diff(text: str) -> str:
    lines = []
    for line in clean_text(text).splitlines():
        css = (
            "add"
            if line.startswith("+") and not line.startswith("+++")
            else ("del" if line.startswith("-") and not line.startswith("---") else "")
        )
        lines.append(f'<span class="{css}">{escape(line)}</span>' if css else escape(line))
    return "<pre>" + "\n".join(lines) + "</pre>"


def render_html(view: ProposalView, trend: list[TrendPoint]) -> str:
    """The whole page, one string."""
    r = view.report
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        f"<title>skillopt-sleep night {_t(r.night_id)}</title><style>{_CSS}</style></head><body>",
        f"<h1>skillopt-sleep night {_t(r.night_id)}</h1>",
    ]
    if r.simulated:
        out.append(f'<p class="warn">{_t(SIMULATED_WARNING)}</p>')
    out.append("<table>")
    rows = [
        ("Project", r.project),
        ("State", f"{view.state} · night status {r.status}"),
        ("Finished", format_time(r.finished) or "n/a"),
        ("Backends", ", ".join(f"{k}: {v}" for k, v in r.backends.items()) or "n/a"),
    ]
    if r.backend_choice:
        rows.append(("Backend choice", r.backend_choice))
    out += [f"<tr><th>{escape(k)}</th><td>{_t(v, 300)}</td></tr>" for k, v in rows]
    out.append("</table>")
    out.append("<h2>Numbers</h2><table>")
    out += [f"<tr><th>{_t(k, 200)}</th><td>{_t(v, 400)}</td></tr>" for k, v in numbers(r)]
    out.append("</table>")
    why = nothing_learned(r)
    if why:
        out.append(f"<p><b>Nothing learned:</b> {_t(why, 600)}</p>")

    out.append("<h2>Score across nights</h2>")
    out.append('<div class="chart">' + render_svg(trend) + "</div>")
    out.append(
        "<p class=muted>Blue line: the validation score of the documents in effect after each "
        "night — its baseline, or its candidate once adopted and not reverted. Grey squares: each "
        "night's baseline. Diamonds: proposals, joined to their baseline — orange staged, green "
        "adopted, red reverted; never part of the line. Hollow: simulated or not in effect.</p>"
    )

    for note in conflict_notes([rule.edit for rule in view.rules]):
        out.append(f'<p class="warn"><strong>Changes what you wrote:</strong> {_t(note, 800)}</p>')

    out.append(f"<h2>Proposed rules ({len(view.rules)})</h2>")
    if not view.rules:
        out.append("<p>None.</p>")
    for i, rule in enumerate(view.rules, 1):
        out.append(f'<div class="rule"><h3>Rule {i}</h3>')
        out += _edit(rule.edit) + _scope_and_evidence(rule.scope, rule.evidence)
        why = why_accepted(rule.edit, rule.decisions, r.task_index)
        if why:
            out.append(f"<p>Accepted because: {_t(why, 500)}</p>")
        for decision in rule.decisions:
            out += _decision(decision)
        out.append("</div>")

    out.append(f"<h2>Refused edits ({len(view.refused)})</h2>")
    if not view.refused:
        out.append("<p>None.</p>")
    for i, refused in enumerate(view.refused, 1):
        out.append(f'<div class="rule"><h3>Refused {i}</h3>')
        out += _edit(refused.edit) if refused.edit else ["<p>(unreadable edit)</p>"]
        out += _scope_and_evidence(refused.scope, refused.evidence)
        reasons = refused.reasons or ["(no reason recorded)"]
        out.append("<p>Refused because:</p><ul>" + "".join(f"<li>{_t(x, 500)}</li>" for x in reasons) + "</ul></div>")

    out.append("<h2>Document changes</h2>")
    if not view.documents:
        out.append("<p>No document changes.</p>")
    for doc in view.documents:
        out.append(f"<h3>{_t(doc.role)}: <code>{_t(doc.live_path)}</code></h3>")
        out.append(_diff(doc.diff) if doc.diff else "<p class=muted>(no diff recorded)</p>")

    if r.notes:
        out.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_t(n, 1000)}</li>" for n in r.notes) + "</ul>")
    if view.documents and r.accepted_edits:
        out.append(
            "<h2>Next step</h2><p>Adopt with</p>"
            f"<pre>{_t(adopt_command(r))}</pre><p>and undo later with</p>"
            f"<pre>{_t(revert_command(r))}</pre>"
        )
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def refresh_report_html(project: Path, night_id: str) -> None:
    """Re-render a staged night's report.html after it was adopted or reverted, so the page says
    what became of it (its state and the trend). Best effort: the page is for reading only; the
    manifest and the proposal files, which adoption checks, are not touched."""
    from skillopt_sleep.store.proposals import adoption_states, list_proposals
    from skillopt_sleep.files import atomic_write_text
    from skillopt_sleep.store.history import History
    from skillopt_sleep.report.proposal import load_view
    from skillopt_sleep.report.trend_chart import trend_points

    for proposal in list_proposals(project):
        if proposal.get("night_id") == night_id:
            view = load_view(proposal)
            trend = trend_points(History().nights(project), view.report, adoption_states(project))
            atomic_write_text(Path(view.staging_dir) / "report.html", render_html(view, trend))
            return
