"""End to end: the demo night on bundled transcripts, through the real harvester, miner,
learning loop, gate and staging, with the noisy sim backend.

The demo's transcripts name the demo project's real path wherever the bundled ones name their
sample project, as valid JSON whatever the path holds: a ``"`` or ``\\`` in the demo directory
once left lines that were no JSON (and that every reader skipped)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillopt_sleep.cli import main
from skillopt_sleep.errors import UserError
from skillopt_sleep.commands.demo import PLACEHOLDER_CWD, run_demo
from skillopt_sleep.report.markdown import render_text
from skillopt_sleep.types import NightReport


def test_demo_accepts_improving_scoped_edits_and_says_why(tmp_path: Path) -> None:
    data = run_demo(tmp_path / "demo", seed=1, quiet=True)
    assert data["n_sessions"] >= 15 and data["n_tasks"] >= 8
    assert data["accepted"] is True and data["accepted_edits"]
    assert data["candidate"] > data["baseline"]
    # every accepted edit passed its own gate decision, measured on val tasks
    accepted = {e["content"] for e in data["accepted_edits"]}
    single = {d["edits"][0]["content"]: d for d in data["decisions"] if len(d["edits"]) == 1}
    for content in accepted:
        stat = single[content]["statistic"]
        assert single[content]["accepted"] and stat["gain_shown"]
        # shown exactly where every sample is a share of a few checks, else by Student's t
        assert stat["p_value"] < 0.025 if "p_value" in stat else stat["lower_bound"] > 0
    # each accepted rule names the kind of work it is for, and goes to the skill
    kinds = {t["kind"] for t in data["task_index"].values()}
    for e in data["accepted_edits"]:
        assert e["scope"] and e["target"] == "skill"
        assert e["content"].startswith(f"When {e['scope']}, ")
        assert any(k in e["scope"] for k in kinds)
    # the printed report says why: which kinds improved and the gate's figure
    text = render_text(NightReport.from_dict(data))
    assert text.count("      why: this rule alone: ") == len(accepted)
    assert text.count("lower bound +") + text.count(", exact)") == len(accepted)
    # the proposal is staged, and the live CLAUDE.md is untouched until adopt
    staged = Path(data["staging_dir"])
    manifest = json.loads((staged / "manifest.json").read_text())
    assert manifest["files"]
    assert "Release notes always have" in (tmp_path / "demo" / "acme-invoices" / "CLAUDE.md").read_text()


def test_demo_refuses_harmful_edits(tmp_path: Path) -> None:
    """With a harmful proposal for every failing check, none is accepted: each is ranked below the
    night's budget, dropped when its replays on its own train tasks fixed nothing, or refused by
    the gate, which measured it not to help."""
    data = run_demo(tmp_path / "demo", seed=1, quiet=True, sim="follow=0.9,base=0.15,correct=0.6,harmful=1")
    harmful = re.compile(r"keep every response short|keep it out", re.I)  # the sim's misreadings
    assert not any(harmful.search(e["content"]) for e in data["accepted_edits"])
    refused = [r for r in data["rejected_edits"] if harmful.search(r["edit"]["content"])]
    assert refused, data["rejected_edits"]
    single = {d["edits"][0]["content"]: d for d in data["decisions"] if len(d["edits"]) == 1}
    for r in refused:
        gated = single.get(r["edit"]["content"])
        if gated is None:
            assert any(
                "ranked below the best" in x or "fixed nothing on its own train tasks" in x for x in r["reasons"]
            ), r
        else:
            assert not gated["accepted"]
            assert (
                any(t["candidate"] < t["baseline"] for t in gated["per_task"])
                or gated["candidate"] <= gated["baseline"]
            )


def test_demo_outcome_comes_from_the_loop_not_a_script(tmp_path: Path) -> None:
    """A sim whose optimizer never finds the right rule must not show an improvement."""
    data = run_demo(tmp_path / "demo", seed=1, sim="follow=0.9,base=0.15,correct=0,harmful=0.5", quiet=True)
    assert not any(
        not re.search(r"at most \d+ characters|never include", e["content"], re.I) for e in data["accepted_edits"]
    )
    data = run_demo(tmp_path / "demo2", seed=1, sim="follow=0.9,base=0.15,correct=0,harmful=0", quiet=True)
    assert data["accepted_edits"] == [] and data["candidate"] == data["baseline"]


def test_demo_cli_json_has_the_documented_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["demo", "--json", "--quiet", "--dir", str(tmp_path / "d")])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    for key in (
        "baseline",
        "candidate",
        "accepted",
        "accepted_edits",
        "rejected_edits",
        "n_sessions",
        "n_tasks",
        "staging_dir",
    ):
        assert key in data, key


def test_demo_refuses_a_non_empty_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["demo", "--dir", str(tmp_path)]) == 2
    assert (tmp_path / "keep.txt").read_text() == "mine"
    assert "not empty" in capsys.readouterr().err


def test_adopting_the_demo_proposal_keeps_hand_written_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from skillopt_sleep.documents.managed_block import END, START
    from skillopt_sleep.staging.adoption import adopt, revert

    data = run_demo(tmp_path / "demo", seed=1, quiet=True)
    project = tmp_path / "demo" / "acme-invoices"

    def documents() -> dict[Path, bytes]:
        return {p: p.read_bytes() for p in project.rglob("*.md") if ".skillopt-sleep" not in p.parts}

    before = documents()
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(tmp_path / "demo" / "skillopt-home"))
    assert data["simulated"] is True
    with pytest.raises(UserError, match="--allow-simulated"):
        adopt(project)  # the demo's rules come from the simulator
    assert documents() == before
    adopt(project, allow_simulated=True)
    for entry in json.loads((Path(data["staging_dir"]) / "manifest.json").read_text())["files"]:
        text = Path(entry["live_path"]).read_text()
        assert START in text and END in text
        for edit in data["accepted_edits"]:
            if edit["target"] == entry["role"]:
                assert edit["content"] in text
    claude_md = (project / "CLAUDE.md").read_text()
    assert claude_md.startswith(before[project / "CLAUDE.md"].decode())
    revert(project)
    assert documents() == before


def test_the_demos_printed_review_and_adopt_commands_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The commands the demo tells the user to run, run as printed (environment assignment first)."""
    import shlex

    assert main(["demo", "--quiet", "--dir", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    printed = {}
    for line in out.splitlines():
        for verb in ("review", "adopt"):
            if line.startswith(f"To {verb} "):
                printed[verb] = shlex.split(line.split(": ", 1)[1].split(" (or open ")[0])
    assert set(printed) == {"review", "adopt"}, out
    for verb in ("review", "adopt"):
        assignment, program, *args = printed[verb]
        name, value = assignment.split("=", 1)
        assert name == "SKILLOPT_SLEEP_HOME" and program == "skillopt-sleep"
        monkeypatch.setenv(name, value)
        assert main(args) == 0, verb
        shown = capsys.readouterr().out
        assert ("## Proposed rules" in shown) if verb == "review" else ("Adopted night" in shown)


# -- the demo's paths in its transcripts ---------------------------------------------------------


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_a_demo_directory_with_quotes_and_backslashes(tmp_path: Path, capsys) -> None:
    root = tmp_path / 'my "demo" \\ dir'
    assert main(["demo", "--dir", str(root), "--quiet", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    project = str(root.resolve() / "acme-invoices")
    lines = [
        line
        for f in sorted((root / "claude" / "projects").glob("*/*.jsonl"))
        for line in f.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    assert len(lines) > 100
    records = [json.loads(line) for line in lines]  # every line is JSON
    texts = [s for r in records for s in _strings(r)]
    assert not any(PLACEHOLDER_CWD in s for s in texts)  # the sample path is gone everywhere ...
    assert any(s.startswith(project + "/") for s in texts)  # ... file paths name the demo project
    assert {r["cwd"] for r in records if "cwd" in r} == {project}
    # and the night saw every session and staged a proposal in the demo project
    assert data["n_sessions"] >= 15 and data["staging_dir"].startswith(project)
