"""``skillopt-sleep review``: the staged proposal as Markdown — each rule's scope, evidence and
per-task gain, the refused edits and why, the hand-written line a rule overrides, the managed-block
diffs — and the same as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillopt_sleep.staging import stage as staging
from skillopt_sleep.cli import main
from skillopt_sleep.config import Config
from skillopt_sleep.night import NightOptions, run_night
from skillopt_sleep.types import Edit, GateDecision, NightReport, TaskDelta
from tests.support.tasks import make_tasks, write_tasks_file

HOSTILE = "\x1b[31mred\x1b[0m \u202eevil\u202c <script>alert(1)</script> <!-- hidden --> ```"


@pytest.fixture
def night(tmp_path: Path) -> NightReport:
    """A staged sim night on a reviewed tasks file (commit / pr / notes tasks)."""
    tasks = write_tasks_file(tmp_path / "tasks.json", make_tasks(per_kind=5))
    project = tmp_path / "project"
    project.mkdir()
    config = Config(backend="sim:correct=1,harmful=0.5,seed=4", agent="claude")
    report = run_night(NightOptions(project=project, config=config, mode="run", tasks_file=tasks))
    assert report.accepted and report.staging_dir
    return report


def test_review_shows_each_rule_with_scope_evidence_gain_and_the_diff(
    night: NightReport, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["review", "--project", night.project]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# skillopt-sleep proposal: night {night.night_id} (staged)")
    assert f"## Proposed rules ({len(night.accepted_edits)})" in out
    for edit in night.accepted_edits:
        assert edit.content in out
        kinds = sorted({task_id.split("-")[0] for task_id in edit.evidence})
        assert f"Scope (task kinds of its evidence): {', '.join(kinds)}" in out
        for task_id in edit.evidence:
            assert f"`{task_id}` (" in out  # evidence with its kind, split and excerpt
    gate_lines = [line for line in out.splitlines() if line.startswith("Gate (this rule alone): **accepted**")]
    assert len(gate_lines) == len(night.accepted_edits)
    val_ids = [t.task_id for t in night.decisions[0].per_task]
    for task_id in val_ids:
        assert any(line.startswith(f"| {task_id} | ") and "(n=" in line for line in out.splitlines())
    assert f"## Refused edits ({len(night.rejected_edits)})" in out
    for item in night.rejected_edits:
        assert item["reasons"][0] in out
    assert "```diff" in out and "+- " + night.accepted_edits[0].content in out
    assert "(managed block)" in out and "SIMULATED" not in out
    assert f"skillopt-sleep adopt --project {night.project} --night {night.night_id}" in out


def test_review_json_and_a_specific_night(night: NightReport, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["review", "--project", night.project, "--night", night.night_id, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["proposal"]
    assert data["night_id"] == night.night_id and data["state"] == "staged" and data["simulated"] is False
    assert [r["edit"]["content"] for r in data["rules"]] == [e.content for e in night.accepted_edits]
    rule = data["rules"][0]
    assert rule["scope"] and rule["evidence"][0]["excerpt"] and rule["decisions"][0]["per_task"]
    assert data["documents"] and data["documents"][0]["diff"].startswith("--- a/")
    assert Path(data["report_html"]).is_file()


def test_review_with_nothing_staged_and_an_unknown_night(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["review", "--project", str(tmp_path)]) == 0
    assert "No proposal is staged" in capsys.readouterr().out
    assert main(["review", "--project", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["proposal"] is None
    assert main(["review", "--project", str(tmp_path), "--night", "nope"]) == 6
    err = capsys.readouterr().err
    assert "no staged proposal for night nope" in err and len(err.strip().splitlines()) == 1


def test_review_after_adoption_says_so(night: NightReport, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["adopt", "--project", night.project]) == 0
    capsys.readouterr()
    assert main(["review", "--project", night.project]) == 0
    out = capsys.readouterr().out
    assert "(adopted)" in out.splitlines()[0] and "## Next step" not in out


def hostile_night(project: Path) -> NightReport:
    edit = Edit(target="memory", op="add", content="Rule " + HOSTILE, rationale=HOSTILE, evidence=["t1"])
    decision = GateDecision(
        accepted=True,
        action="accept",
        baseline=0.2,
        candidate=0.8,
        edits=[edit],
        per_task=[TaskDelta("v" + HOSTILE, 0.2, 0.8, 0.6, 4, 4)],
        statistic={"gain": 0.6, "lower_bound": 0.3},
    )
    return NightReport(
        night_id="20260101T000000Z-abcd",
        project=str(project),
        mode="run",
        status="staged",
        accepted_edits=[edit],
        decisions=[decision],
        baseline=0.2,
        candidate=0.8,
        rejected_edits=[{"edit": edit.to_dict(), "reasons": [HOSTILE]}],
        task_index={"t1": {"kind": HOSTILE, "split": "train", "excerpt": HOSTILE}},
        notes=[HOSTILE],
        backend_choice=HOSTILE,
    )


def test_untrusted_text_is_sanitized_in_review_and_escaped_in_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = hostile_night(tmp_path)
    staged = staging.stage(
        tmp_path,
        report,
        [
            staging.StagedFile(
                role="memory",
                live_path=tmp_path / "CLAUDE.md",
                baseline=b"# mine\n",
                proposed=b"# mine\n\n<!-- skillopt-sleep:learned:start -->\n- Rule x\n<!-- skillopt-sleep:learned:end -->\n",
            )
        ],
    )
    assert main(["review", "--project", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for raw in ("\x1b", "\u202e", "<!-- hidden"):
        assert raw not in out
    assert "red" in out and "evil" in out
    html = (staged / "report.html").read_text()
    for raw in ("\x1b", "\u202e", "<script>", "<!-- hidden"):
        assert raw not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_damaged_report_is_one_line_and_an_old_one_still_reviews(
    night: NightReport, capsys: pytest.CaptureFixture[str]
) -> None:
    report_json = Path(night.staging_dir) / "report.json"
    data = json.loads(report_json.read_text())
    del data["task_index"]  # staged by a version that did not record task kinds
    report_json.write_text(json.dumps(data))
    assert main(["review", "--project", night.project]) == 0
    assert "Scope (task kinds of its evidence): unknown" in capsys.readouterr().out

    report_json.write_text("{not json")
    assert main(["review", "--project", night.project]) == 6
    err = capsys.readouterr().err
    assert "unreadable" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def _numbers_section(markdown: str) -> list[str]:
    lines = markdown.split("## Numbers\n\n", 1)[1].splitlines()
    return [line for line in lines[: lines.index("")] if line.startswith("|")]


def test_review_of_a_night_that_learned_nothing_says_why_and_what_it_spent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A night with no rule shows report.md's Numbers (calls, tokens) and Notes, and why nothing
    was learned — not just "None." three times."""
    project = tmp_path / "project"
    project.mkdir()
    why = "no edit to try: 2 x optimizer reply was not JSON after one repair"
    report = NightReport(
        night_id="20260101T000000Z-0a0a",
        project=str(project),
        mode="run",
        status="no-change",
        n_sessions=9,
        n_tasks=6,
        splits={"train": 4, "val": 2},
        baseline=0.5,
        candidate=0.5,
        calls={"attempt": 40, "reflect": 2},
        notes=[why, "spent 12,345 tokens"],
    )
    report.usage.input_tokens, report.usage.output_tokens = 10_000, 2_345
    directory = staging.stage(project, report, [])
    assert main(["review", "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# skillopt-sleep proposal: night 20260101T000000Z-0a0a (staged, nothing to adopt)")
    assert f"**Nothing learned:** {why}" in out
    assert "| model calls | 42 (attempt 40, reflect 2) |" in out
    assert "- spent 12,345 tokens" in out and "input 10,000, output 2,345" in out
    assert _numbers_section(out) == _numbers_section((directory / "report.md").read_text(encoding="utf-8"))
    assert f"Nothing learned: {why}" in (directory / "report.md").read_text(encoding="utf-8")
    assert "Nothing learned:</b> " + why in (directory / "report.html").read_text(encoding="utf-8")

    assert main(["review", "--project", str(project), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["proposal"]
    assert data["nothing_learned"] == why and data["notes"] == [why, "spent 12,345 tokens"]
    assert {"measure": "model calls", "value": "42 (attempt 40, reflect 2)"} in data["numbers"]
    assert data["calls"] == {"attempt": 40, "reflect": 2} and data["usage"]["output_tokens"] == 2_345


def test_review_inside_claude_code_names_the_slash_command(
    night: NightReport, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")
    assert main(["review", "--project", night.project]) == 0
    out = capsys.readouterr().out
    assert (
        f"Adopt it with `/skillopt-sleep adopt --night {night.night_id}`; undo later with "
        f"`/skillopt-sleep revert --night {night.night_id}`."
    ) in out
    assert "skillopt-sleep adopt --project" not in out
