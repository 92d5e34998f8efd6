"""A project's scores across nights (``score_trend.py``): the live documents' score apart from what
each night proposed."""

from __future__ import annotations

from skillopt_sleep.report.score_trend import NightScores, night_state, score_trend, trend_lines


def _night(night_id: str, baseline: object, candidate: object = None, accepted: int = 0, **more) -> dict:
    return {"night_id": night_id, "baseline": baseline, "candidate": candidate, "n_accepted": accepted, **more}


def test_a_nights_state_comes_from_the_ledger_else_from_how_it_ended() -> None:
    assert night_state(_night("n1", 0.5, 0.7, 1), {"n1": "reverted"}) == "reverted"
    assert night_state(_night("n1", 0.5, 0.7, 1), {}) == "staged"
    assert night_state(_night("n1", 0.5, status="no-tasks"), {}) == "no-tasks"
    assert night_state({"night_id": "n1"}, {}) == "?"


def test_the_live_score_is_the_candidate_only_while_adopted() -> None:
    nights = [
        _night("n1", 0.5, 0.7, 1, finished="2026-01-01T03:00:00Z"),
        _night("n2", 0.7, 0.8, 1, started="2026-01-02T03:00:00Z", simulated=True),
        _night("n3", 0.7, 0.9, 1),
        _night("n4", 0.7, 0.9, 0, status="no-change"),
    ]
    trend = score_trend(nights, {"n1": "adopted", "n2": "reverted"})
    assert trend[0] == NightScores("n1", "2026-01-01T03:00:00Z", "adopted", 0.5, 0.7, 0.7)
    assert trend[1] == NightScores("n2", "2026-01-02T03:00:00Z", "reverted", 0.7, 0.8, 0.7, simulated=True)
    assert (trend[2].state, trend[2].proposed, trend[2].live) == ("staged", 0.9, 0.7)
    assert (trend[3].state, trend[3].proposed, trend[3].live) == ("no-change", None, 0.7), "no rule, no proposal"


def test_scores_that_are_not_numbers_are_not_scores() -> None:
    [scores] = score_trend([_night("n1", True, "0.9", 1)], {"n1": "adopted"})
    assert (scores.baseline, scores.proposed, scores.live) == (None, None, None)


def test_status_lines_show_the_live_score_then_the_proposals_and_their_fate() -> None:
    trend = score_trend(
        [_night("n1", 0.5, 0.7, 1), _night("n2", 0.7, None, 0), _night("n3", None, None, 0, status="no-tasks")],
        {"n1": "adopted"},
    )
    live, proposals = trend_lines(trend)
    assert live.startswith("score of the documents in effect (val): 0.700 → 0.700  (")
    assert proposals == "proposals: 0.500 → 0.700 adopted"
    assert trend_lines(trend, last=1)[0].startswith("score of the documents in effect (val): 0.700  (")
    assert trend_lines(score_trend([_night("n1", None)], {})) == []
