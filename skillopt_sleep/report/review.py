"""The staged proposal as Markdown for ``skillopt-sleep review``: for each proposed rule its scope,
the evidence it came from and the per-task gain that justified it; refused edits and why; the diff
of each document's managed block.

Agents print exactly this into the conversation (the Claude Code ``/skillopt-sleep review``
command), so it is Markdown and every piece of untrusted text is sanitized. ``markdown`` renders
the night's report.md and ``html`` report.html from the same view (``proposal``).
"""

from __future__ import annotations

from pathlib import Path

from skillopt_sleep.agent_surface import ask_for, calling_agent
from skillopt_sleep.documents.handwritten import conflict_notes
from skillopt_sleep.report.markdown import (
    SIMULATED_WARNING,
    adopt_command,
    backend_lines,
    cell,
    nothing_learned,
    numbers_table,
    quote,
    revert_command,
)
from skillopt_sleep.report.night_numbers import score_text
from skillopt_sleep.report.proposal import (
    OVERRIDES,
    EvidenceTask,
    ProposalView,
    decision_view,
    why_accepted,
)
from skillopt_sleep.rules.scope import scope_label
from skillopt_sleep.sanitize import clean_text, sanitize
from skillopt_sleep.types import Edit, GateDecision, NightReport


def _edit(edit: Edit) -> list[str]:
    out = [f"Target: {sanitize(edit.target)} · {sanitize(edit.op)} · for {sanitize(scope_label(edit), 200)}", ""]
    if edit.anchor:
        out += ["Anchor:", "", *quote(edit.anchor), ""]
    if edit.supersedes:
        out += [f"**{OVERRIDES}**", "", *quote(edit.supersedes), ""]
    if edit.content:
        out += [*quote(edit.content), ""]
    if edit.rationale:
        out += [f"Rationale: {sanitize(edit.rationale, 1000)}", ""]
    return out


def _scope_and_evidence(scope: list[str], evidence: list[EvidenceTask]) -> list[str]:
    out = [f"Scope (task kinds of its evidence): {cell(', '.join(scope) or 'none recorded', 300)}", ""]
    if evidence:
        out += ["Evidence:", ""]
        out += [f"- `{cell(e.task_id, 80)}` ({cell(e.origin, 120)}): {cell(e.excerpt, 200)}" for e in evidence]
        out.append("")
    return out


def _decision(decision: GateDecision) -> list[str]:
    v = decision_view(decision)
    out = [f"Gate ({v.label}): **{v.verdict}**, {v.scores}" + (f" ({v.statistic})" if v.statistic else ""), ""]
    out += [f"- {sanitize(reason, 500)}" for reason in v.reasons]
    if v.reasons:
        out.append("")
    if v.rows:
        out += ["| val task | baseline | candidate | gain | regressed |", "|---|---|---|---|---|"]
        out += [
            f"| {cell(r.task_id, 80)} | {r.baseline} | {r.candidate} | {r.gain} | {'**yes**' if r.regressed else 'no'} |"
            for r in v.rows
        ]
        out.append("")
    return out


def render_review(view: ProposalView) -> str:
    r = view.report
    state = view.state if view.documents else f"{view.state}, nothing to adopt"
    out = [f"# skillopt-sleep proposal: night {sanitize(r.night_id)} ({sanitize(state)})", ""]
    if r.simulated:
        out += [f"> **{SIMULATED_WARNING}**", ""]
    out += [
        f"- Project: `{cell(r.project, 300)}`",
        f"- Val score, baseline → candidate: {score_text(r.baseline)} → {score_text(r.candidate)}",
    ]
    out += [f"- {line}" for line in backend_lines(r) if not line.startswith("**")]
    out += [f"- Full report: `{cell(str(Path(view.staging_dir) / 'report.html'), 300)}`", ""]
    out += ["## Numbers", "", *numbers_table(r), ""]
    why = nothing_learned(r)
    if why:
        out += [f"**Nothing learned:** {sanitize(why, 600)}", ""]

    conflicts = conflict_notes([rule.edit for rule in view.rules])
    if conflicts:
        out += [f"## ⚠ Changes to what you wrote ({len(conflicts)}): read these first", ""]
        out += [f"- **{sanitize(note, 800)}**" for note in conflicts] + [""]

    out += [f"## Proposed rules ({len(view.rules)})", ""]
    if not view.rules:
        out += ["None.", ""]
    for i, rule in enumerate(view.rules, 1):
        out += [f"### Rule {i}", ""] + _edit(rule.edit) + _scope_and_evidence(rule.scope, rule.evidence)
        why = why_accepted(rule.edit, rule.decisions, r.task_index)
        if why:
            out += [f"Accepted because: {sanitize(why, 500)}", ""]
        for decision in rule.decisions:
            out += _decision(decision)
        if not rule.decisions:
            out += ["(no gate decision recorded for this rule)", ""]

    out += [f"## Refused edits ({len(view.refused)})", ""]
    if not view.refused:
        out += ["None.", ""]
    for i, refused in enumerate(view.refused, 1):
        out += [f"### Refused {i}", ""]
        out += _edit(refused.edit) if refused.edit else ["(unreadable edit)", ""]
        out += _scope_and_evidence(refused.scope, refused.evidence)
        out += ["Refused because:", ""]
        out += [f"- {sanitize(x, 500)}" for x in refused.reasons] or ["- (no reason recorded)"]
        out.append("")

    out += ["## Document changes", ""]
    if not view.documents:
        out += ["No document changes.", ""]
    for doc in view.documents:
        out += [f"### {sanitize(doc.role)}: `{cell(doc.live_path, 300)}`", ""]
        # a fence longer than any backtick run inside, so the diff cannot close it
        diff = clean_text(doc.diff).rstrip("\n")  # in a code fence: markup cannot act
        fence = "`" * max(3, _longest_backtick_run(diff) + 1)
        out += [fence + "diff", diff, fence, ""] if diff else ["(no diff recorded)", ""]

    if r.notes:
        out += ["## Notes", ""] + [f"- {sanitize(n, 1000)}" for n in r.notes] + [""]

    if view.state == "staged" and view.documents:
        out += _next_step(r)
    return "\n".join(out)


def _next_step(r: NightReport) -> list[str]:
    """Adopt and revert, as the person types them where this is read (agent_surface.py)."""
    if calling_agent() is None:
        return ["## Next step", "", "```", adopt_command(r), "```", "", f"Undo later with `{revert_command(r)}`.", ""]
    night = ["--night", sanitize(r.night_id)]
    adopt = ask_for("adopt", *night, *(["--allow-simulated"] if r.simulated else []))
    return ["## Next step", "", f"Adopt it with `{adopt}`; undo later with `{ask_for('revert', *night)}`.", ""]


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return longest
