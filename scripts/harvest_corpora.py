"""The transcript corpora ``bench_harvest.py`` reads (seeded, written under a directory).

- ``SmallRecordCorpus``: many small records. Claude Code and Codex sessions with the real record
  mix (multi-record assistant messages, tool calls and outputs — mostly a few hundred bytes to a
  few KB —, file-history snapshots, twin Codex records, injected context), ~0.1 % malformed lines,
  planted secrets, sub-agent / headless / exec sessions, and a few lines the reference engine
  cannot read (invalid UTF-8, a JSON value that is not an object).
- ``RecurringCorpus``: the same records in 24 projects, in shorter sessions whose typed prompts
  keep asking the same kinds of work (reworded) and follow up with the same complaints.
- ``RealClientCorpus``: few, large records. The genuine Claude Code 2.1 / Codex 0.169 sessions
  recorded in ``tests/fixtures/real/`` (attachments, API-request blobs, world state, tool output),
  copied until the size is reached. Each copy gets its own ids (every UUID is remapped), its own
  day and project directory, and variants of the typed prompts, so no copy is deduplicated away.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
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
REAL_FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "real"


class SmallRecordCorpus:
    """Seeded synthetic transcripts; ``bytes`` / ``lines`` / ``malformed`` / ``unreadable`` count
    what was written (``unreadable``: lines only a tolerant reader gets past)."""

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
        self.unreadable = 0
        self.lines = 0

    def prompt(self) -> str:
        """A typed prompt of one turn."""
        return self.rng.choice(PROMPTS).format(x=self.rng.choice(WORDS), v=self.rng.randint(1, 9))

    def project(self, index: int) -> str:
        return f"/home/dev/projects/app{index % 7}"

    def text(self, n: int) -> str:
        start = self.rng.randrange(0, max(len(self.text_pool) - n, 1))
        chunk = self.text_pool[start : start + n]
        if self.rng.random() < 0.02:
            chunk += "\n" + self.rng.choice(SECRETS)
        return chunk

    def output_size(self) -> int:
        r = self.rng.random()
        if r < 0.75:
            return self.rng.randint(60, 1_200)
        if r < 0.98:
            return self.rng.randint(1_200, 6_000)
        return self.rng.randint(6_000, 40_000)

    def write(self, path: Path, records: list[dict], mode: str = "w") -> int:
        path.parent.mkdir(parents=True, exist_ok=True)
        out = []
        for record in records:
            line = json.dumps(record, separators=(",", ":")).encode()
            roll = self.rng.random()
            if roll < 0.001:
                line = line[: len(line) // 2]  # a malformed (cut) line
                self.malformed += 1
            elif roll < 0.00105:
                line = b'{"type":"user","note":"\xff\xfe"}'  # invalid UTF-8
                self.unreadable += 1
            elif roll < 0.0011:
                line = b'["not", "an", "object"]'
                self.unreadable += 1
            out.append(line)
        data = b"\n".join(out) + b"\n"
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
            return {
                "parentUuid": str(uuid.UUID(int=rng.getrandbits(128))),
                "isSidechain": False,
                "userType": "external",
                "cwd": cwd,
                "sessionId": sid,
                "version": "2.0.31",
                "gitBranch": "main",
                "entrypoint": entry,
                "type": kind,
                "uuid": str(uuid.UUID(int=rng.getrandbits(128))),
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".000Z",
            }

        for turn in range(turns):
            prompt = self.prompt()
            if rng.random() < 0.05:
                prompt += " " + rng.choice(SECRETS)
            recs.append(base("user") | {"message": {"role": "user", "content": prompt}})
            for _step in range(rng.randint(1, 6)):
                mid = f"msg_{rng.getrandbits(64):016x}"
                tool = rng.choice(["Bash", "Read", "Edit", "Write", "Grep", "Skill"])
                tool_input = (
                    {"command": "pytest -q"} if tool == "Bash" else {"file_path": f"{cwd}/src/{rng.choice(WORDS)}.py"}
                )
                if tool == "Write":
                    tool_input["content"] = self.text(self.output_size() // 4)
                if tool == "Skill":
                    tool_input = {"skill": "commit-style"}
                blocks = [
                    {"type": "thinking", "thinking": self.text(300), "signature": "Eq" + "A" * 200},
                    {"type": "text", "text": self.text(rng.randint(50, 600))},
                    {"type": "tool_use", "id": f"toolu_{rng.getrandbits(48):012x}", "name": tool, "input": tool_input},
                ]
                for block in blocks:
                    recs.append(
                        base("assistant")
                        | {
                            "message": {
                                "model": "claude-sonnet-4-5",
                                "id": mid,
                                "type": "message",
                                "role": "assistant",
                                "content": [block],
                                "usage": {"input_tokens": 4, "output_tokens": 300},
                            },
                            "requestId": f"req_{rng.getrandbits(48):012x}",
                        }
                    )
                output = self.text(self.output_size())
                recs.append(
                    base("user")
                    | {
                        "message": {
                            "role": "user",
                            "content": [{"tool_use_id": "toolu_x", "type": "tool_result", "content": output}],
                        },
                        "toolUseResult": {"stdout": output[: len(output) // 2], "stderr": "", "interrupted": False},
                    }
                )
            recs.append(
                base("assistant")
                | {
                    "message": {
                        "model": "claude-sonnet-4-5",
                        "id": f"msg_{turn}",
                        "role": "assistant",
                        "content": [{"type": "text", "text": self.text(rng.randint(100, 1500))}],
                    }
                }
            )
            if rng.random() < 0.3:
                recs.append(
                    {
                        "type": "file-history-snapshot",
                        "messageId": "m",
                        "snapshot": {
                            "messageId": "m",
                            "trackedFileBackups": {f"src/{rng.choice(WORDS)}.py": {"version": 1}},
                            "timestamp": "2026-11-20T00:00:00.000Z",
                        },
                        "isSnapshotUpdate": True,
                    }
                )
        return recs

    # -- Codex ------------------------------------------------------------------------------
    def codex_records(self, sid: str, cwd: str, turns: int, t0: float, originator: str = "codex_cli_rs") -> list[dict]:
        rng = self.rng
        t = t0

        def rec(kind: str, payload: dict) -> dict:
            nonlocal t
            t += rng.uniform(1, 30)
            return {
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".000Z",
                "type": kind,
                "payload": payload,
            }

        recs = [
            rec(
                "session_meta",
                {
                    "id": sid,
                    "cwd": cwd,
                    "originator": originator,
                    "cli_version": "0.58.0",
                    "source": "exec" if originator == "codex_exec" else "cli",
                    "instructions": self.text(3000),
                    "git": {"branch": "main"},
                },
            ),
            rec(
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "# AGENTS.md instructions for " + cwd + "\n\n" + self.text(2000)}
                    ],
                },
            ),
            rec(
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {
                            "type": "input_text",
                            "text": "<environment_context>\n<cwd>" + cwd + "</cwd>\n</environment_context>",
                        }
                    ],
                },
            ),
        ]
        for _turn in range(turns):
            prompt = self.prompt()
            recs.append(rec("turn_context", {"cwd": cwd, "model": "gpt-5-codex", "approval_policy": "on-request"}))
            recs.append(
                rec(
                    "response_item",
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]},
                )
            )
            recs.append(rec("event_msg", {"type": "user_message", "message": prompt, "images": []}))
            for _step in range(rng.randint(1, 6)):
                recs.append(
                    rec(
                        "response_item",
                        {
                            "type": "reasoning",
                            "summary": [{"type": "summary_text", "text": self.text(200)}],
                            "encrypted_content": "gAAAA" + "B" * rng.randint(500, 4000),
                        },
                    )
                )
                recs.append(
                    rec(
                        "response_item",
                        {
                            "type": "function_call",
                            "name": "shell",
                            "call_id": "call_x",
                            "arguments": json.dumps({"command": ["bash", "-lc", "rg " + rng.choice(WORDS)]}),
                        },
                    )
                )
                recs.append(
                    rec(
                        "response_item",
                        {
                            "type": "function_call_output",
                            "call_id": "call_x",
                            "output": json.dumps(
                                {"output": self.text(self.output_size()), "metadata": {"exit_code": 0}}
                            ),
                        },
                    )
                )
                recs.append(
                    rec("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 100}}})
                )
            reply = self.text(rng.randint(100, 1500))
            recs.append(rec("event_msg", {"type": "agent_message", "message": reply}))
            recs.append(
                rec(
                    "response_item",
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": reply}]},
                )
            )
        return recs

    def session(self, kind: str, index: int, turns: int) -> None:
        rng = self.rng
        project = self.project(index)
        t0 = 1_790_000_000 + index * 3600
        sid = str(uuid.UUID(int=rng.getrandbits(128)))
        if kind == "claude":
            slug = project.replace("/", "-")
            entry = "sdk-cli" if rng.random() < 0.03 else "cli"
            self.write(
                self.claude / "projects" / slug / f"{sid}.jsonl", self.claude_records(sid, project, turns, t0, entry)
            )
            if rng.random() < 0.15:  # a sub-agent transcript next to it
                sub = self.claude_records(sid, project, 1, t0)
                for r in sub:
                    r["isSidechain"] = True
                self.write(
                    self.claude / "projects" / slug / sid / "subagents" / f"agent-{rng.getrandbits(32):08x}.jsonl", sub
                )
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
            self.write(path, self.claude_records(path.stem, "/home/dev/projects/app1", 1, 1_800_000_000), mode="a")
        index = 100_000
        while self.bytes - start < target_bytes:
            self.session("claude" if index % 2 == 0 else "codex", index, 1)
            index += 1


# the kinds of work a developer asks for again and again, each with the follow-up that says what
# the answer lacked; a session asks one or two of them (new wording each time) among other turns
RECURRING = [
    ("Write the commit message for the {x} change", "you forgot the Refs: line again"),
    ("Write release notes for v{v}.{n}", "no, the upgrade notes section is missing"),
    ("Summarize PR #{n} for the changelog", "please keep the breaking changes first"),
    ("Add a pytest test for the {x} parser", "use pytest.mark.parametrize for the cases"),
    ("Write the incident summary for the {x} outage", "you left out the root cause"),
    ("Draft the review comment on the {x} pull request", "too long, keep it to three bullets"),
    ("Write the migration guide for the {x} API", "include the before and after code"),
    ("Explain why the {x} job failed on CI", "show the failing command first"),
    ("Write the docstring for the {x} module", "use the Google style sections"),
    ("Draft the on-call handoff for the {x} service", "list the open alerts at the top"),
    ("Write the SQL migration for the {x} table", "it must be reversible, add the down step"),
    ("Write the standup update for the {x} work", "mention the blockers"),
]


class RecurringCorpus(SmallRecordCorpus):
    """A heavy history of many projects (24) whose sessions keep asking the same kinds of work
    (``RECURRING``, reworded each time) and complain the same way: what ``harvest --json
    --all-projects`` mines tasks from, beside the small records' tool traffic."""

    def prompt(self) -> str:
        rng = self.rng
        if rng.random() < 0.55:
            ask, complaint = rng.choice(RECURRING)
            self._follow = complaint if rng.random() < 0.6 else ""
            text = ask.format(x=rng.choice(WORDS), v=rng.randint(1, 9), n=rng.randint(1, 999))
            return text if rng.random() < 0.5 else f"{text}, please"
        follow, self._follow = getattr(self, "_follow", ""), ""
        return follow or super().prompt()

    def project(self, index: int) -> str:
        return f"/home/dev/projects/service{index % 24}"

    def generate(self, target_bytes: int) -> None:
        index = 0  # shorter sessions than the small shape's: more of them for the same bytes
        while self.bytes < target_bytes:
            self.session("claude" if index % 2 == 0 else "codex", index, self.rng.randint(1, 6))
            index += 1


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_FIXTURE_DAY = "2026-11-23"
_FIXTURE_PROJECT = "/tmp/skillopt-rec/work/acme-invoices"


