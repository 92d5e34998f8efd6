"""Fake ``claude`` and ``codex`` executables that record how they were run and reply like the
real CLIs.

``install(bin_dir)`` writes both scripts; put ``bin_dir`` first on PATH. Each run appends one JSON
line (argv, cwd, the files in cwd at start, stdin) to ``$FAKE_CLI_LOG``. ``$FAKE_CLI_MODE``
picks the reply: ``ok``, ``not_logged_in`` (JSON error, exit 1), ``login_text`` (the login nag
printed as if it were an answer, exit 0), ``fail`` (exit 1 with an error on stderr),
``empty`` (success with no text), ``rate_limit`` (a usage-limit error). Every run also drops a
file in its cwd, like a session artefact, so tests can check the directory is removed.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

_COMMON = r'''
import json, os, sys
mode = os.environ.get("FAKE_CLI_MODE", "ok")
stdin = sys.stdin.read()
cwd = os.getcwd()
record = {"argv": sys.argv, "cwd": cwd, "cwd_files": sorted(os.listdir(cwd)), "stdin": stdin}
with open(os.environ["FAKE_CLI_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(record) + "\n")
with open(os.path.join(cwd, "session-artifact.jsonl"), "w") as artefact:
    artefact.write("{}\n")
'''

CLAUDE = _COMMON + r'''
def result(text, is_error=False, subtype="success"):
    return json.dumps({
        "type": "result", "subtype": subtype, "is_error": is_error, "duration_ms": 12,
        "num_turns": 1, "result": text, "session_id": "fake-session", "total_cost_usd": 0.001,
        "usage": {"input_tokens": 11, "cache_creation_input_tokens": 3,
                  "cache_read_input_tokens": 40, "output_tokens": 7},
        "modelUsage": {"claude-fake-model": {"inputTokens": 11, "outputTokens": 7}},
    })

if mode == "ok":
    print(result("fake claude answer: " + stdin.strip()[:40]))
elif mode == "not_logged_in":
    print(result("Invalid API key · Please run /login", is_error=True))
    sys.exit(1)
elif mode == "login_text":
    print("Invalid API key · Please run /login")
elif mode == "fail":
    sys.stderr.write("Error: something broke inside claude\n")
    sys.exit(1)
elif mode == "empty":
    print(result(""))
elif mode == "rate_limit":
    print(result("Claude AI usage limit reached|1767225600", is_error=True))
    sys.exit(1)
'''

CODEX = _COMMON + r'''
argv = sys.argv[1:]
out = argv[argv.index("-o") + 1]
def event(obj):
    print(json.dumps(obj))
event({"type": "thread.started", "thread_id": "fake-thread"})
event({"type": "turn.started"})
if mode == "ok":
    answer = "fake codex answer: " + stdin.strip()[-40:]
    event({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": answer}})
    event({"type": "turn.completed", "usage": {"input_tokens": 50, "cached_input_tokens": 30, "output_tokens": 9}})
    with open(out, "w") as f:
        f.write(answer + "\n")
elif mode == "not_logged_in":
    event({"type": "error", "message": "unexpected status 401 Unauthorized: Not logged in. Run `codex login`"})
    event({"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized"}})
    sys.exit(1)
elif mode == "login_text":
    with open(out, "w") as f:
        f.write("Not logged in. Run `codex login` first.\n")
elif mode == "fail":
    sys.stderr.write("Error: codex crashed\n")
    sys.exit(1)
elif mode == "empty":
    event({"type": "turn.completed", "usage": {"input_tokens": 5, "cached_input_tokens": 0, "output_tokens": 0}})
elif mode == "rate_limit":
    event({"type": "turn.failed", "error": {"message": "You've hit your usage limit. Try again later."}})
    sys.exit(1)
'''


def install(bin_dir: Path) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, body in (("claude", CLAUDE), ("codex", CODEX)):
        path = bin_dir / name
        path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def runs(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]

