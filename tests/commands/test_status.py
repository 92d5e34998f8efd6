from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from skillopt_sleep.commands import status as status_cmd
from skillopt_sleep.staging.adoption import adopt
from skillopt_sleep.store.history import History
from skillopt_sleep.types import Edit, NightReport

from tests.support.staged_project import project_with_memory, stage_memory


@pytest.fixture
def project(tmp_path) -> Path:
    return project_with_memory(tmp_path, b"old\n")


def _night(
    project: Path, night_id: str, baseline: float, candidate: float, accepted: bool, staged: bytes | None = None
) -> None:
    report = NightReport(
        night_id=night_id,
        project=str(project),
        mode="run",
        status="staged",
        baseline=baseline,
        candidate=candidate,
        accepted_edits=[Edit("memory", "add", "r")] if accepted else [],
    )
    if staged is not None:
        stage_memory(project, staged, report=report)
    History().record(report)


def test_status_of_a_fresh_project(project, capsys):
    assert status_cmd.status(project) == 0
    out = capsys.readouterr().out
    assert "no nights yet" in out
    assert "latest proposal: none" in out and "last adoption: none" in out


def test_status_shows_nights_trend_proposal_and_adoption(project, capsys):
    _night(project, "n1", 0.4, 0.6, accepted=True, staged=b"first\n")
    adopt(project)
    _night(project, "n2", 0.6, 0.5, accepted=False)
    _night(project, "n3", 0.6, 0.8, accepted=True, staged=b"third\n")
    data = status_cmd.collect_status(project)
    assert data["n_nights"] == 3
    assert [t["live"] for t in data["trend"]] == [0.6, 0.6, 0.6]  # n3 is only proposed
    assert data["latest_proposal"]["night_id"] == "n3"
    assert data["latest_proposal"]["adopted"] is False
    assert data["last_adoption"]["night_id"] == "n1"
    assert data["last_adoption"]["reverted"] is False

    assert status_cmd.status(project) == 0
    out = capsys.readouterr().out
    assert "nights: 3" in out
    assert "score of the documents in effect (val): 0.600 → 0.600 → 0.600" in out
    assert "proposals: 0.400 → 0.600 adopted, 0.600 → 0.800 staged" in out
    assert "latest proposal: night n3 (staged)" in out
    assert f"adopt with: skillopt-sleep adopt --project {project} --night n3" in out
    assert "last adoption: night n1" in out and "in effect" in out


