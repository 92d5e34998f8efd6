"""The sessions record: what a session-end notice appends and a scheduled night reads."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from skillopt_sleep.paths import user_dirs
from skillopt_sleep.store import sessions

NOW = datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc)


def test_sessions_record_is_compacted(tmp_path, monkeypatch):
    monkeypatch.setattr(sessions, "SESSIONS_COMPACT_BYTES", 2000)
    project, other = tmp_path / "project", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    for i in range(40):
        sessions.record_session(project if i % 2 else other, "claude", NOW + timedelta(minutes=i))
    assert user_dirs().sessions_seen.stat().st_size <= 2000
    seen = sessions.projects_seen()
    assert set(seen) == {str(project), str(other)}
    assert seen[str(project)][0] == "2026-03-02T08:39:00Z"
