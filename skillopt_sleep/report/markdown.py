"""Human-readable renderings of a night: the Markdown report staged for review, and a terminal
summary.

Model output and transcript text are untrusted: everything that came from them goes through
``sanitize.sanitize`` before it reaches a terminal or the Markdown file.
"""

from __future__ import annotations

import shlex
from typing import Any

from skillopt_sleep.documents.handwritten import conflict_notes
from skillopt_sleep.report.night_numbers import _calls, _change, _splits, _tokens, agents_text, nothing_learned, numbers
from skillopt_sleep.report.proposal import OVERRIDES, decision_view, why_accepted
from skillopt_sleep.sanitize import sanitize
from skillopt_sleep.rules.scope import scope_label
from skillopt_sleep.types import Edit, NightReport, format_time


def cell(value: Any, limit: int = 120) -> str:
    """One Markdown table cell or inline value: sanitized, on one line, with ``|`` escaped and
    backticks made quotes (a backtick would open a code span that swallows the escapes). Every
    Markdown view of a night uses this one."""
    text = " ".join(sanitize(value, limit).split())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'") or " "


def _as_edit(value: Any) -> Edit | None:
    if isinstance(value, Edit):
        return value
    if isinstance(value, dict):
        try:
            return Edit.from_dict(value)
        except ValueError:
            return None
    return None


def quote(text: str) -> list[str]:
    """Untrusted text as a Markdown block quote, sanitized."""
    return ["> " + line if line else ">" for line in sanitize(text, 2000).split("\n")]


def adopt_command(report: NightReport) -> str:
    command = (
        f"skillopt-sleep adopt --project {shlex.quote(sanitize(report.project))} --night {sanitize(report.night_id)}"
    )
    return command + " --allow-simulated" if report.simulated else command


def revert_command(report: NightReport) -> str:
    return (
        f"skillopt-sleep revert --project {shlex.quote(sanitize(report.project))} --night {sanitize(report.night_id)}"
    )


def review_command(report: NightReport) -> str:
    return (
        f"skillopt-sleep review --project {shlex.quote(sanitize(report.project))} --night {sanitize(report.night_id)}"
    )


SIMULATED_WARNING = (
    "SIMULATED: the offline sim backend made this proposal, so its rules and scores "
    "were never tried on a real model; `adopt` refuses it without --allow-simulated."
)


def backend_lines(report: NightReport) -> list[str]:
    """Which models the night used, why (``auto``), and the simulated warning — for every view."""
    lines = []
    if report.backends:
        lines.append(
            "Backends: " + ", ".join(f"{sanitize(k)}: `{sanitize(v, 200)}`" for k, v in report.backends.items())
        )
    if report.backend_choice:
        lines.append(f"Backend choice: {sanitize(report.backend_choice, 300)}")
    if report.simulated:
        lines.append(f"**{SIMULATED_WARNING}**")
    return lines


def numbers_table(report: NightReport) -> list[str]:
    """``numbers`` as a Markdown table."""
    return ["| measure | value |", "|---|---|"] + [f"| {cell(k, 200)} | {cell(v, 400)} |" for k, v in numbers(report)]


def _edit_block(index: int, edit: Edit) -> list[str]:
    lines = [
        f"### {index}. {sanitize(edit.target)} · {sanitize(edit.op)}",
        "",
        f"Scope: {sanitize(scope_label(edit), 200)}",
        "",
    ]
    if edit.anchor:
        lines += ["Anchor:", "", *quote(edit.anchor), ""]
    if edit.supersedes:
        lines += [f"**{OVERRIDES}**", "", *quote(edit.supersedes), ""]
    if edit.content:
        lines += ["Content:", "", *quote(edit.content), ""]
    if edit.rationale:
        lines += [f"Rationale: {sanitize(edit.rationale, 1000)}", ""]
    if edit.evidence:
        ids = ", ".join(f"`{cell(e, 80)}`" for e in edit.evidence)
        lines += [f"Evidence: {ids}", ""]
    return lines