def test_status_json_via_parser_ignores_other_projects(project, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / "CLAUDE.md").write_bytes(b"x\n")
    _night(other, "elsewhere", 0.1, 0.2, accepted=True)
    _night(project, "n1", 0.4, 0.6, accepted=True)
    parser = argparse.ArgumentParser()
    status_cmd.register(parser.add_subparsers())
    args = parser.parse_args(["status", "--project", str(project), "--json"])
    assert args.func(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert [n["night_id"] for n in data["nights"]] == ["n1"]
    assert data["running"] is None


def test_a_reverted_night_is_reverted_everywhere_and_never_the_live_score(project, capsys):
    """The trend is the documents in effect (baselines; a candidate only while adopted), apart
    from proposals; a reverted night says "reverted" in status, review and report.html."""
    from skillopt_sleep.staging.adoption import revert
    from skillopt_sleep.commands.review import review
    from skillopt_sleep.report.trend_chart import _xy

    _night(project, "n1", 0.4, 0.6, accepted=True, staged=b"first\n")
    _night(project, "n2", 0.5, 0.7, accepted=True, staged=b"second\n")
    adopt(project, "n1")
    revert(project, "n1")
    data = status_cmd.collect_status(project)
    assert [(t["baseline"], t["proposed"], t["live"], t["state"]) for t in data["trend"]] == [
        (0.4, 0.6, 0.4, "reverted"),
        (0.5, 0.7, 0.5, "staged"),
    ]
    assert [n["state"] for n in data["nights"]] == ["reverted", "staged"]

    assert status_cmd.status(project) == 0
    out = capsys.readouterr().out
    (n1_row,) = [line for line in out.splitlines() if "  n1  " in line]
    assert "reverted" in n1_row and "staged" not in n1_row
    assert "score of the documents in effect (val): 0.400 → 0.500  (" in out
    assert "proposals: 0.400 → 0.600 reverted, 0.500 → 0.700 staged" in out

    assert review(project, "n1") == 0
    assert capsys.readouterr().out.startswith("# skillopt-sleep proposal: night n1 (reverted)")
    html = (project / ".skillopt-sleep" / "staging" / "n1" / "report.html").read_text(encoding="utf-8")
    assert "<td>reverted · night status staged</td>" in html
    (line,) = re.findall(r'<polyline points="([^"]+)"', html)
    assert line.split() == [f"{x},{y}" for x, y in (_xy(0, 2, 0.4), _xy(1, 2, 0.5))]
    assert re.findall(r'data-proposal="(n\d)" data-state="(\w+)"', html) == [("n1", "reverted"), ("n2", "staged")]
    assert len(re.findall(r"data-baseline=", html)) == 2


@pytest.mark.parametrize(
    "env, review, adopt, schedule",
    [
        (
            {},
            "skillopt-sleep review --project {p}",
            "skillopt-sleep adopt --project {p} --night n1",
            "`skillopt-sleep schedule`",
        ),
        (
            {"CLAUDECODE": "1"},
            "/skillopt-sleep review",
            "/skillopt-sleep adopt --night n1",
            "`/skillopt-sleep schedule`",
        ),
        (
            {"CODEX_THREAD_ID": "019a-thread"},
            'ask Codex: "skillopt-sleep review"',
            'ask Codex: "skillopt-sleep adopt --night n1"',
            '`ask Codex: "skillopt-sleep schedule"`',
        ),
    ],
)
def test_status_names_the_command_of_where_it_is_read(project, capsys, monkeypatch, env, review, adopt, schedule):
    """In Claude Code's Bash tool (CLAUDECODE=1) status names the slash command; in Codex's shell
    tool (CODEX_THREAD_ID) the skill; in a terminal the command line."""
    monkeypatch.delenv("CLAUDECODE", raising=False)
    monkeypatch.delenv("CODEX_THREAD_ID", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert status_cmd.status(project) == 0
    assert ("start one with" in capsys.readouterr().out) == bool(env)
    _night(project, "n1", 0.4, 0.6, accepted=True, staged=b"first\n")
    assert status_cmd.status(project) == 0
    out = capsys.readouterr().out
    assert f"    review with: {review.format(p=project)}\n" in out
    assert f"    adopt with: {adopt.format(p=project)}\n" in out
    assert f"  schedule: none ({schedule} runs a night every night)" in out
    if env:
        assert "skillopt-sleep review --project" not in out and "skillopt-sleep adopt --project" not in out


def test_status_and_the_report_say_whose_sessions_the_night_read(tmp_path: Path) -> None:
    from skillopt_sleep.commands.demo import build_demo_home
    from skillopt_sleep.config import Config
    from skillopt_sleep.night import NightOptions, run_night
    from skillopt_sleep.report.markdown import render_markdown, render_text

    _, claude, demo_project = build_demo_home(tmp_path / "demo")
    config = Config(backend="sim:seed=1", source="all", claude_home=str(claude), codex_home=str(tmp_path / "none"))
    report = run_night(NightOptions(project=demo_project, config=config, mode="run"))
    assert report.agents == {"claude": 21} and report.n_sessions == 21
    assert "sessions 21 (Claude Code 21)" in render_text(report)
    assert "| sessions harvested | 21 (Claude Code 21) |" in render_markdown(report)
    status = status_cmd.format_status(status_cmd.collect_status(demo_project))
    assert "sessions the last night read: Claude Code 21" in status
