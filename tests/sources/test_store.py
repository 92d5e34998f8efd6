"""The harvest store's own files: temp files of a killed commit are removed by the next commit."""

from __future__ import annotations

from skillopt_sleep.files import temp_name
from skillopt_sleep.sources.store import CHECKPOINTS_FILE, DIGESTS_DIR, HarvestStore


def test_a_commit_removes_what_a_killed_commit_left(tmp_path):
    state = tmp_path / "state"
    (state / DIGESTS_DIR).mkdir(parents=True)
    debris = [temp_name(state / CHECKPOINTS_FILE), temp_name(state / DIGESTS_DIR / "index.json")]
    for path in debris:
        path.write_text("half written")
    other = temp_name(state / "history.jsonl")  # not the store's: left alone
    other.write_text("not mine")
    HarvestStore(state).commit()
    assert not any(path.exists() for path in debris)
    assert other.exists()