def render_markdown(report: NightReport) -> str:
    """The report a person reads before adopting: what was measured, kept, refused, and why."""
    out = [f"# skillopt-sleep night {sanitize(report.night_id)}", ""]
    out += [
        f"- Project: `{sanitize(report.project)}`",
        f"- Mode: {sanitize(report.mode)} · Status: **{sanitize(report.status)}**",
        f"- Started: {format_time(report.started) or 'n/a'} · Finished: {format_time(report.finished) or 'n/a'}",
    ]
    out += [f"- {line}" for line in backend_lines(report)]
    for role, path in report.documents.items():
        out.append(f"- {sanitize(role)} document: `{sanitize(path)}`")
    out += ["", "## Numbers", ""] + numbers_table(report)
    why = nothing_learned(report)
    if why:
        out += ["", f"Nothing learned: {sanitize(why, 600)}"]

    conflicts = conflict_notes(report.accepted_edits)
    if conflicts:
        out += ["", f"## ⚠ Changes to what you wrote ({len(conflicts)})", ""]
        out += [f"- **{sanitize(note, 800)}**" for note in conflicts]
    out += ["", f"## Accepted edits ({len(report.accepted_edits)})", ""]
    if not report.accepted_edits:
        out += ["None.", ""]
    for i, edit in enumerate(report.accepted_edits, 1):
        out += _edit_block(i, edit)
        why = why_accepted(edit, report.decisions, report.task_index)
        if why:
            out += [f"Accepted because: {sanitize(why, 500)}", ""]

    out += [f"## Refused edits ({len(report.rejected_edits)})", ""]
    if not report.rejected_edits:
        out += ["None.", ""]
    for i, item in enumerate(report.rejected_edits, 1):
        item = item if isinstance(item, dict) else {"edit": item}
        refused = _as_edit(item.get("edit"))
        out += _edit_block(i, refused) if refused else [f"### {i}. (unreadable edit)", ""]
        reasons = item.get("reasons") or []
        out += ["Refused because:", ""]
        out += [f"- {sanitize(r, 500)}" for r in reasons] or ["- (no reason recorded)"]
        out.append("")

    out += ["## Gate decisions", ""]
    if not report.decisions:
        out += ["No gate decision was made.", ""]
    for i, decision in enumerate(report.decisions, 1):
        view = decision_view(decision)
        out += [
            f"### Decision {i}: {sanitize(decision.action)} ({view.verdict}), "
            f"val {_change(decision.baseline, decision.candidate)}",
            "",
        ]
        if decision.edits:
            out += ["Edits judged:", ""]
            out += [f"- {sanitize(e.describe(), 300)}" for e in decision.edits]
            out.append("")
        if decision.statistic:
            stats = ", ".join(f"{sanitize(k)}={sanitize(v, 80)}" for k, v in decision.statistic.items())
            out += [f"Statistic: {stats}", ""]
        if decision.reasons:
            out += ["Reasons:", ""] + [f"- {sanitize(r, 500)}" for r in decision.reasons] + [""]
        if view.rows:
            out += ["| task | baseline | candidate | delta | regressed |", "|---|---|---|---|---|"]
            for r in view.rows:
                out.append(
                    f"| {cell(r.task_id)} | {r.baseline} | {r.candidate} | {r.gain} | "
                    f"{'**yes**' if r.regressed else 'no'} |"
                )
            out.append("")

    if report.notes:
        out += ["## Notes", ""] + [f"- {sanitize(n, 1000)}" for n in report.notes] + [""]

    out += ["## Next step", ""]
    where = sanitize(report.staging_dir)
    if not report.staging_dir:
        return "\n".join(out + ["Nothing was staged.", ""])
    if report.accepted_edits:
        out += [
            f"Proposal staged at `{where}`. Review `proposed/`, then:",
            "",
            "```",
            adopt_command(report),
            "```",
            "",
            f"Undo later with `{revert_command(report)}`.",
            "",
        ]
    else:
        out += [f"Report staged at `{where}`; there is nothing to adopt.", ""]
    out += [f"Review it with `{review_command(report)}` or open `report.html` beside this file.", ""]
    return "\n".join(out)


def render_text(report: NightReport) -> str:
    """A compact terminal summary of the night."""
    lines = [
        f"skillopt-sleep night {sanitize(report.night_id)}: {sanitize(report.status)} "
        f"({sanitize(report.mode)}) for {sanitize(report.project)}"
    ]
    splits = sanitize(_splits(report))
    if report.backend_choice:
        lines.append(f"  {sanitize(report.backend_choice, 300)}")
    if report.simulated:
        lines.append(f"  {SIMULATED_WARNING}")
    agents = sanitize(agents_text(report.agents))
    lines.append(f"  sessions {report.n_sessions}{agents}, tasks {report.n_tasks}{splits}")
    lines.append(f"  val score {_change(report.baseline, report.candidate)}")
    if report.test_baseline is not None or report.test_candidate is not None:
        lines.append(f"  test score {_change(report.test_baseline, report.test_candidate)} (measured only)")
    for note in conflict_notes(report.accepted_edits):
        lines.append(f"  WARNING: {sanitize(note, 400)}")
    lines.append(f"  accepted {len(report.accepted_edits)} edit(s)")
    for edit in report.accepted_edits:
        lines.append(f"    + {sanitize(edit.describe(), 160)}")
        lines.append(f"      scope: {sanitize(scope_label(edit), 100)}")
        why = why_accepted(edit, report.decisions, report.task_index)
        if why:
            lines.append(f"      why: {sanitize(why, 300)}")
    lines.append(f"  refused {len(report.rejected_edits)} edit(s)")
    for item in report.rejected_edits:
        item = item if isinstance(item, dict) else {"edit": item}
        refused = _as_edit(item.get("edit"))
        reasons = "; ".join(str(r) for r in item.get("reasons") or [])
        what = refused.describe() if refused else "(unreadable edit)"
        lines.append(f"    - {sanitize(what, 120)} — {sanitize(reasons, 160) or 'no reason'}")
    lines.append(f"  calls {_calls(report)}; tokens {_tokens(report)}")
    for note in report.notes:
        lines.append(f"  note: {sanitize(note, 200)}")
    if report.staging_dir:
        lines.append(f"  staged at {sanitize(report.staging_dir)}")
        if report.accepted_edits:
            lines.append(f"  adopt with: {adopt_command(report)}")
    if report.mode == "dry-run":
        lines.append("  " + dry_run_line(report))
    return "\n".join(lines)


def dry_run_line(report: NightReport) -> str:
    """How a dry-run ends: nothing staged, and where nothing was written."""
    from skillopt_sleep.paths import project_dirs, user_dirs

    return (
        f"dry-run: nothing was staged or saved — nothing written in "
        f"{sanitize(str(project_dirs(report.project).root))} nor in {sanitize(str(user_dirs().state))} "
        "(no proposal, harvest checkpoint or history); `skillopt-sleep run` stages a proposal"
    )
