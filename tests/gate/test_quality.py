"""The quality guard: a rule that constrains form, or goes to project memory, is judged on what
its checks do not measure — its answers against a reference, beside the current documents'."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from skillopt_sleep import night
from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.sim import SimBackend, SimKnobs
from skillopt_sleep.backends.sim.target import substance_points
from skillopt_sleep.config import Config
from skillopt_sleep.gate.quality import constrains_form, fisher_p, parse_verdict
from skillopt_sleep.mining.taskfile import tasks_document
from skillopt_sleep.types import Edit, TaskRecord


@pytest.mark.parametrize(
    ("content", "target", "flagged"),
    [
        ("Keep every response short: at most 60 characters.", "skill", True),
        ("When writing a commit message, keep it brief.", "skill", True),
        ("Give only the code, no explanation.", "skill", True),
        ("Answer in one line.", "skill", True),
        ('Always include a section headed "Testing".', "skill", False),
        ("Use the search tool before answering.", "skill", False),
        ("Money is Decimal.", "memory", True),
    ],
)
def test_what_could_game_the_checks(content: str, target: str, flagged: bool):
    assert constrains_form(Edit(target=target, op="add", content=content)) is flagged


def test_exact_p():
    assert fisher_p(6, 6, 0, 6) == pytest.approx(1 / math.comb(12, 6))
    assert fisher_p(3, 6, 3, 6) == pytest.approx(sum(math.comb(6, k) ** 2 for k in range(4)) / math.comb(12, 6))
    assert fisher_p(0, 6, 6, 6) == pytest.approx(1.0)
    assert parse_verdict('{"as_good": false, "reason": "cut"}') is False
    with pytest.raises(ValueError):
        parse_verdict('{"as_good": "yes"}')


def answer(knobs: SimKnobs, documents: str, task_id: str = "t1", sample: int = 0) -> str:
    task = {
        "id": task_id,
        "intent": "Write an analysis of option 1",
        "judge": {"kind": "rule", "checks": [{"op": "max_chars", "arg": 1200}]},
    }
    return (
        SimBackend(knobs)
        .complete(
            Request(
                purpose="attempt", system="s", user="u", sample=sample, payload={"task": task, "documents": documents}
            )
        )
        .text
    )


def test_the_simulators_answers_carry_substance_a_tight_cap_cuts():
    knobs = SimKnobs(follow=1.0, substance=3)
    points = substance_points("t1", 3)
    full = answer(knobs, "")
    assert all(p in full for p in points)
    assert not any(p in answer(SimKnobs(follow=1.0), "") for p in substance_points("t1", 12))
    cut = answer(knobs, "- Keep every response short: at most 60 characters.")
    assert len(cut) <= 60 and not all(p in cut for p in points)
    judge = SimBackend(SimKnobs(follow=1.0))

    def as_good(reference: str, text: str) -> bool:
        reply = judge.complete(
            Request(
                purpose="quality",
                system="s",
                user=text + reference,
                payload={"task": {"id": "t1"}, "reference": reference, "answer": text},
            )
        )
        return json.loads(reply.text)["as_good"]

    assert as_good(full, full) and not as_good(full, cut) and as_good(cut, full)


SKILL = (
    "---\nname: skillopt-sleep-learned\ndescription: thorough analyst\n---\n\n# Thorough analyst\n\n"
    "Be exhaustive and detailed. Write multiple paragraphs.\n"
)


def verbose_night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, substance: int):
    """The seed-verbose shape: a skill that asks for length, a check of at most 1,200 characters, a
    verbose model, and an optimizer that proposes the cap and a far tighter one."""
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(tmp_path / "home"))
    project = tmp_path / "proj"
    skill = project / ".claude" / "skills" / "skillopt-sleep-learned" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL, encoding="utf-8")
    (project / "CLAUDE.md").write_text("# proj\n", encoding="utf-8")
    judge = {"kind": "rule", "checks": [{"op": "max_chars", "arg": 1200}]}
    tasks = [
        TaskRecord(
            id=f"t{i}",
            intent=f"Write an analysis of option {i} for the team",
            kind="analysis",
            judge=judge,
            split="val" if i < 4 else "train",
        )
        for i in range(10)
    ]
    tasks_file = tmp_path / "tasks.json"
    tasks_file.write_text(json.dumps(tasks_document(tasks, True)), encoding="utf-8")
    spec = f"sim:follow=1,base=0.2,correct=1,harmful=1,verbose=2000,substance={substance}"
    return night.run_night(
        night.NightOptions(
            project=project, config=Config(backend=spec, agent="claude"), mode="run", tasks_file=tasks_file
        )
    )


def test_a_rule_that_passes_by_cutting_the_work_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    report = verbose_night(tmp_path, monkeypatch, substance=4)
    [kept] = report.accepted_edits
    assert kept.content.endswith("at most 1200 characters.")
    [gaming] = [r for r in report.rejected_edits if "at most 1200" not in r["edit"]["content"]]
    assert gaming["reasons"][0].startswith("lowers what its checks do not measure")
    assert gaming["ledger"] is True
    assert report.calls.get("quality", 0) > 0


def test_without_substance_the_judge_sees_no_damage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The refusal is the judge's reading: where answers carry nothing the checks miss, the tighter
    cap passes its gate and the guard alike, and only adding nothing beside the 1,200-character cap
    keeps it out (the check set alone cannot tell it from the real fix)."""
    report = verbose_night(tmp_path, monkeypatch, substance=0)
    assert not any(r["reasons"][0].startswith("lowers what") for r in report.rejected_edits)
    assert any("accepted alone, but adds nothing beside" in r["reasons"][0] for r in report.rejected_edits)
