"""What every transport shares (backends/base.py), for tool checks: a request's stub tools are part
of its cache key only when it has some, and which backends can offer a task's tools as declared
stubs (the SDK backends and the simulator can; the CLI backends cannot, so a task that needs a tool
is not measurable on them)."""

from __future__ import annotations

from skillopt_sleep.backends.anthropic_api import AnthropicBackend
from skillopt_sleep.backends.base import Request, can_offer_tools
from skillopt_sleep.backends.claude_cli import ClaudeCliBackend
from skillopt_sleep.backends.codex_cli import CodexCliBackend
from skillopt_sleep.backends.openai_api import OpenAIBackend
from skillopt_sleep.backends.sim import SimBackend

STUBBED = Request(purpose="attempt", system="S", user="U", tools=("run_tests",))


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
