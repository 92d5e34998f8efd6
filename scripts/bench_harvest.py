#!/usr/bin/env python3
"""Benchmark the harvest (issue 3 item 9). Prints one JSON object.

1. Generates (seeded) a corpus of Claude Code and Codex transcripts of about ``--mb`` MB in a temp
   dir: realistic record mix (multi-record assistant messages, big tool outputs, file-history
   snapshots, twin Codex records, injected context), ~0.1% malformed lines, planted secrets,
   sub-agent / headless / exec sessions.
2. Full harvest of both sources with redaction on and a state dir (what a first night does), in a
   fresh child process so peak RSS is the harvester's own (self + its worker processes).
3. Appends ~1% new data (to existing sessions and as new sessions) and measures the incremental
   harvest: bytes read and seconds.

Usage: python scripts/bench_harvest.py [--mb 300] [--seed 7] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

WORDS = (
    "the a to of and in for with on is that this it be as test file function return value error "
    "module import class def self config path string list dict update add fix refactor commit "
    "branch merge review release notes changelog docs api client server request response token "
    "retry cache parse json yaml build lint format type check coverage fixture mock assert"
).split()
PROMPTS = [
    "Write the commit message for the staged changes",
    "Add a test for {x} in our pytest style",
    "Summarize the open PR for the changelog",
    "Refactor {x} to use the new config loader",
    "Why does {x} fail on CI?",
    "Write release notes for v{v}",
    "thanks, perfect",
    "no, you forgot the type hints",
    "it still fails",
    "lgtm",
]
SECRETS = [
    "sk-" + "ant-api03-" + "Q" * 40,
    "ghp" + "_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "AKIA" + "QWERTYUIOPASDFGH",
    "password=" + "hunter2hunter2",
    "Authorization: Bearer " + "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlMTIz",
]


class Corpus:
    def __init__(self, root: Path, seed: int) -> None:
        self.rng = random.Random(seed)
        self.root = root
        self.claude = root / "claude"
        self.codex = root / "codex"
        words = [self.rng.choice(WORDS) for _ in range(400_000)]
        lines, line = [], []
        for w in words:
            line.append(w)
            if len(line) > self.rng.randint(4, 14):
                lines.append(" ".join(line))
                line = []
        self.text_pool = "\n".join(lines)  # ~2.5 MB of "source code / log output"
        self.bytes = 0
        self.malformed = 0
        self.lines = 0

    def text(self, n: int) -> str:
        start = self.rng.randrange(0, max(len(self.text_pool) - n, 1))
        chunk = self.text_pool[start : start + n]
        if self.rng.random() < 0.02:
            chunk += "\n" + self.rng.choice(SECRETS)
        return chunk

    def output_size(self) -> int:
        r = self.rng.random()
        if r < 0.70:
            return self.rng.randint(100, 3_000)
        if r < 0.95:
            return self.rng.randint(3_000, 30_000)
        if r < 0.997:
            return self.rng.randint(30_000, 200_000)
        return self.rng.randint(1_000_000, 2_500_000)

    def write(self, path: Path, records: list[dict], mode: str = "w") -> int:
        path.parent.mkdir(parents=True, exist_ok=True)
        out = []
        for record in records:
            line = json.dumps(record, separators=(",", ":"))
            if self.rng.random() < 0.001:
                line = line[: len(line) // 2]  # a malformed line
                self.malformed += 1
            out.append(line)
        data = ("\n".join(out) + "\n").encode()
        with open(path, mode + "b") as handle:
            handle.write(data)
        self.bytes += len(data)
        self.lines += len(out)
        return len(data)

    # -- Claude Code ------------------------------------------------------------------------
    def claude_records(self, sid: str, cwd: str, turns: int, t0: float, entry: str = "cli") -> list[dict]:
        rng = self.rng
        recs: list[dict] = []
        t = t0

        def base(kind: str) -> dict:
            nonlocal t
            t += rng.uniform(1, 30)
            return {"parentUuid": str(uuid.UUID(int=rng.getrandbits(128))), "isSidechain": False,
                    "userType": "external", "cwd": cwd, "sessionId": sid, "version": "2.0.31",
                    "gitBranch": "main", "entrypoint": entry, "type": kind,
                    "uuid": str(uuid.UUID(int=rng.getrandbits(128))),
                    "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".000Z"}

        for turn in range(turns):
            prompt = rng.choice(PROMPTS).format(x=rng.choice(WORDS), v=rng.randint(1, 9))
            if rng.random() < 0.05:
                prompt += " " + rng.choice(SECRETS)
            recs.append(base("user") | {"message": {"role": "user", "content": prompt}})
            for _step in range(rng.randint(1, 6)):
                mid = f"msg_{rng.getrandbits(64):016x}"
                tool = rng.choice(["Bash", "Read", "Edit", "Write", "Grep", "Skill"])
                tool_input = {"command": "pytest -q"} if tool == "Bash" else {"file_path": f"{cwd}/src/{rng.choice(WORDS)}.py"}
                if tool == "Write":
                    tool_input["content"] = self.text(self.output_size() // 4)
                if tool == "Skill":
                    tool_input = {"skill": "commit-style"}
                blocks = [{"type": "thinking", "thinking": self.text(300), "signature": "Eq" + "A" * 200},
                          {"type": "text", "text": self.text(rng.randint(50, 600))},
                          {"type": "tool_use", "id": f"toolu_{rng.getrandbits(48):012x}", "name": tool, "input": tool_input}]
                for block in blocks:
                    recs.append(base("assistant") | {"message": {"model": "claude-sonnet-4-5", "id": mid, "type": "message",
                                "role": "assistant", "content": [block], "usage": {"input_tokens": 4, "output_tokens": 300}},
                                "requestId": f"req_{rng.getrandbits(48):012x}"})
                output = self.text(self.output_size())
                recs.append(base("user") | {"message": {"role": "user", "content": [
                    {"tool_use_id": "toolu_x", "type": "tool_result", "content": output}]},
                    "toolUseResult": {"stdout": output[: len(output) // 2], "stderr": "", "interrupted": False}})
            recs.append(base("assistant") | {"message": {"model": "claude-sonnet-4-5", "id": f"msg_{turn}", "role": "assistant",
                        "content": [{"type": "text", "text": self.text(rng.randint(100, 1500))}]}})
            if rng.random() < 0.3:
                recs.append({"type": "file-history-snapshot", "messageId": "m", "snapshot": {"messageId": "m",
                             "trackedFileBackups": {f"src/{rng.choice(WORDS)}.py": {"version": 1}}, "timestamp": "2026-11-20T00:00:00.000Z"},
                             "isSnapshotUpdate": True})
        return recs

    # -- Codex ------------------------------------------------------------------------------
    def codex_records(self, sid: str, cwd: str, turns: int, t0: float, originator: str = "codex_cli_rs") -> list[dict]:
        rng = self.rng
        t = t0

        def rec(kind: str, payload: dict) -> dict:
            nonlocal t
            t += rng.uniform(1, 30)
            return {"timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".000Z", "type": kind, "payload": payload}

        recs = [rec("session_meta", {"id": sid, "cwd": cwd, "originator": originator, "cli_version": "0.58.0",
                                     "source": "exec" if originator == "codex_exec" else "cli",
                                     "instructions": self.text(3000), "git": {"branch": "main"}}),
                rec("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text",
                    "text": "# AGENTS.md instructions for " + cwd + "\n\n" + self.text(2000)}]}),
                rec("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text",
                    "text": "<environment_context>\n<cwd>" + cwd + "</cwd>\n</environment_context>"}]})]
        for _turn in range(turns):
            prompt = rng.choice(PROMPTS).format(x=rng.choice(WORDS), v=rng.randint(1, 9))
            recs.append(rec("turn_context", {"cwd": cwd, "model": "gpt-5-codex", "approval_policy": "on-request"}))
            recs.append(rec("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}))
            recs.append(rec("event_msg", {"type": "user_message", "message": prompt, "images": []}))
            for _step in range(rng.randint(1, 6)):
                recs.append(rec("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": self.text(200)}],
                                                  "encrypted_content": "gAAAA" + "B" * rng.randint(500, 4000)}))
                recs.append(rec("response_item", {"type": "function_call", "name": "shell", "call_id": "call_x",
                                                  "arguments": json.dumps({"command": ["bash", "-lc", "rg " + rng.choice(WORDS)]})}))
                recs.append(rec("response_item", {"type": "function_call_output", "call_id": "call_x",
                                                  "output": json.dumps({"output": self.text(self.output_size()), "metadata": {"exit_code": 0}})}))
                recs.append(rec("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 100}}}))
            reply = self.text(rng.randint(100, 1500))
            recs.append(rec("event_msg", {"type": "agent_message", "message": reply}))
            recs.append(rec("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": reply}]}))
        return recs

    def session(self, kind: str, index: int, turns: int) -> None:
        rng = self.rng
        project = f"/home/dev/projects/app{index % 7}"
        t0 = 1_790_000_000 + index * 3600
        sid = str(uuid.UUID(int=rng.getrandbits(128)))
        if kind == "claude":
            slug = project.replace("/", "-")
            entry = "sdk-cli" if rng.random() < 0.03 else "cli"
            self.write(self.claude / "projects" / slug / f"{sid}.jsonl", self.claude_records(sid, project, turns, t0, entry))
            if rng.random() < 0.15:  # a sub-agent transcript next to it
                sub = self.claude_records(sid, project, 1, t0)
                for r in sub:
                    r["isSidechain"] = True
                self.write(self.claude / "projects" / slug / sid / "subagents" / f"agent-{rng.getrandbits(32):08x}.jsonl", sub)
        else:
            day = time.gmtime(t0)
            originator = "codex_exec" if rng.random() < 0.05 else "codex_cli_rs"
            name = f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S', day)}-{sid}.jsonl"
            folder = self.codex / "sessions" / time.strftime("%Y/%m/%d", day)
            if rng.random() < 0.1:
                folder = self.codex / "archived_sessions"
            self.write(folder / name, self.codex_records(sid, project, turns, t0, originator))

    def generate(self, target_bytes: int) -> None:
        index = 0
        while self.bytes < target_bytes:
            self.session("claude" if index % 2 == 0 else "codex", index, self.rng.randint(2, 12))
            index += 1

    def append_new(self, target_bytes: int) -> None:
        """A day's work: more turns in some existing sessions, plus a few new sessions."""
        start = self.bytes
        existing = sorted(self.claude.glob("projects/*/*.jsonl"))
        while self.bytes - start < target_bytes // 2:
            path = self.rng.choice(existing)
            sid = path.stem
            self.write(path, self.claude_records(sid, "/home/dev/projects/app1", 1, 1_800_000_000), mode="a")
        index = 100_000
        while self.bytes - start < target_bytes:
            self.session("claude" if index % 2 == 0 else "codex", index, 1)
            index += 1


