"""What a person reviews about a proposal (report/proposal.py): the person's complaint beside the
rule that answers it, kept with the task's judge by mining, redacted into the report's task index,
and quoted in the line that says why the gate kept a rule."""

from __future__ import annotations

from skillopt_sleep.checks.judges import check_id
from skillopt_sleep.report.proposal import task_summaries, why_accepted
from skillopt_sleep.types import Edit, GateDecision, TaskDelta, TaskRecord

CHECK = {"op": "contains", "arg": "Refs:"}


def test_the_complaint_is_quoted_beside_the_rule():
    said = {check_id(CHECK): "You forgot the Refs: trailer, token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB."}
    tasks = [
        TaskRecord(
            id="a",
            intent="write the commit",
            kind="commit message",
            judge={"kind": "rule", "checks": [CHECK], "said": said},
        ),
        TaskRecord(
            id="v",
            intent="write another commit",
            kind="commit message",
            split="val",
            judge={"kind": "rule", "checks": [CHECK]},
        ),
    ]
    index = task_summaries(tasks)
    assert "ghp_0123456789" not in index["a"]["said"][check_id(CHECK)]  # the report's text is redacted
    edit = Edit(target="skill", op="add", content='Always include "Refs:".', evidence=["a"], targets=[check_id(CHECK)])
    decision = GateDecision(
        True, "accept", 0.3, 0.9, [TaskDelta("v", 0.3, 0.9, 0.6, 8, 8)], {"gain": 0.6, "lower_bound": 0.2}, edits=[edit]
    )
    why = why_accepted(edit, [decision], index)
    assert why.endswith('asked for in a session: "' + index["a"]["said"][check_id(CHECK)] + '"')
    assert "You forgot the Refs: trailer" in why
    unasked = Edit(target="skill", op="add", content="Be brief.", evidence=["v"], targets=[check_id(CHECK)])
    assert "asked for" not in why_accepted(
        unasked, [GateDecision(True, "accept", 0.3, 0.9, [], {}, edits=[unasked])], index
    )


def test_the_evidence_says_which_agent_each_mined_task_came_from():
    from skillopt_sleep.report.proposal import _evidence

    index = task_summaries(
        [
            TaskRecord(id="a", intent="write the commit", kind="commit message", agent="codex"),
            TaskRecord(id="f", intent="from a tasks file", kind="commit message", split="val"),
        ]
    )
    assert index["a"]["agent"] == "codex" and "agent" not in index["f"]
    _, evidence = _evidence(["a", "f", "gone"], index)
    assert [e.origin for e in evidence] == [
        "commit message, train, from Codex",
        "commit message, val",
        "unknown, ?",
    ]
