"""Tool checks, the judge's side (checks/judges.py ``required_tools``): the tools a task's checks
name, once each. The backends' side is with each backend: ``can_offer_tools`` and the cache key in
test_base.py, the declared stubs in test_anthropic_api.py and test_openai_api.py, a tool-only answer
in test_client.py. This test stays here because tests/checks/ is kept as it is."""

from __future__ import annotations

from skillopt_sleep.checks.judges import required_tools
from skillopt_sleep.types import TaskRecord


TOOL_JUDGE = {
    "kind": "rule",
    "checks": [
        {"op": "tool_called", "arg": "run_tests"},
        {"op": "contains", "arg": "passed"},
        {"op": "tool_called", "arg": "run_tests"},
    ],
}
PLAIN_JUDGE = {"kind": "rule", "checks": [{"op": "contains", "arg": "Refs:"}]}


def task(task_id: str, judge: dict) -> TaskRecord:
    return TaskRecord(id=task_id, intent="do it", project="/p", judge=judge)


def test_required_tools_are_the_tool_called_checks_once_each():
    assert required_tools(TOOL_JUDGE) == ("run_tests",)
    assert required_tools(PLAIN_JUDGE) == () and required_tools({}) == ()
