"""Input tokens a real night bills with prompt caching on vs off, through the real Anthropic SDK
code path against the fake Anthropic server (tests/support), which caches a ``cache_control``
prefix it has seen before and, like the real API, nothing under 1024 tokens. Prints JSON.

The night is a dry-run of the demo project (bundled transcripts, heuristic miner) whose CLAUDE.md
is grown to a realistic size (--memory-lines conventions), so the documents prefix is cacheable.

    python scripts/bench_caching.py
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.anthropic_server import FakeAnthropic  # noqa: E402

from skillopt_sleep.commands.demo import build_demo_home  # noqa: E402
from skillopt_sleep.config import Config  # noqa: E402
from skillopt_sleep.night import NightOptions, run_night  # noqa: E402

CONVENTION = (
    "- {n}. In module area {n}, follow the existing naming, keep functions small, add a "
    "pytest test next to every change, and document public functions with a docstring.\n"
)


def night(prompt_cache: bool, memory_lines: int, concurrency: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(min_cache_tokens=1024) as server:
        home, claude, project = build_demo_home(Path(tmp))
        with open(project / "CLAUDE.md", "a", encoding="utf-8") as fh:
            fh.write("\n## Module conventions\n" + "".join(CONVENTION.format(n=n) for n in range(memory_lines)))
        os.environ["SKILLOPT_SLEEP_HOME"] = str(home)
        spec = (
            f"anthropic:base_url={server.base_url},api_key={server.key},"
            f"prompt_cache={'true' if prompt_cache else 'false'},model=claude-sonnet-4-6"
        )
        config = Config(
            backend=spec,
            agent="claude",
            source="claude",
            claude_home=str(claude),
            miner="heuristic",
            concurrency=concurrency,
            retries=2,
            retry_base_delay=0.0,
        )
        report = run_night(NightOptions(project=project, config=config, mode="dry-run"))
        u = report.usage
        billed = u.input_tokens + 0.1 * u.cache_read_tokens + 1.25 * u.cache_write_tokens
        return {
            "calls": sum(report.calls.values()),
            "input_tokens": u.input_tokens,
            "cache_read_tokens": u.cache_read_tokens,
            "cache_write_tokens": u.cache_write_tokens,
            "output_tokens": u.output_tokens,
            "total_input_tokens": u.input_tokens + u.cache_read_tokens + u.cache_write_tokens,
            "billed_equivalent_input": round(billed),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory-lines", type=int, default=40, help="conventions added to CLAUDE.md")
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    on = night(True, args.memory_lines, args.concurrency)
    off = night(False, args.memory_lines, args.concurrency)
    print(
        json.dumps(
            {
                "caching_on": on,
                "caching_off": off,
                "billed_input_ratio_on_over_off": round(
                    on["billed_equivalent_input"] / off["billed_equivalent_input"], 3
                ),
                "note": "billed-equivalent input = uncached + 0.1 x cache read + 1.25 x cache write",
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
