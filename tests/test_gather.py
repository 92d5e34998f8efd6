"""The night's tasks (``gather.py``): from a tasks file, redacted, or harvested and mined, with
what was read said in the notes."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from skillopt_sleep.config import Config
from skillopt_sleep.gather import gather_tasks, miner_for
from skillopt_sleep.sources.harvester import HarvestResult
from tests.support.tasks import make_tasks, write_tasks_file

SECRET = "sk-ant-api03-" + "a" * 40


def _opts(tmp_path: Path, config: Config, tasks_file: Path | None = None, harvested: object = None):
    said: list[str] = []
    opts = SimpleNamespace(
        project=tmp_path,
        config=config,
        tasks_file=tasks_file,
        since=None,
        progress=said.append,
        harvested=harvested,
    )
    return opts, said


def _models(offline: bool) -> SimpleNamespace:
    return SimpleNamespace(optimizer=SimpleNamespace(backend=SimpleNamespace(offline=offline)))


def test_auto_mines_with_the_optimizer_only_when_the_night_has_a_real_one() -> None:
    assert miner_for(Config(miner="auto"), _models(offline=True)) == "heuristic"  # type: ignore[arg-type]
    assert miner_for(Config(miner="auto"), _models(offline=False)) == "llm"  # type: ignore[arg-type]
    assert miner_for(Config(miner="heuristic"), _models(offline=False)) == "heuristic"  # type: ignore[arg-type]


def test_tasks_from_a_file_are_replayed_redacted_and_say_whether_a_person_reviewed_them(tmp_path: Path) -> None:
    tasks = make_tasks()
    tasks[0].intent = f"Use the key {SECRET} to write the commit message"
    path = write_tasks_file(tmp_path / "tasks.json", tasks, reviewed=False)
    opts, said = _opts(tmp_path, Config(), tasks_file=path)
    gathered = gather_tasks(opts)  # type: ignore[arg-type]
    assert [t.id for t in gathered.tasks] == [t.id for t in tasks]
    assert SECRET not in gathered.tasks[0].intent and "[REDACTED:" in gathered.tasks[0].intent
    assert gathered.notes == [f"tasks replayed from {path}"] and gathered.reviewed is False and said == []
    reviewed, _ = _opts(tmp_path, Config(), tasks_file=write_tasks_file(path, tasks))
    assert gather_tasks(reviewed).reviewed  # type: ignore[arg-type]


def test_a_harvest_that_found_nothing_says_what_it_read_and_warns_of_a_missing_home(tmp_path: Path) -> None:
    missing = tmp_path / "no-claude"
    harvested = HarvestResult(
        digests=[],
        new_session_ids=set(),
        skipped={"not this project": 3},
        files_read=0,
        bytes_read=0,
        sources_used=["claude"],
        homes={"claude": str(missing)},
    )
    opts, said = _opts(tmp_path, Config(source="claude", claude_home=str(missing)), harvested=harvested)
    gathered = gather_tasks(opts)  # type: ignore[arg-type]
    assert gathered.tasks == [] and gathered.n_sessions == 0 and gathered.harvest is harvested
    assert (gathered.skipped, gathered.sources, gathered.agents) == ({"not this project": 3}, ["claude"], {})
    assert gathered.notes[:2] == [
        f"warning: --claude-home {missing} does not exist",
        f"read {missing} (0 file(s)); 0 session(s) for this project",
    ]
    assert said[:3] == ["harvesting transcripts", gathered.notes[0], gathered.notes[1]]
