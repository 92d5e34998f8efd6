from __future__ import annotations

from pathlib import Path

from skillopt_sleep.store.history import History
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.types import Edit, NightReport, Usage


def _report(night_id: str, project: Path, **kw) -> NightReport:
    return NightReport(night_id=night_id, project=str(project), mode="run", status="staged", **kw)


def test_history_records_compact_summaries_per_project(tmp_path, home):
    history = History()
    assert history.path == user_dirs().history
    assert str(history.path).startswith(str(home))
    a, b = tmp_path / "a", tmp_path / "b"
    history.record(
        _report(
            "n1",
            a,
            baseline=0.5,
            candidate=0.75,
            n_sessions=3,
            n_tasks=4,
            accepted_edits=[Edit("memory", "add", "x")],
            rejected_edits=[{"edit": {}, "reasons": ["r"]}, {"edit": {}}],
            calls={"attempt": 10},
            usage=Usage(1, 2, 3, 4),
        )
    )
    history.record(_report("n2", b))
    history.record(_report("n3", a, baseline=0.75, candidate=0.75))
    nights = history.nights(a)
    assert [n["night_id"] for n in nights] == ["n1", "n3"]
    first = nights[0]
    assert (first["baseline"], first["candidate"]) == (0.5, 0.75)
    assert (first["n_accepted"], first["n_rejected"]) == (1, 2)
    assert first["calls"] == {"attempt": 10}
    assert first["usage"]["cache_write_tokens"] == 4
    assert len(history.nights()) == 3
