"""Fake ``claude`` and ``codex`` executables that record how they were run and reply like the
real CLIs.

``install(bin_dir)`` writes both scripts; put ``bin_dir`` first on PATH. Each run appends one JSON
line (argv, cwd, the files in cwd at start, stdin, the environment variables the backends set, the
system prompt / instructions file's text, the config.toml and files of CODEX_HOME) to
``$FAKE_CLI_LOG``. ``$FAKE_CLI_MODE`` picks the reply: ``ok``, ``not_logged_in`` (JSON error,
exit 1), ``login_text`` (the login nag printed as if it were an answer, exit 0), ``fail`` (exit 1
with an error on stderr), ``empty`` (success with no text), ``rate_limit`` (a usage-limit error),
``status_401`` / ``status_429`` (claude: an API error with ``api_error_status``), ``reconnect``
(codex: a dropped stream, a reconnect, then success), ``auth_retrying`` (codex: a 401 reported
while it keeps retrying for a minute). Every run also drops a file in its cwd and in its TMPDIR,
like a session artefact and a probe, so tests can check both are removed.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

_COMMON = r"""
import json, os, sys, tempfile, time
mode = os.environ.get("FAKE_CLI_MODE", "ok")
stdin = sys.stdin.read()
cwd = os.getcwd()
argv = sys.argv[1:]
def file_after(flag, prefix=""):
    for i, arg in enumerate(argv):
        value = argv[i + 1] if arg == flag and i + 1 < len(argv) else None
        if value and value.startswith(prefix):
            path = json.loads(value[len(prefix):]) if prefix else value
            with open(path, encoding="utf-8") as f:
                return f.read()
    return None
codex_home = os.environ.get("CODEX_HOME")
record = {
    "argv": sys.argv, "cwd": cwd, "cwd_files": sorted(os.listdir(cwd)), "stdin": stdin,
    "env": {k: os.environ.get(k) for k in ("TMPDIR", "CODEX_HOME", "CLAUDE_CODE_MAX_RETRIES",
                                           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")},
    "system_prompt": file_after("--system-prompt-file") or file_after("-c", "model_instructions_file="),
    "codex_home_files": sorted(os.listdir(codex_home)) if codex_home and os.path.isdir(codex_home) else None,
    "codex_config": open(os.path.join(codex_home, "config.toml")).read()
        if codex_home and os.path.exists(os.path.join(codex_home, "config.toml")) else None,
}
with open(os.environ["FAKE_CLI_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(record) + "\n")
with open(os.path.join(cwd, "session-artifact.jsonl"), "w") as artefact:
    artefact.write("{}\n")
with open(os.path.join(tempfile.gettempdir(), "cli-probe-" + str(os.getpid())), "w") as probe:
    probe.write("probe\n")
"""

CLAUDE = (
    _COMMON
    + r"""
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
elif mode in ("status_401", "status_429"):
    failed = json.loads(result("API Error: request rejected", is_error=True))
    failed.update(api_error_status=int(mode[-3:]), total_cost_usd=0)
    print(json.dumps(failed))
    sys.exit(1)
"""
)

CODEX = (
    _COMMON
    + r"""
out = argv[argv.index("-o") + 1]
def event(obj):
    print(json.dumps(obj), flush=True)
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
elif mode == "reconnect":
    event({"type": "error", "message": "Reconnecting... 1/5 (stream disconnected before completion: stream closed before response.completed)"})
    answer = "fake codex answer after a reconnect"
    event({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": answer}})
    event({"type": "turn.completed", "usage": {"input_tokens": 50, "cached_input_tokens": 30, "output_tokens": 9}})
    with open(out, "w") as f:
        f.write(answer + "\n")
elif mode == "auth_retrying":
    event({"type": "error", "message": "Reconnecting... 1/5 (unexpected status 401 Unauthorized: invalid key)"})
    sys.stdout.flush()
    time.sleep(60)
    event({"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized"}})
    sys.exit(1)
"""
)


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