def measure(root: Path) -> None:
    """Child process: full harvest + commit, then print timings and this process's peak RSS."""
    from skillopt_sleep.sources import harvest

    phase = sys.argv[sys.argv.index("--measure") + 2]
    state = root / "state"
    t0 = time.perf_counter()
    result = harvest(None, all_projects=True, source="all", claude_home=root / "claude",
                     codex_home=root / "codex", state_dir=state)
    t1 = time.perf_counter()
    result.commit()
    t2 = time.perf_counter()
    rss = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    print(json.dumps({
        "phase": phase, "seconds": round(t1 - t0, 3), "commit_seconds": round(t2 - t1, 3),
        "bytes_read": result.bytes_read, "files_read": result.files_read, "sessions": len(result.digests),
        "new_sessions": len(result.new_session_ids), "skipped": result.skipped,
        "peak_rss_mb_self": round(rss[0] / 1024, 1), "peak_rss_mb_workers": round(rss[1] / 1024, 1),
    }))


def run_child(root: Path, phase: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--measure", str(root), phase], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    if "--measure" in sys.argv:
        measure(Path(sys.argv[sys.argv.index("--measure") + 1]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=300.0, help="corpus size in MB (default 300)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="generate into this dir and keep it")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="skillopt-bench-harvest-"))
    try:
        corpus = Corpus(root, args.seed)
        t0 = time.perf_counter()
        corpus.generate(int(args.mb * 1e6))
        generated = time.perf_counter() - t0
        total = corpus.bytes
        n_files = sum(1 for _ in root.rglob("*.jsonl"))
        full = run_child(root, "full")
        corpus.append_new(int(total * 0.01))
        appended = corpus.bytes - total
        incremental = run_child(root, "incremental")
        print(json.dumps({
            "corpus_mb": round(total / 1e6, 1),
            "files": n_files,
            "lines": corpus.lines,
            "malformed_lines_planted": corpus.malformed,
            "cpu_count": os.cpu_count(),
            "generate_seconds": round(generated, 1),
            "full": {"seconds": full["seconds"], "mb_per_s": round(total / 1e6 / full["seconds"], 1),
                     "commit_seconds": full["commit_seconds"], "files_read": full["files_read"],
                     "sessions": full["sessions"], "skipped": full["skipped"]},
            "incremental": {"appended_bytes": appended, "bytes_read": incremental["bytes_read"],
                            "fraction_of_corpus": round(incremental["bytes_read"] / total, 4),
                            "seconds": incremental["seconds"], "commit_seconds": incremental["commit_seconds"],
                            "files_read": incremental["files_read"], "new_sessions": incremental["new_sessions"]},
            "peak_rss_mb": {"harvester": max(full["peak_rss_mb_self"], incremental["peak_rss_mb_self"]),
                            "worker_max": max(full["peak_rss_mb_workers"], incremental["peak_rss_mb_workers"])},
        }, indent=2))
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
