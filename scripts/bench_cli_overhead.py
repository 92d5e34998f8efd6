"""Input a replay costs through the real ``claude`` / ``codex`` CLIs, compared with the prompt itself.

Each CLI runs against the fake provider (tests/support) in a throwaway HOME that holds a user's own
context of a realistic size (a CLAUDE.md / AGENTS.md, a skill, an MCP server, developer
instructions), twice: the way a person runs it (``claude -p`` / ``codex exec``) and through the
engine's claude-cli / codex-cli backend. For every request the fake received, the model's input is
measured with the fakes' tokenizer (one token per 4 characters) over what a model reads: system /
instructions, messages, and tool definitions. Prints JSON; ``ratio`` is input / prompt.

    SKILLOPT_REAL_CLIS=<dir with claude and codex> python scripts/bench_cli_overhead.py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import provider_env  # noqa: E402
from tests.support.anthropic_server import FakeAnthropic  # noqa: E402
from tests.support.http_base import count_tokens  # noqa: E402
from tests.support.openai_server import FakeOpenAI, responses_input_text  # noqa: E402

from skillopt_sleep.backends.base import Request  # noqa: E402
from skillopt_sleep.backends.claude_cli import ClaudeCliBackend  # noqa: E402
from skillopt_sleep.backends.codex_cli import CodexCliBackend  # noqa: E402
from skillopt_sleep.prompts import render  # noqa: E402

RULE = "- {n}. Keep functions small, name them for what they do, and add a test beside each change.\n"
USER_MEMORY = "# My conventions\n" + "".join(RULE.format(n=n) for n in range(20))


def attempt_request(document_lines: int) -> Request:
    """An attempt prompt as the engine renders it, with a project document of ``document_lines``."""
    documents = "## CLAUDE.md\n" + "".join(RULE.format(n=n) for n in range(document_lines))
    return Request(
        purpose="attempt",
        system=render("attempt_system", documents=documents),
        user=render(
            "attempt_user",
            intent="Write the commit message for the staged change.",
            context="\nContext:\nM src/app.py (rename load() to load_config())\n",
            contract="\nOutput contract:\nOne subject line under 50 characters, then a body.\n",
        ),
    )


def user_context(home: Path, codex_home: Path) -> None:
    claude = home / ".claude"
    (claude / "skills" / "review").mkdir(parents=True, exist_ok=True)
    (claude / "CLAUDE.md").write_text(USER_MEMORY, encoding="utf-8")
    skill = "---\nname: review\ndescription: Review a change for naming and tests.\n---\nCheck names.\n"
    (claude / "skills" / "review" / "SKILL.md").write_text(skill, encoding="utf-8")
    (codex_home / "AGENTS.md").write_text(USER_MEMORY, encoding="utf-8")
    (codex_home / "skills" / "review").mkdir(parents=True, exist_ok=True)
    (codex_home / "skills" / "review" / "SKILL.md").write_text(skill, encoding="utf-8")


def anthropic_input(body: dict[str, Any]) -> int:
    system = body.get("system")
    text = system if isinstance(system, str) else "".join(b.get("text", "") for b in system or [])
    for message in body.get("messages") or []:
        content = message.get("content")
        text += (
            content
            if isinstance(content, str)
            else "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
        )
    return count_tokens(text) + count_tokens(json.dumps(body.get("tools") or []))


def responses_input(body: dict[str, Any]) -> int:
    return count_tokens(responses_input_text(body)) + count_tokens(json.dumps(body.get("tools") or []))


def measure(requests: list[Any], path: str, counter: Any) -> dict[str, Any]:
    turns = [r.body for r in requests if r.path == path and isinstance(r.body, dict)]
    return {
        "requests": len(turns),
        "input_tokens": [counter(b) for b in turns],
        "tools_offered": sorted({t.get("name") or t.get("type") for b in turns for t in b.get("tools") or []}),
    }


def bench_claude(cli_dir: Path, request: Request) -> dict[str, Any]:
    prompt = count_tokens(request.system + request.user)
    out: dict[str, Any] = {"prompt_tokens": prompt}
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(key="sk-ant-bench-" + "k" * 24) as fake:
        env = provider_env.claude_env(Path(tmp), fake)
        user_context(Path(env["HOME"]), Path(env["CODEX_HOME"]))
        fake.responder = lambda body: "feat: rename load() to load_config()"
        subprocess.run(
            [str(cli_dir / "claude"), "-p", "--output-format", "json", "--system-prompt", request.system, request.user],
            cwd=env["HOME"],
            env=env,
            capture_output=True,
            timeout=180,
            check=False,
        )
        out["plain_claude_p"] = measure(fake.requests, "/v1/messages", anthropic_input)
        fake.requests.clear()
        saved = os.environ.copy()
        try:
            os.environ.clear()
            os.environ.update(env)
            completion = ClaudeCliBackend(command=str(cli_dir / "claude"), timeout=180).complete(request)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        out["backend"] = measure(fake.requests, "/v1/messages", anthropic_input) | {"ok": completion.ok}
    return _ratios(out, prompt)


def bench_codex(cli_dir: Path, request: Request) -> dict[str, Any]:
    prompt = count_tokens(request.system + request.user)
    out: dict[str, Any] = {"prompt_tokens": prompt}
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(key="sk-bench-" + "k" * 24) as fake:
        env = provider_env.codex_env(Path(tmp), fake)
        user_context(Path(env["HOME"]), Path(env["CODEX_HOME"]))
        fake.responder = lambda body: "feat: rename load() to load_config()"
        subprocess.run(
            [str(cli_dir / "codex"), "exec", "--ephemeral", "--skip-git-repo-check", "--json", "-"],
            input=request.system + "\n\n---\n\n" + request.user,
            text=True,
            cwd=env["HOME"],
            env=env,
            capture_output=True,
            timeout=180,
            check=False,
        )
        out["plain_codex_exec"] = measure(fake.requests, "/v1/responses", responses_input)
        fake.requests.clear()
        saved = os.environ.copy()
        try:
            os.environ.clear()
            os.environ.update(env)
            completion = CodexCliBackend(command=str(cli_dir / "codex"), timeout=180).complete(request)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        out["backend"] = measure(fake.requests, "/v1/responses", responses_input) | {"ok": completion.ok}
    return _ratios(out, prompt)


def _ratios(out: dict[str, Any], prompt: int) -> dict[str, Any]:
    for value in out.values():
        if isinstance(value, dict) and value.get("input_tokens"):
            value["ratio"] = round(max(value["input_tokens"]) / prompt, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--document-lines",
        type=int,
        default=20,
        help="rules in the project document of the measured prompt (default 20)",
    )
    args = parser.parse_args()
    configured = os.environ.get("SKILLOPT_REAL_CLIS")
    if not configured:
        sys.exit(
            "set SKILLOPT_REAL_CLIS to the directory holding the real claude and codex "
            "(bash scripts/install_real_clis.sh prints it)"
        )
    cli_dir = Path(configured.split(os.pathsep)[0])  # the oldest release install_real_clis.sh printed
    request = attempt_request(args.document_lines)
    print(
        json.dumps(
            {
                "document_lines": args.document_lines,
                "tokenizer": "1 token per 4 characters",
                "claude": bench_claude(cli_dir, request),
                "codex": bench_codex(cli_dir, request),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
