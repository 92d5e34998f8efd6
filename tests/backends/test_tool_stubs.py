"""Tool checks: a task whose checks name a tool is offered that tool as a declared stub where the
backend can declare one (the SDK backends, the simulator), its calls recorded and never executed;
on a backend that cannot (the CLI backends) the task is not measurable and is left out."""

from __future__ import annotations

from skillopt_sleep.backends.anthropic_api import AnthropicBackend
from skillopt_sleep.backends.base import Completion, Request, can_offer_tools
from skillopt_sleep.backends.claude_cli import ClaudeCliBackend
from skillopt_sleep.backends.codex_cli import CodexCliBackend
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.openai_api import OpenAIBackend
from skillopt_sleep.backends.sim import SimBackend
from skillopt_sleep.checks.judges import required_tools
from skillopt_sleep.types import TaskRecord

from tests.support.fake_backend import FakeBackend

TOOL_JUDGE = {
    "kind": "rule",
    "checks": [
        {"op": "tool_called", "arg": "run_tests"},
        {"op": "contains", "arg": "passed"},
        {"op": "tool_called", "arg": "run_tests"},
    ],
}
PLAIN_JUDGE = {"kind": "rule", "checks": [{"op": "contains", "arg": "Refs:"}]}
STUBBED = Request(purpose="attempt", system="S", user="U", tools=("run_tests",))


def task(task_id: str, judge: dict) -> TaskRecord:
    return TaskRecord(id=task_id, intent="do it", project="/p", judge=judge)


def test_required_tools_are_the_tool_called_checks_once_each():
    assert required_tools(TOOL_JUDGE) == ("run_tests",)
    assert required_tools(PLAIN_JUDGE) == () and required_tools({}) == ()


def test_tools_are_part_of_the_cache_key_only_when_present():
    plain = Request(purpose="attempt", system="S", user="U")
    assert plain.cache_key("b") != STUBBED.cache_key("b")
    assert plain.cache_key("b") == Request(purpose="attempt", system="S", user="U", tools=()).cache_key("b")


def test_which_backends_can_offer_stub_tools():
    sdk = AnthropicBackend("claude-haiku-4-5", api_key="k")
    assert can_offer_tools(sdk, ("run_tests",)) and can_offer_tools(OpenAIBackend("gpt-5", api_key="k"), ("Bash",))
    assert not can_offer_tools(sdk, ("git commit",))  # not a name the API accepts
    assert can_offer_tools(SimBackend(), ("anything at all",))
    assert not can_offer_tools(ClaudeCliBackend(), ("Bash",)) and not can_offer_tools(CodexCliBackend(), ("Bash",))
    assert can_offer_tools(ClaudeCliBackend(), ())  # a task that needs no tool fits anywhere


def test_anthropic_declares_stub_tools_and_records_their_calls(anthropic_server):
    backend = AnthropicBackend("claude-haiku-4-5", api_key=anthropic_server.key, base_url=anthropic_server.base_url)
    assert backend.complete(STUBBED).ok
    (tool,) = anthropic_server.seen("/v1/messages")[0].body["tools"]
    assert tool["name"] == "run_tests" and tool["input_schema"]["type"] == "object"
    assert "not executed" in tool["description"]
    assert "tools" not in backend.message_params(Request(purpose="attempt", system="S", user="U"))
    message = {
        "content": [{"type": "tool_use", "id": "t1", "name": "run_tests", "input": {}}],
        "usage": {"input_tokens": 3, "output_tokens": 2},
        "model": "m",
    }
    assert backend.completion_from_message(message).tools_called == ["run_tests"]


def test_openai_declares_stub_tools(openai_server):
    backend = OpenAIBackend("gpt-5", api_key=openai_server.key, base_url=openai_server.base_url)
    assert backend.complete(STUBBED).ok
    (tool,) = openai_server.seen("/v1/chat/completions")[0].body["tools"]
    assert tool["type"] == "function" and tool["function"]["name"] == "run_tests"


def test_a_call_that_ends_in_a_tool_call_is_an_answer_not_an_empty_completion(retry):
    # a model may answer with a tool call and no text when a tool is offered
    tool_only = FakeBackend(lambda request: Completion(text="", tools_called=list(request.tools)), tools=True)
    completion = Client(tool_only, retry=retry).complete(STUBBED)
    assert completion.ok and completion.tools_called == ["run_tests"] and completion.text == ""
