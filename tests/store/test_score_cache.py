"""Target answers kept across nights (store/score_cache.py): reused for unchanged documents, tasks,
model and judge; expired, bounded, redacted; failures never kept; sealed, so an entry edited in the
project is drawn again and a cache copied from another project does not verify."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from skillopt_sleep.backends.base import Completion, ProviderError, Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.config import Config
from skillopt_sleep.night import NightOptions, run_night
from skillopt_sleep.paths import project_dirs
from skillopt_sleep.store.score_cache import DAY, ScoreCache

from tests.support.staged_project import project_with_memory
from tests.store.test_call_journal import journal_lines, write_lines
from tests.support.interrupted_night import make_project
from tests.support.tasks import make_tasks, write_tasks_file


def attempt(task_id: str = "t1", sample: int = 0, checks: list | None = None) -> Request:
    task = {"id": task_id, "judge": {"kind": "rule", "checks": checks or [{"op": "contains", "arg": "x"}]}}
    return Request(purpose="attempt", system="docs", user=f"do {task_id}", sample=sample, payload={"task": task})


def night(project: Path, tasks_file: Path, **config) -> NightOptions:
    cfg = Config(backend="sim:correct=1,harmful=0,seed=3", agent="claude", retries=1, **config)
    return NightOptions(project=project, config=cfg, mode="run", tasks_file=tasks_file)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return project_with_memory(tmp_path, b"# proj\n")


def test_a_second_night_on_unchanged_inputs_draws_no_attempt_again(project: Path, tmp_path: Path) -> None:
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    first = run_night(night(project, tasks_file))
    second = run_night(night(project, tasks_file))
    assert first.calls.get("attempt", 0) > 50
    assert second.calls.get("attempt", 0) == 0, second.calls
    assert (second.baseline, second.candidate) == (first.baseline, first.candidate)
    assert [e.content for e in second.accepted_edits] == [e.content for e in first.accepted_edits]
    assert any("reused instead of drawn again" in n for n in second.notes)
    evidence = [json.loads(line) for line in (Path(second.staging_dir) / "evidence.jsonl").read_text().splitlines()]
    reused = [e for e in evidence if e["reused"]]
    assert reused and all(e["purpose"] == "attempt" for e in reused)
    assert len(reused) == first.calls["attempt"] - second.calls.get("attempt", 0)


def test_a_changed_judge_or_model_draws_again(project: Path, tmp_path: Path) -> None:
    tasks = make_tasks()
    tasks_file = write_tasks_file(tmp_path / "tasks.json", tasks)
    run_night(night(project, tasks_file))
    changed = tasks[0]
    changed.judge = {"kind": "rule", "checks": [{"op": "contains", "arg": "Signed-off-by"}]}
    judged_anew = run_night(night(project, write_tasks_file(tmp_path / "tasks2.json", tasks)))
    assert judged_anew.calls.get("attempt", 0) > 0
    other_model = run_night(
        NightOptions(
            project=project,
            mode="run",
            tasks_file=tasks_file,
            config=Config(backend="sim:correct=1,harmful=0,seed=4", agent="claude"),
        )
    )
    assert other_model.calls.get("attempt", 0) > 50


def test_only_the_task_whose_judge_changed_is_drawn_again(tmp_path: Path) -> None:
    cache = ScoreCache(tmp_path / "scores.jsonl")
    cache.put("k1", attempt(), Completion(text="x marks"))
    assert cache.get("k1", attempt()) is not None
    assert cache.get("k1", attempt(checks=[{"op": "contains", "arg": "y"}])) is None


def test_off_when_score_cache_days_is_zero(project: Path, tmp_path: Path) -> None:
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    run_night(night(project, tasks_file, score_cache_days=0))
    second = run_night(night(project, tasks_file, score_cache_days=0))
    assert second.calls.get("attempt", 0) > 50
    assert not (project_dirs(project).root / "scores.jsonl").exists()


def test_entries_expire(tmp_path: Path) -> None:
    clock = [1_000_000.0]
    path = tmp_path / "scores.jsonl"
    cache = ScoreCache(path, max_age_days=14, now=lambda: clock[0])
    cache.put("old", attempt("a"), Completion(text="a"))
    clock[0] += 10 * DAY
    cache.put("new", attempt("b"), Completion(text="b"))
    cache.save()
    clock[0] += 5 * DAY  # "old" is 15 days old, "new" 5
    again = ScoreCache.load(path, max_age_days=14, now=lambda: clock[0])
    assert again.get("old", attempt("a")) is None
    assert again.get("new", attempt("b")).text == "b"
    again.save()
    assert len(ScoreCache.load(path, max_age_days=14, now=lambda: clock[0])) == 1


def test_the_file_is_bounded_newest_kept(tmp_path: Path) -> None:
    clock = [0.0]
    path = tmp_path / "scores.jsonl"
    cache = ScoreCache(path, max_bytes=4000, now=lambda: clock[0])
    for i in range(100):
        clock[0] += 1
        cache.put(f"k{i}", attempt(f"t{i}"), Completion(text="answer " * 20))
    cache.save()
    assert path.stat().st_size <= 4000
    kept = ScoreCache.load(path, max_bytes=4000, now=lambda: clock[0])
    assert 0 < len(kept) < 100
    assert kept.get("k99", attempt("t99")) is not None and kept.get("k0", attempt("t0")) is None


def test_malformed_or_foreign_files_start_empty(tmp_path: Path) -> None:
    path = tmp_path / "scores.jsonl"
    for content in (
        "not json\n",
        '{"format": "other"}\n',
        "[1, 2]\n",
        '{"format": "skillopt_sleep.scores.v1"}\n'
        '{"k": 1, "at": "x"}\n{"k": "a", "at": 1e300, "c": {"text": 5}}\n{"k": "b", "at',
    ):
        path.write_text(content, encoding="utf-8")
        assert len(ScoreCache.load(path)) == 0


def test_nothing_unredacted_on_disk_and_no_control_characters(tmp_path: Path) -> None:
    path = tmp_path / "scores.jsonl"
    cache = ScoreCache(path)
    secret = "sk-ant-api03-" + "A" * 90
    cache.put("k", attempt(), Completion(text=f"use {secret}\x1b[31m here"))
    cache.save()
    raw = path.read_bytes()
    assert secret.encode() not in raw and b"\x1b" not in raw
    assert b"REDACTED" in raw


def test_a_failed_call_is_never_kept(tmp_path: Path) -> None:
    class Down:
        id = "down"

        def complete(self, request: Request) -> Completion:
            return Completion(text="", error="server", error_message="down")

    cache = ScoreCache(tmp_path / "scores.jsonl")
    client = Client(Down(), retry=RetryPolicy(attempts=1, sleep=lambda s: None), stores=[cache])
    with pytest.raises(ProviderError):
        client.complete(attempt())
    cache.put("k", attempt(), Completion(text="", error="server"))
    cache.put("cut", attempt(), Completion(text="half an ans", truncated=True))
    assert len(cache) == 0


def test_only_attempts_are_kept(tmp_path: Path) -> None:
    cache = ScoreCache(tmp_path / "scores.jsonl")
    reflect = Request(purpose="reflect", system="s", user="u")
    cache.put("k", reflect, Completion(text="{}"))
    assert len(cache) == 0 and cache.get("k", reflect) is None


def test_the_file_is_json_lines_with_a_format_header(project: Path, tmp_path: Path) -> None:
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    run_night(night(project, tasks_file))
    lines = (project_dirs(project).root / "scores.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"format": "skillopt_sleep.scores.v1"}
    assert len(lines) > 50


def test_an_oversized_or_unreadable_file_starts_empty(tmp_path: Path) -> None:
    path = tmp_path / "scores.jsonl"
    path.write_text('{"format": "skillopt_sleep.scores.v1"}\n' + "x" * 5000, encoding="utf-8")
    assert len(ScoreCache.load(path, max_bytes=1000)) == 0
    path.unlink()
    path.mkdir()
    assert len(ScoreCache.load(path)) == 0


# -- sealed: an edited or copied cache is not trusted --------------------------------------------


def test_a_forged_score_cache_answer_is_drawn_again(tmp_path: Path) -> None:
    """The score cache answers the gate's attempt calls: an entry edited in the project (say, an
    answer that passes every check) is dropped and drawn again, and one line says so."""
    from skillopt_sleep.config import Config
    from skillopt_sleep.night import NightOptions, run_night

    project = make_project(tmp_path)
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())

    def options() -> NightOptions:
        return NightOptions(
            project=project,
            mode="run",
            tasks_file=tasks_file,
            config=Config(backend="sim:correct=1,harmful=0,seed=3", agent="claude"),
        )

    run_night(options())
    path = project_dirs(project).root / "scores.jsonl"
    lines = journal_lines(path)
    lines[1]["c"]["text"] = "Refs: ACME-1\n## Breaking changes\n## Fixes\n## Testing\n"
    write_lines(path, lines)
    again = run_night(options())
    assert again.calls.get("attempt", 0) == 1
    assert "1 score cache records did not verify and were drawn again" in again.notes


def test_a_score_cache_copied_from_another_project_does_not_verify(tmp_path: Path) -> None:
    from skillopt_sleep.store.score_cache import ScoreCache

    request = Request(purpose="attempt", system="s", user="u", payload={"task": {"judge": {}}})
    mine = tmp_path / "a" / "scores.jsonl"
    mine.parent.mkdir()
    cache = ScoreCache(mine)
    cache.put("k1", request, Completion(text="one"))
    cache.save()
    assert len(ScoreCache.load(mine)) == 1
    theirs = tmp_path / "b" / "scores.jsonl"
    theirs.parent.mkdir()
    shutil.copy(mine, theirs)
    copied = ScoreCache.load(theirs)
    assert (len(copied), copied.untrusted) == (0, 1)
    assert copied.get("k1", request) is None
