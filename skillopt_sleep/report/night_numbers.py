"""What a night measured and spent, and why it proposes nothing: the rows and the one line that
report.md, ``review`` and report.html all show (``report/markdown.py`` and ``report/html.py`` render them;
``proposal.py`` carries them in its view of a proposal)."""

from __future__ import annotations

from skillopt_sleep.paths import TRANSCRIPT_SOURCES
from skillopt_sleep.sanitize import sanitize
from skillopt_sleep.types import NightReport


def score_text(value: float | None) -> str:
    """A score as every view prints it: three decimals, or ``n/a``."""
    return "n/a" if value is None else f"{value:.3f}"


def _change(before: float | None, after: float | None) -> str:
    text = f"{score_text(before)} → {score_text(after)}"
    if before is not None and after is not None:
        text += f" ({after - before:+.3f})"
    return text


def _splits(report: NightReport) -> str:
    parts = [f"{name} {count}" for name, count in report.splits.items()]
    return f" ({', '.join(parts)})" if parts else ""


def _calls(report: NightReport) -> str:
    if not report.calls:
        return "none"
    total = sum(report.calls.values())
    parts = ", ".join(f"{sanitize(k)} {v}" for k, v in sorted(report.calls.items()))
    return f"{total} ({parts})"


def _tokens(report: NightReport) -> str:
    u = report.usage
    return (
        f"input {u.input_tokens:,}, output {u.output_tokens:,}, "
        f"cache read {u.cache_read_tokens:,}, cache write {u.cache_write_tokens:,}"
    )


def agents_named(agents: dict[str, int]) -> str:
    """``Claude Code 12, Codex 3``: whose sessions a night read, and how many of each."""
    return ", ".join(f"{TRANSCRIPT_SOURCES.get(name, (name,))[0]} {count}" for name, count in sorted(agents.items()))


def agents_text(agents: dict[str, int]) -> str:
    """`` (Claude Code 12, Codex 3)`` after a session count, when a night read any."""
    return f" ({agents_named(agents)})" if agents else ""


def numbers(report: NightReport) -> list[tuple[str, str]]:
    """What a night measured and spent, as (measure, value) rows: the one list report.md,
    ``review`` and report.html all show."""
    rows = [("sessions harvested", f"{report.n_sessions}{agents_text(report.agents)}")]
    rows.append(("tasks", f"{report.n_tasks}{_splits(report)}"))
    rows += [(f"skipped: {reason}", str(count)) for reason, count in report.skipped.items()]
    if report.train_baseline is not None:
        rows.append(("train score (current documents)", score_text(report.train_baseline)))
    rows.append(("val score, baseline → candidate", _change(report.baseline, report.candidate)))
    if report.test_baseline is not None or report.test_candidate is not None:
        rows.append(
            (
                "test score, baseline → final (measured only, not used by the gate)",
                _change(report.test_baseline, report.test_candidate),
            )
        )
    rows.append(("model calls", _calls(report)))
    rows.append(("tokens", _tokens(report)))
    return rows


# notes that say on their own why a night had nothing to propose (learning/loop.py, night.py)
_WHY_NOTES = ("no edit to try", "no train tasks", "no val tasks", "no recurring", "stopped:")


def nothing_learned(report: NightReport) -> str:
    """Why a night proposes no rule, in one line ("" when it proposes one)."""
    if report.accepted_edits:
        return ""
    said = [note for note in report.notes if note.startswith(_WHY_NOTES)]
    if said:
        return "; ".join(said)
    if report.rejected_edits:
        return (
            f"the gate refused every edit tried ({len(report.rejected_edits)}); "
            "each one's reasons are under Refused edits"
        )
    if report.status in ("no-tasks", "budget", "failed"):
        return f"the night ended {report.status} (see Notes)"
    return "no edit was proposed (see Notes)"
