"""What prompt caching saves on a night-like call sequence, measured against the fake Anthropic
server (which bills a prefix marked ``cache_control`` that it has seen before as a cache read,
and caches nothing under 1024 tokens, like the real API).

Run with ``-s`` to see the numbers: ``python -m pytest tests/backends/test_prompt_caching.py -s``.
"""

from __future__ import annotations

import json

from tests.support.anthropic_server import FakeAnthropic

from skillopt_sleep.backends.anthropic_api import AnthropicBackend
from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.pricing import Price
from skillopt_sleep.types import Usage

SKILL = "".join(f"- Rule {i}: when writing commit messages, keep the subject under 50 chars.\n" for i in range(40))
MEMORY = "".join(f"- Project fact {i}: tests live in tests/, run them with pytest -q.\n" for i in range(40))
TARGET_ROLE = "You are the coding agent. Follow the skill and memory documents below.\n\n"
OPTIMIZER_ROLE = "You improve the skill and memory documents from failed attempts.\n\n"
TRAIN, K, VAL = 6, 4, 6


def night_like(client: Client) -> None:
    """dream (train × K) → reflect (2) → gate (val baseline, val candidate)."""
    docs = SKILL + MEMORY
    target = TARGET_ROLE + docs
    client.map(
        [
            Request("attempt", target, f"train task {t}: write the commit message for diff #{t}", sample=k)
            for t in range(TRAIN)
            for k in range(K)
        ]
    )
    client.map([Request("reflect", OPTIMIZER_ROLE + docs, f"failures batch {i}: ...") for i in range(2)])
    client.map([Request("attempt", target, f"val task {v}: summarize PR #{v}") for v in range(VAL)])
    candidate = TARGET_ROLE + docs + "- New rule: mention the touched files.\n"
    client.map([Request("attempt", candidate, f"val task {v}: summarize PR #{v}") for v in range(VAL)])


def measure(prompt_cache: bool) -> Usage:
    with FakeAnthropic(min_cache_tokens=1024) as server:
        backend = AnthropicBackend(
            "claude-sonnet-4-6", api_key=server.key, base_url=server.base_url, prompt_cache=prompt_cache
        )
        client = Client(backend, limiter=Limiter(1))  # sequential: deterministic cache order
        night_like(client)
        return client.stats.usage


def billed_input(usage: Usage) -> float:
    """Input billed in uncached-token equivalents (cache read 0.1x, cache write 1.25x)."""
    return usage.input_tokens + 0.1 * usage.cache_read_tokens + 1.25 * usage.cache_write_tokens


def test_caching_cuts_the_input_a_night_bills():
    on, off = measure(True), measure(False)
    total_on = on.input_tokens + on.cache_read_tokens + on.cache_write_tokens
    total_off = off.input_tokens + off.cache_read_tokens + off.cache_write_tokens
    assert total_on == total_off  # the same prompts were sent
    assert off.cache_read_tokens == off.cache_write_tokens == 0
    assert on.cache_read_tokens > 0 and on.cache_write_tokens > 0
    price = Price(3.0, 15.0)
    report = {
        "calls": TRAIN * K + 2 + 2 * VAL,
        "caching_on": {**on.to_dict(), "billed_input_equivalent": round(billed_input(on))},
        "caching_off": {**off.to_dict(), "billed_input_equivalent": round(billed_input(off))},
        "billed_input_ratio": round(billed_input(on) / billed_input(off), 3),
        "cost_usd_at_3_15": {"on": round(price.cost(on), 4), "off": round(price.cost(off), 4)},
    }
    print("\nprompt caching on a night-like sequence:", json.dumps(report, indent=1))
    assert billed_input(on) < 0.35 * billed_input(off)