class RealClientCorpus:
    """Copies of the recorded real-client sessions, each with its own ids, day, project and
    prompt wording. ``bytes`` / ``lines`` count what was written."""

    def __init__(self, root: Path, seed: int, fixtures: Path = REAL_FIXTURES) -> None:
        self.rng = random.Random(seed)
        self.root = root
        self.claude = root / "claude"
        self.codex = root / "codex"
        truth = json.loads((fixtures / "ground_truth.json").read_text())
        self.prompts = sorted({p for s in truth["sessions"].values() for p in s["typed"]}, key=len, reverse=True)
        self.files = {
            str(p.relative_to(fixtures))[: -len(".gz")]: gzip.decompress(p.read_bytes()).decode("utf-8")
            for p in sorted(fixtures.rglob("*.jsonl.gz"))
        }
        self.bytes = 0
        self.lines = 0
        self.copies = 0

    def _variant(self, prompt: str) -> str:
        words = prompt.split()
        at = self.rng.randrange(len(words))
        words.insert(at, self.rng.choice(WORDS))
        return " ".join(words)

    def _copy(self, index: int) -> None:
        salt = f"{self.rng.getrandbits(64):016x}"

        def new_uuid(m: re.Match[str]) -> str:
            digest = hashlib.blake2b((salt + m.group()).encode(), digest_size=16).digest()
            return str(uuid.UUID(bytes=digest))

        day = f"2026-10-{1 + index % 28:02d}"
        project = f"/home/dev/projects/app{index % 7}"
        replacements = [(p, self._variant(p)) for p in self.prompts]
        for rel, text in self.files.items():
            text = _UUID.sub(new_uuid, text)
            text = text.replace(_FIXTURE_DAY, day).replace(_FIXTURE_PROJECT, project)
            for old, new in replacements:
                text = text.replace(old, new)
            rel = _UUID.sub(new_uuid, rel).replace("2026-11-23", day).replace("2026/11/23", day.replace("-", "/"))
            rel = rel.replace(_FIXTURE_PROJECT.replace("/", "-"), project.replace("/", "-"))
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            data = text.encode("utf-8")
            path.write_bytes(data)
            self.bytes += len(data)
            self.lines += text.count("\n")
        self.copies += 1

    def generate(self, target_bytes: int) -> None:
        index = 0
        while self.bytes < target_bytes:
            self._copy(index)
            index += 1
