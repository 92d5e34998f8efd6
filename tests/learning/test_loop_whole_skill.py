"""Whole-skill edits go through the same gate as rules: an edit of a hand-written line that helps
is kept, one that breaks another kind is refused and banned, and a skill not opted in is never
edited (the edit is refused before any val task is replayed for it)."""

from __future__ import annotations

import json
from pathlib import Path

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.client import Client, Stats
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.models import Models
from skillopt_sleep.learning.loop import LoopSettings, consolidate
from skillopt_sleep.documents.managed_block import load_documents
from skillopt_sleep.types import TaskRecord

PASS = "ALL-GOOD"
FORBID = "- Never use a checklist."
NEEDED = "- Answer kind b politely."
SKILL = f"---\nname: skillopt-sleep-learned\ndescription: d\n---\n# Work\n\n{FORBID}\n{NEEDED}\n"
HELPS = {
    "target": "skill",
    "op": "replace_line",
    "anchor": FORBID,
    "content": "Use the checklist for kind a.",
    "evidence": ["train-a-0", "train-a-1"],
}
HURTS = {"target": "skill", "op": "delete_line", "anchor": NEEDED, "evidence": ["train-b-0"]}


class LineWorld:
    """Kind ``a`` passes unless the documents forbid checklists; kind ``b`` passes only while they
    ask for politeness. The optimizer proposes ``edits``; the target sees only the documents."""

    id = "line-world"

    def __init__(self, edits: list[dict]):
        self.edits = edits
        self.reflect_requests: list[Request] = []
        self.target_requests: list[Request] = []

    def complete(self, request: Request) -> Completion:
        if request.purpose == "reflect":
            self.reflect_requests.append(request)
            return Completion(text=json.dumps({"edits": self.edits}), model="world")
        self.target_requests.append(request)
        task, docs = request.payload["task"], request.payload["documents"]
        ok = ("Never use a checklist" not in docs) if task["skill_hint"] == "a" else ("politely" in docs)
        return Completion(text=f"Done. {PASS}" if ok else "Done.", model="world")


def tasks() -> list[TaskRecord]:
    judge = {"kind": "rule", "checks": [{"op": "contains", "arg": PASS}]}
    out = [
        TaskRecord(id=f"val-{k}-{i}", intent=f"val {k} {i}", judge=judge, skill_hint=k, split="val")
        for i in range(3)
        for k in "ab"
    ]
    return out + [
        TaskRecord(id=f"train-{k}-{i}", intent=f"train {k} {i}", judge=judge, skill_hint=k, split="train")
        for i in range(2)
        for k in "ab"
    ]


def run(tmp_path: Path, edits: list[dict], whole: bool):
    skill = tmp_path / ".claude" / "skills" / "skillopt-sleep-learned" / "SKILL.md"
    skill.parent.mkdir(parents=True, exist_ok=True)
    skill.write_text(SKILL, encoding="utf-8")
    world = LineWorld(edits)
    limiter, stats = Limiter(4), Stats()
    models = Models(
        Client(world, limiter=limiter, stats=stats), Client(world, limiter=limiter, stats=stats, role="optimizer")
    )
    docs = load_documents(tmp_path, "claude", whole_skill=whole)
    return consolidate(tasks(), docs, models, LoopSettings()), world


def test_a_helpful_line_edit_is_kept_and_a_harmful_one_is_refused_and_banned(tmp_path: Path) -> None:
    out, world = run(tmp_path, [HELPS, HURTS], whole=True)
    assert [e.op for e in out.accepted] == ["replace_line"]
    assert out.candidate > out.baseline
    text = out.documents.skill.text
    assert "Never use a checklist" not in text and "- Use the checklist for kind a." in text and NEEDED in text
    [refused] = [r for r in out.rejected if r.edit.op == "delete_line"]
    assert refused.ban and refused.stage == "gate"
    assert FORBID in world.reflect_requests[0].user  # the optimizer saw the hand-written line


def test_a_skill_not_opted_in_is_never_edited(tmp_path: Path) -> None:
    out, world = run(tmp_path, [HELPS], whole=False)
    assert out.accepted == [] and out.documents.skill.text == SKILL
    [refused] = out.rejected
    assert "whole-skill editing is off" in " ".join(refused.reasons)
    assert not refused.ban
