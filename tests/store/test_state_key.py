"""The per-user key that seals what the engine keeps in a project (store/state_key.py): made
private on first use; a key file that is not safe is replaced and nothing it sealed is trusted; a
key directory open to others means no key — nothing read back, nothing kept — and a night without
a trusted key says so and stages nothing adoptable."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from skillopt_sleep.backends.base import Completion
from skillopt_sleep.store.call_journal import CallJournal, interrupted_nights, nights_dir, open_journal
from skillopt_sleep.store.state_key import key_path, state_key
from tests.store.test_call_journal import NIGHT, REQUEST, journal_lines
from tests.support.interrupted_night import make_project
from tests.support.tasks import make_tasks, write_tasks_file


def test_the_key_is_made_private_on_first_use(tmp_path: Path) -> None:
    assert not key_path().exists()
    key, problem = state_key()
    assert problem is None and len(key) == 32
    assert stat.S_IMODE(key_path().stat().st_mode) == 0o600
    assert stat.S_IMODE(key_path().parent.stat().st_mode) == 0o700
    assert state_key() == (key, None), "the same key the next time"


def _old_record(tmp_path: Path) -> CallJournal:
    journal = open_journal(tmp_path, NIGHT)
    journal.put("k1", REQUEST, Completion(text="one"))
    return journal


@pytest.mark.parametrize("unsafe", ["group-readable", "symlink", "fifo", "other-owner", "garbage"])
def test_an_unsafe_key_file_is_replaced_and_nothing_it_sealed_is_trusted(tmp_path: Path, unsafe: str) -> None:
    journal = _old_record(tmp_path)
    old, _ = state_key()
    path = key_path()
    outside = tmp_path / "elsewhere.key"
    if unsafe == "group-readable":
        path.chmod(0o640)
    elif unsafe == "symlink":
        outside.write_text(old.hex() + "\n")
        path.unlink()
        path.symlink_to(outside)
    elif unsafe == "fifo":
        path.unlink()
        os.mkfifo(path, 0o600)
    elif unsafe == "other-owner":
        if os.geteuid() != 0:
            pytest.skip("needs root to give the key to another user")
        os.chown(path, 12345, 12345)
    else:
        path.write_text("not a key\n")
    new, problem = state_key()
    assert problem is None and new != old
    assert stat.S_ISREG(os.lstat(path).st_mode) and stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    if unsafe == "symlink":
        assert outside.read_text() == old.hex() + "\n", "the link's target is never written"
    again = CallJournal(journal.directory)
    assert (again.loaded, again.untrusted) == (0, 1)


def test_an_unsafe_key_directory_means_no_key_nothing_read_nothing_kept(tmp_path: Path) -> None:
    journal = _old_record(tmp_path)
    key_path().parent.chmod(0o770)
    key, problem = state_key()
    assert key is None and "open to other users" in problem
    again = CallJournal(journal.directory)
    assert (again.loaded, again.untrusted) == (0, 1)
    again.put("k2", REQUEST, Completion(text="two"))
    assert len(journal_lines(journal.path)) == 1, "nothing kept without a key"
    assert interrupted_nights(tmp_path) == [NIGHT]


def test_a_night_without_a_trusted_key_says_so_and_keeps_nothing(tmp_path: Path, monkeypatch) -> None:
    from skillopt_sleep import night
    from skillopt_sleep.staging.adoption import list_proposals
    from skillopt_sleep.config import Config

    project = make_project(tmp_path)
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    key_path().parent.mkdir(parents=True)
    key_path().parent.chmod(0o777)
    config = Config(backend="sim:correct=1,harmful=0,seed=3", agent="claude", score_cache_days=0)
    with monkeypatch.context() as patch:
        patch.setattr(night, "close_nights", lambda project: None)  # keep the journal to look at
        done = night.run_night(night.NightOptions(project=project, config=config, mode="run", tasks_file=tasks_file))
    assert done.status == "staged"
    assert any(
        n.startswith("no trusted key for the project's sealed files") and "open to other users" in n for n in done.notes
    )
    assert not (nights_dir(project) / done.night_id / "calls.jsonl").exists()
    assert list_proposals(project) == [], "an unsealed proposal is not adoptable"
