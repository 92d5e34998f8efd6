"""Whether a scheduled night has anything new to learn from (scheduler/news.py): for a project with
no sessions at all, or none written since its last night, a scheduled night makes no model call —
not even the preflight — and records why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillopt_sleep.backends import assembly
from skillopt_sleep.backends import make_backend as real_make_backend
from skillopt_sleep.cli import main
from skillopt_sleep.commands.demo import build_demo_home
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler.nightly import read_last_run
from tests.support.fake_backend import FakeBackend, forward
from tests.support.scheduler_tools import FakeTools


@pytest.fixture
def backends(monkeypatch: pytest.MonkeyPatch) -> list[FakeBackend]:
    """Every backend a night builds: the simulator behind a recorder that counts its calls."""
    built: list[FakeBackend] = []

    def make_backend(spec, **kwargs):
        fake = FakeBackend(forward(real_make_backend(spec, **kwargs)), id=f"counted-{spec}", offline=True)
        built.append(fake)
        return fake

    monkeypatch.setattr(assembly, "make_backend", make_backend)
    return built


def calls(built: list[FakeBackend]) -> list[str]:
    return [purpose for backend in built for purpose in backend.purposes]


def _night_log() -> str:
    return Path(read_last_run()["log"]).read_text(encoding="utf-8")


def test_a_project_without_sessions_makes_no_model_call(
    cron: FakeTools, tmp_path: Path, backends: list[FakeBackend], capsys
) -> None:
    project = tmp_path / "quiet"
    project.mkdir()
    assert main(["schedule", "--project", str(project)]) == 0
    assert main(["nightly"]) == 0
    assert calls(backends) == []
    (result,) = read_last_run()["projects"]
    assert result["ok"] is True and result["status"] == "skipped"
    assert "no sessions for this project yet" in result["skipped"] and "no model call" in result["skipped"]
    assert "skipped: no sessions for this project yet" in _night_log()
    out = capsys.readouterr().out
    assert "0 ok, 0 failed, 1 skipped (nothing new)" in out and f"skipped {project}: no sessions" in out
    assert main(["status", "--project", str(project)]) == 0
    assert "1 skipped (nothing new)" in capsys.readouterr().out


@pytest.mark.slow  # scheduled nights through the CLI
def test_no_new_sessions_since_the_last_night_makes_no_model_call(
    cron: FakeTools, tmp_path: Path, backends: list[FakeBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, claude, project = build_demo_home(tmp_path / "demo")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    assert main(["schedule", "--project", str(project)]) == 0
    assert main(["nightly"]) == 0  # the first night learns from the sessions
    first = calls(backends)
    assert "preflight" in first and len(first) > 1
    assert read_last_run()["projects"][0]["status"] != "skipped"

    assert main(["nightly"]) == 0  # nothing written since: no call at all
    assert calls(backends) == first
    (result,) = read_last_run()["projects"]
    assert result["status"] == "skipped" and "no new sessions since the last night" in result["skipped"]

    (transcript,) = sorted((claude / "projects").glob("*/*.jsonl"))[:1]
    record = json.loads(transcript.read_text(encoding="utf-8").splitlines()[-1])
    with transcript.open("a", encoding="utf-8") as fh:  # the person kept working in the project
        fh.write(json.dumps(record) + "\n")
    assert main(["nightly"]) == 0
    assert calls(backends)[len(first)] == "preflight" and read_last_run()["projects"][0]["status"] != "skipped"


def test_a_session_of_another_project_is_not_news(
    cron: FakeTools, tmp_path: Path, backends: list[FakeBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, claude, demo = build_demo_home(tmp_path / "demo")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    other = tmp_path / "other"
    other.mkdir()
    assert main(["schedule", "--project", str(other)]) == 0
    assert main(["nightly"]) == 0
    assert calls(backends) == [] and read_last_run()["projects"][0]["status"] == "skipped"
    assert user_dirs().scheduled_runs.is_dir()
