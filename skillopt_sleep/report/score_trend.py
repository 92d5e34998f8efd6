"""A project's scores across nights as a person should read them: the score of the documents in
effect (what was adopted and not reverted) apart from what each night proposed.

Each night measures the live documents on its val tasks (its *baseline*) and, when the gate kept a
rule, the proposed documents (its *candidate*). The live documents score the candidate only once
the proposal is adopted, and the baseline again once it is reverted; a proposal still staged, or
reverted, is a proposal, never the project's score. ``status``, report.html's chart and the
nights table all read the state of a night from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class NightScores:
    night_id: str
    when: str
    state: str  # adopted | reverted | staged | no-change | no-tasks | budget | ...
    baseline: float | None  # the live documents' val score when the night ran
    proposed: float | None  # its proposal's val score; None when it proposed no rule
    live: float | None  # the documents in effect after it: proposed while adopted, else baseline
    simulated: bool = False


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def night_state(night: dict[str, Any], states: dict[str, str]) -> str:
    """What became of a night (a history entry): adopted / reverted from the ledger, ``staged``
    for a proposal nobody acted on, else how the night ended (no-change, no-tasks, budget…)."""
    state = states.get(str(night.get("night_id")))
    if state:
        return state
    if night.get("n_accepted"):
        return "staged"
    return str(night.get("status") or "?")


def night_scores(night: dict[str, Any], states: dict[str, str]) -> NightScores:
    state = night_state(night, states)
    baseline = _number(night.get("baseline"))
    proposed = _number(night.get("candidate")) if night.get("n_accepted") else None
    live = proposed if state == "adopted" and proposed is not None else baseline
    return NightScores(
        night_id=str(night.get("night_id") or "?"),
        when=str(night.get("finished") or night.get("started") or ""),
        state=state,
        baseline=baseline,
        proposed=proposed,
        live=live,
        simulated=bool(night.get("simulated")),
    )


def score_trend(nights: list[dict[str, Any]], states: dict[str, str]) -> list[NightScores]:
    """``nights`` (history entries, oldest first) with what became of each."""
    return [night_scores(n, states) for n in nights]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def trend_lines(trend: list[NightScores], last: int = 10) -> list[str]:
    """``status``'s two lines: the live documents' score, then the proposals and their fate."""
    lines = []
    live = [t.live for t in trend if t.live is not None][-last:]
    if live:
        lines.append(
            "score of the documents in effect (val): "
            + " → ".join(_fmt(s) for s in live)
            + "  (each night's baseline; its candidate once adopted and not reverted)"
        )
    proposals = [t for t in trend if t.proposed is not None][-last:]
    if proposals:
        lines.append("proposals: " + ", ".join(f"{_fmt(t.baseline)} → {_fmt(t.proposed)} {t.state}" for t in proposals))
    return lines
