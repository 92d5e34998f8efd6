"""A night followed from outside: the whole night's progress line, the state file beside it, and
what ``status`` makes of a state whose process is gone."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from skillopt_sleep import night_state
from skillopt_sleep.backends.budget import Budget
from skillopt_sleep.commands.status import collect_status, format_status


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_counts_the_whole_night_against_its_estimate(tmp_path: Path) -> None:
    clock, out = Clock(), io.StringIO()
    progress = night_state.NightProgress(
        tmp_path, planned=400, stream=out, clock=clock, plain_every=0, payer={"kind": "api"}, every=0
    )
    progress.expect(2)  # mining asks for two calls: the line still shows the night's 400
    clock.now += 10
    progress.done()
    progress.done()
    assert "model calls 2/~400 for the night" in out.getvalue().splitlines()[-1]
    assert "ETA 33m" in out.getvalue().splitlines()[-1]  # 398 calls left at 5 s each
    progress.expect(500)  # the night asked for more than estimated: the total follows it
    progress.done()
    assert "3/502 for the night" in out.getvalue().splitlines()[-1]


def test_the_state_file_holds_phase_calls_eta_tokens_and_cost(tmp_path: Path) -> None:
    clock = Clock()
    progress = night_state.NightProgress(
        tmp_path, planned=100, payer={"kind": "api"}, log="/x/night.log", stream=io.StringIO(), clock=clock, every=0
    )
    budget = Budget()
    progress.watch(SimpleNamespace(target=SimpleNamespace(budget=budget)))
    progress.on_phase("dreaming 4 train task(s) x 2")
    assert not night_state.state_path(tmp_path).exists()  # nothing before the first model call
    clock.now += 20
    budget.tokens_used, budget.cost_used = 1234, 0.0123
    for _ in range(10):
        progress.done()
    data = json.loads(night_state.state_path(tmp_path).read_text(encoding="utf-8"))
    assert data["state"] == "running" and data["phase"] == "dreaming 4 train task(s) x 2"
    assert data["calls_done"] == 10 and data["calls_planned"] == 100 and data["eta_s"] == 180.0
    assert data["tokens"] == 1234 and data["cost_usd"] == 0.0123 and data["log"] == "/x/night.log"
    assert data["elapsed_s"] == 20.0 and data["pid"] > 0
    progress.end(0, "staged", "n1")
    data = json.loads(night_state.state_path(tmp_path).read_text(encoding="utf-8"))
    assert data["state"] == "finished" and data["result"] == "staged" and data["exit_code"] == 0
    assert not list(night_state.state_path(tmp_path).parent.glob("*.tmp*"))  # replaced atomically


def test_the_state_file_is_written_at_most_every_few_seconds(tmp_path: Path) -> None:
    progress = night_state.NightProgress(tmp_path, planned=10, stream=io.StringIO(), every=3600)
    progress.done()
    first = night_state.state_path(tmp_path).read_text(encoding="utf-8")
    for _ in range(5):
        progress.done()
    assert night_state.state_path(tmp_path).read_text(encoding="utf-8") == first  # throttled
    progress.end(0, "no-change")
    assert json.loads(night_state.state_path(tmp_path).read_text(encoding="utf-8"))["calls_done"] == 6


def test_a_login_night_is_followed_in_calls_and_tokens_not_dollars(tmp_path: Path) -> None:
    progress = night_state.NightProgress(
        tmp_path, planned=10, payer={"kind": "login", "login": "claude"}, stream=io.StringIO(), every=0
    )
    budget = Budget()
    budget.tokens_used, budget.cost_used = 999, 0.5  # claude -p reports a notional cost
    progress.watch(SimpleNamespace(target=SimpleNamespace(budget=budget)))
    progress.done()
    data = night_state.read_state(tmp_path)
    assert data is not None and data["cost_usd"] is None and data["login"] == "claude"
    lines = night_state.format_night(night_state.night_status(tmp_path))
    assert "999 tokens so far on your claude login" in "\n".join(lines)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_state_left_by_a_killed_night_is_shown_as_stopped_with_its_log(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(tmp_path / "home"))
    project = tmp_path / "proj"
    project.mkdir()
    night_state.write_starting(project, _dead_pid(), str(project / ".skillopt-sleep" / "logs" / "night-1.log"))
    data = collect_status(project)
    assert data["night"]["state"] == "stopped"
    text = format_status(data)
    assert "stopped without finishing" in text and "night-1.log" in text
    assert "running now" not in text


def test_a_running_state_shows_phase_calls_and_eta(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(tmp_path / "home"))
    project = tmp_path / "proj"
    project.mkdir()
    progress = night_state.NightProgress(
        project, planned=50, stream=io.StringIO(), every=0, payer={"kind": "api"}, log="/logs/n.log"
    )
    budget = Budget()
    budget.cost_used = 0.25
    progress.watch(SimpleNamespace(target=SimpleNamespace(budget=budget)))
    progress.on_phase("gating 2 edit(s) on 4 val task(s)")
    progress.done()
    text = format_status(collect_status(project))
    assert "night running now (pid" in text and "gating 2 edit(s)" in text
    assert "1/50 model calls" in text and "/logs/n.log" in text and "$0.2500 so far" in text


def test_an_oversized_or_broken_state_file_is_not_read(tmp_path: Path) -> None:
    path = night_state.state_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    assert night_state.read_state(tmp_path) is None
    path.write_text(json.dumps({"state": "running", "pad": "x" * night_state.READ_LIMIT}), encoding="utf-8")
    assert night_state.read_state(tmp_path) is None
    path.unlink()
    path.mkdir()
    assert night_state.read_state(tmp_path) is None


def test_a_scheduled_night_is_followed_and_priced_like_a_run(tmp_path: Path, monkeypatch) -> None:

    from skillopt_sleep import estimate
    from skillopt_sleep.commands.demo import build_demo_home
    from skillopt_sleep.config import Config, settings_of
    from skillopt_sleep.commands.schedule import run_project_night
    from skillopt_sleep.scheduler.schedule_file import ProjectEntry

    home, claude, project = build_demo_home(tmp_path / "demo")
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(home))
    config = Config(backend="sim:seed=1", agent="claude", source="claude", claude_home=str(claude))
    lines: list[str] = []
    result = run_project_night(ProjectEntry(str(project), settings_of(config)), lines.append)
    state = night_state.read_state(project)
    assert state is not None and state["state"] == "finished" and state["result"] == result["status"]
    assert state["calls_planned"] >= state["calls_done"] > 0
    [entry] = estimate.past_nights(project)
    assert entry["night_id"] == result["night_id"] and entry["estimated"]["calls"] > 0
