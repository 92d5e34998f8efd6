"""Gemini CLI sessions: hand-written session files for each rule of the format, and the genuine
sessions ``scripts/record_gemini.py`` recorded with the real CLI, harvested exactly."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from skillopt_sleep.sources import available_sources, harvest
from skillopt_sleep.sources.gemini import GeminiSource, read_session

PROJECT = "/work/demo-app"
SID = "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f"
CONTEXT = (
    "<session_context>\nThis is the Gemini CLI.\n- **Workspace Directories:**\n  - /work/demo-app\n"
    "<loaded_context>\n# GEMINI-MD-MARKER\n</loaded_context>\n</session_context>"
)


def meta(session_id: str = SID, **extra: Any) -> dict[str, Any]:
    return {"sessionId": session_id, "projectHash": "ab" * 32, "startTime": "2026-11-20T09:00:00.000Z", **extra}


def user(mid: str, text: str, second: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "id": mid,
        "timestamp": f"2026-11-20T09:01:{second:02d}.000Z",
        "type": "user",
        "content": [{"text": text}],
        **extra,
    }


def reply(mid: str, text: Any, second: int = 1, **extra: Any) -> dict[str, Any]:
    return {"id": mid, "timestamp": f"2026-11-20T09:01:{second:02d}.500Z", "type": "gemini", "content": text, **extra}


def tool_result(mid: str, name: str) -> dict[str, Any]:
    return {"id": mid, "type": "user", "content": [{"functionResponse": {"name": name, "response": {"output": "ok"}}}]}


def context_set() -> dict[str, Any]:
    return {"$set": {"messages": [user("ctx", CONTEXT)]}}


class Home:
    """A ``~/.gemini`` with one project dir: its root marker, prompt log and session files."""

    def __init__(self, root: Path, project: str = PROJECT, slug: str = "demo-app") -> None:
        self.home = root / ".gemini"
        self.dir = self.home / "tmp" / slug
        (self.dir / "chats").mkdir(parents=True)
        if project:
            (self.dir / ".project_root").write_text(project)
        self.logged: list[dict[str, Any]] = []

    def log(self, *prompts: str, session_id: str = SID) -> None:
        """What the interactive prompt writes to ``logs.json`` for each submitted line."""
        for text in prompts:
            number = sum(1 for e in self.logged if e["sessionId"] == session_id)
            entry = {"sessionId": session_id, "messageId": number, "type": "user", "message": text}
            self.logged.append(dict(entry, timestamp="2026-11-20T09:00:59.000Z"))
        (self.dir / "logs.json").write_text(json.dumps(self.logged, indent=2))

    def session(self, *records: Any, name: str = "session-2026-11-20T09-00-5f0c1d2e.jsonl") -> Path:
        path = self.dir / "chats" / name
        lines = [(r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records]
        path.write_text("".join(lines), encoding="utf-8")
        return path

    def harvest(self, project: str | None = PROJECT, **kwargs: Any):
        return harvest(project, source="gemini", homes={"gemini": self.home}, **kwargs)

    def digests(self, **kwargs: Any) -> dict[str, Any]:
        return {d.session_id: d for d in self.harvest(**kwargs).digests}


@pytest.fixture
def gem(tmp_path: Path) -> Home:
    return Home(tmp_path)


def test_typed_prompts_once_in_order_with_their_replies_and_no_injected_context(gem):
    gem.log("fix the flaky test", "/stats", "now write the commit message")
    gem.session(
        meta(kind="main"),
        context_set(),
        user("u1", "fix the flaky test"),
        reply("g1", "Looking."),
        reply("g1", "Looking.", toolCalls=[{"name": "read_file", "args": {"file_path": "tests/test_io.py"}}]),
        tool_result("t1", "read_file"),
        reply("g2", [{"text": "thinking", "thought": True}, {"text": "Fixed the race."}]),
        user("u2", "now write the commit message", second=5),
        reply("g3", "fix: wait for the socket", second=6),
    )
    [digest] = gem.harvest().digests
    assert digest.session_id == SID and digest.project == PROJECT
    assert digest.user_prompts == ["fix the flaky test", "now write the commit message"]
    assert digest.assistant_finals == ["Fixed the race.", "fix: wait for the socket"]
    assert digest.tools_used == ["read_file"] and digest.files_touched == ["tests/test_io.py"]
    assert "GEMINI-MD-MARKER" not in json.dumps(digest.to_dict())
    assert digest.started.isoformat().startswith("2026-11-20T09:00:00")


def test_a_session_with_no_logged_prompt_is_headless(gem):
    gem.log("an interactive prompt", session_id="another-session")
    gem.session(meta(), context_set(), user("u1", "HEADLESS prompt"), reply("g1", "Done."))
    result = gem.harvest()
    assert result.digests == [] and result.skipped["headless_session"] == 1


def test_a_headless_turn_on_an_interactive_session_is_left_out_with_its_reply(gem):
    gem.log("write the notes", "shorter please")
    gem.session(
        meta(),
        user("u1", "write the notes"),
        reply("g1", "Notes."),
        user("u2", "HEADLESS follow-up through resume", second=3),
        reply("g2", "HEADLESS reply", second=4),
        user("u3", "shorter please", second=5),
        reply("g3", "Short notes.", second=6),
    )
    [digest] = gem.harvest().digests
    assert digest.user_prompts == ["write the notes", "shorter please"]
    assert digest.assistant_finals == ["Notes.", "Short notes."]


def test_without_a_prompt_log_every_user_text_counts(gem):
    gem.session(meta(), context_set(), user("u1", "explain the retry loop"), reply("g1", "It backs off."))
    [digest] = gem.harvest().digests
    assert digest.user_prompts == ["explain the retry loop"]


def test_the_typed_form_of_an_expanded_prompt_is_the_prompt(gem):
    gem.log("summarize @README.md")
    expanded = user("u1", "summarize @README.md\n--- Content from referenced files ---\nREADME BODY")
    expanded["displayContent"] = [{"text": "summarize @README.md"}]
    gem.session(meta(), expanded, reply("g1", "A demo app."))
    [digest] = gem.harvest().digests
    assert digest.user_prompts == ["summarize @README.md"]


def test_a_resume_rewrites_the_list_and_nothing_is_counted_twice(gem):
    gem.log("first prompt", "second prompt")
    first = [user("u1", "first prompt"), reply("g1", "One.")]
    gem.session(
        meta(),
        context_set(),
        *first,
        {"$set": {"sessionId": SID}},
        {"$set": {"messages": [user("ctx", CONTEXT), *first]}},
        user("u2", "second prompt", second=9),
        reply("g2", "Two.", second=10),
    )
    [digest] = gem.harvest().digests
    assert digest.user_prompts == ["first prompt", "second prompt"]
    assert digest.assistant_finals == ["One.", "Two."]


def test_a_rewind_or_a_compression_does_not_unsay_what_was_typed(gem):
    gem.log("first prompt", "REWOUND prompt", "/compress", "after the rewind")
    gem.session(
        meta(),
        context_set(),
        user("u1", "first prompt"),
        reply("g1", "One."),
        user("u2", "REWOUND prompt"),
        reply("g2", "Rewound reply."),
        {"$rewindTo": "u2"},
        # a compression lists the turns it keeps again, under new ids, after its summary
        {
            "$set": {
                "messages": [
                    user("ctx", CONTEXT),
                    user("s1", "<state_snapshot>the user wants notes</state_snapshot>"),
                    reply("s2", "Got it. Thanks for the additional context!"),
                    user("k1", "first prompt"),
                    reply("k2", "One."),
                ]
            }
        },
        {"id": "i1", "type": "info", "content": ""},
        user("u3", "after the rewind"),
        reply("g3", "Again."),
    )
    [digest] = gem.harvest().digests
    assert digest.user_prompts == ["first prompt", "REWOUND prompt", "after the rewind"]
    assert digest.assistant_finals == ["One.", "Rewound reply.", "Again."]
    assert "state_snapshot" not in json.dumps(digest.to_dict())


def test_without_a_prompt_log_a_compression_summary_is_still_no_prompt(gem):
    gem.session(
        meta(),
        {"$set": {"messages": [user("ctx", CONTEXT)]}},
        user("u1", "first prompt"),
        {"$set": {"messages": [user("s1", "<state_snapshot>summary</state_snapshot>"), user("k1", "first prompt")]}},
        user("u2", "second prompt"),
    )
    [digest] = gem.harvest().digests
    assert digest.user_prompts == ["first prompt", "second prompt"]


def test_a_complaint_is_feedback_on_the_turn_before(gem):
    gem.log("write the release notes", "no - you forgot the ticket number again")
    gem.session(
        meta(),
        user("u1", "write the release notes"),
        reply("g1", "Notes."),
        user("u2", "no - you forgot the ticket number again"),
        reply("g2", "Added ACME-1."),
    )
    [digest] = gem.harvest().digests
    [signal] = digest.feedback
    assert (signal.polarity, signal.prompt_index) == ("negative", 0)


def test_a_pasted_secret_is_redacted_in_prompt_and_reply(gem):
    secret = "ghp_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"
    gem.log(f"deploy with {secret}")
    gem.session(meta(), user("u1", f"deploy with {secret}"), reply("g1", f"Done: deploy with {secret}"))
    [digest] = gem.harvest().digests
    text = json.dumps(digest.to_dict())
    assert secret not in text and "[REDACTED:github_token]" in digest.user_prompts[0]


def test_skills_and_files_the_tools_name(gem):
    gem.log("use the release skill")
    calls = [
        {"name": "activate_skill", "args": {"name": "release-notes"}},
        {"name": "write_file", "args": {"file_path": "CHANGELOG.md", "content": "x"}},
        {"name": "run_shell_command", "args": {"command": "git log"}},
        {"name": "invoke_agent", "args": {"agent_name": "generalist", "prompt": "count"}},
    ]
    gem.session(meta(), user("u1", "use the release skill"), reply("g1", "", toolCalls=calls))
    [digest] = gem.harvest().digests
    assert digest.skills_used == ["release-notes"] and digest.files_touched == ["CHANGELOG.md"]
    assert digest.tools_used == ["activate_skill", "write_file", "run_shell_command", "invoke_agent"]


def test_sub_agent_threads_are_not_sessions(gem):
    gem.log("delegate it")
    gem.session(meta(), user("u1", "delegate it"), reply("g1", "The helper is on it."))
    sub = gem.dir / "chats" / SID
    sub.mkdir()
    (sub / "agent-1.jsonl").write_text(
        json.dumps(meta("agent-1", kind="subagent")) + "\n" + json.dumps(user("s1", "SUBAGENT prompt")) + "\n"
    )
    [digest] = gem.harvest().digests
    assert digest.user_prompts == ["delegate it"]
    skipped: Counter[str] = Counter()
    assert read_session(str(sub / "agent-1.jsonl"), gem.home, skipped) == ([], ["agent-1"])
    assert skipped["subagent_thread"] == 1


def test_an_older_json_document_is_read_unless_resumed_into_jsonl(gem):
    document = {**meta(), "messages": [user("u1", "legacy prompt"), reply("g1", "Legacy reply.")]}
    legacy = gem.dir / "chats" / "session-2026-11-20T09-00-5f0c1d2e.json"
    legacy.write_text(json.dumps(document))
    [digest] = gem.harvest().digests
    assert digest.user_prompts == ["legacy prompt"]
    gem.session(meta(), user("u1", "legacy prompt"), reply("g1", "Legacy reply."))  # the .jsonl beside it
    result = gem.harvest()
    assert [d.path for d in result.digests] == [str(legacy) + "l"] and result.skipped["superseded_json"] == 1


def test_the_cwd_comes_from_the_registry_or_the_context_when_there_is_no_marker(tmp_path):
    home = Home(tmp_path, project="")
    (home.home / "projects.json").write_text(json.dumps({"projects": {"/work/registry-app": "demo-app"}}))
    home.session(meta(), user("u1", "a prompt"))
    assert [d.project for d in home.harvest(None).digests] == ["/work/registry-app"]
    (home.home / "projects.json").unlink()
    home.session(meta(), context_set(), user("u1", "a prompt"))
    assert [d.project for d in home.harvest(None).digests] == [PROJECT]


def test_sessions_of_other_projects_and_of_our_replay_dirs_are_left_out(tmp_path):
    home = Home(tmp_path, project="/tmp/skillopt-sleep-replay-abc")
    home.session(meta(), user("u1", "REPLAY PROMPT"))
    assert home.harvest(None).digests == []
    assert home.harvest(None).skipped["own_replay"] == 1
    other = Home(tmp_path / "b", project="/work/other")
    other.session(meta(), user("u1", "OTHER PROJECT"))
    assert other.harvest(PROJECT).digests == []


def test_a_session_is_read_again_when_it_grows_and_replaced_not_added_to(gem, tmp_path):
    gem.log("first prompt")
    path = gem.session(meta(), user("u1", "first prompt"), reply("g1", "One."))
    state = tmp_path / "state"
    first = gem.harvest(state_dir=state)
    first.commit()
    gem.log("second prompt")
    with open(path, "a") as handle:
        handle.write(json.dumps(user("u2", "second prompt")) + "\n" + json.dumps(reply("g2", "Two.")) + "\n")
    os.utime(path, ns=(1, 2_000_000_000_000_000_000))
    [digest] = gem.harvest(state_dir=state).digests
    assert digest.user_prompts == ["first prompt", "second prompt"]
    assert digest.assistant_finals == ["One.", "Two."]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b"{not json", "malformed_json"),
        (b"[1, 2]", "not_object"),
        (b"\xff\xfe{}", "bad_utf8"),
        (json.dumps({"id": "x", "type": 5, "content": "wrong type"}).encode(), "wrong_field_type"),
        (json.dumps({"id": "y", "type": "user", "content": 42}).encode(), "wrong_field_type"),
        (json.dumps({"id": "z", "type": "gemini", "content": {"a": 1}}).encode(), "wrong_field_type"),
        (json.dumps({"what": "ever"}).encode(), "unknown_record"),
        (json.dumps({"id": "w", "type": "gemini", "content": "ok", "toolCalls": "not a list"}).encode(), None),
        (json.dumps({"id": "v", "type": "gemini", "toolCalls": [{"name": "read_file", "args": 7}]}).encode(), None),
        (json.dumps({"$set": {"messages": "not a list", "kind": ["x"]}}).encode(), "wrong_field_type"),
        (json.dumps({"sessionId": SID, "messages": 5}).encode(), "wrong_field_type"),
        (json.dumps({"$rewindTo": "no-such-id"}).encode(), None),
    ],
)
def test_malformed_records_are_skipped_and_counted_never_a_traceback(gem, bad, reason):
    gem.log("a real prompt")
    path = gem.session(meta(), user("u0", "a real prompt"), reply("g0", "Real."))
    with open(path, "ab") as handle:
        handle.write(bad + b"\n")
    result = gem.harvest()
    assert [d.user_prompts for d in result.digests] == [["a real prompt"]]
    if reason:
        assert result.skipped == {reason: 1}


def test_a_truncated_last_line_and_broken_side_files_are_counted(gem):
    (gem.dir / "logs.json").write_text("[{broken")
    path = gem.session(meta(), user("u1", "kept prompt"), reply("g1", "Kept."))
    with open(path, "a") as handle:
        handle.write('{"id": "u2", "type": "user", "content": [{"text": "half writ')
    result = gem.harvest()
    assert [d.user_prompts for d in result.digests] == [["kept prompt"]]
    assert result.skipped["truncated_line"] == 1 and result.skipped["unreadable_prompt_log"] == 1


def test_a_huge_line_is_skipped(gem, monkeypatch):
    monkeypatch.setattr("skillopt_sleep.sources.base.MAX_LINE_BYTES", 1000)
    gem.session(meta(), user("u1", "x" * 2000), user("u2", "short prompt"))
    result = gem.harvest()
    assert [d.user_prompts for d in result.digests] == [["short prompt"]]
    assert result.skipped["oversized_line"] == 1


def test_a_fifo_where_a_session_file_belongs_is_not_read(gem):
    os.mkfifo(gem.dir / "chats" / "session-2026-11-20T09-00-fifo0000.jsonl")
    assert gem.harvest().skipped["not_a_regular_file"] == 1


def test_side_files_that_are_not_regular_files_are_never_opened_for_reading(tmp_path):
    gem = Home(tmp_path, project="")
    os.mkfifo(gem.dir / ".project_root")
    os.mkfifo(gem.dir / "logs.json")
    gem.session(meta(), context_set(), user("u1", "a prompt"))
    result = gem.harvest(None)
    assert [(d.project, d.user_prompts) for d in result.digests] == [(PROJECT, ["a prompt"])]
    assert result.skipped["unreadable_prompt_log"] == 1


def test_available_sources_finds_the_project(gem, tmp_path):
    gem.session(meta(), user("u1", "a prompt"))
    empty = tmp_path / "none"
    assert "gemini" in available_sources(PROJECT, homes={"gemini": gem.home, "claude": empty, "codex": empty})
    assert "gemini" not in available_sources("/work/elsewhere", homes={"gemini": gem.home})
    path = gem.dir / "chats" / "session-2026-11-20T09-00-5f0c1d2e.jsonl"
    assert GeminiSource().head_cwds(path) == {PROJECT}
    gem.log("typed in another session", session_id="another-session")
    assert GeminiSource().head_cwds(path) == set()  # this one is a headless run


# -- the genuine sessions --------------------------------------------------------------------------

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
TRUTH = json.loads((REAL / "gemini_ground_truth.json").read_text(encoding="utf-8"))
REDACTED = "[REDACTED:github_token]"
REPLIES = ("The tool came back.", "The helper is on it.")  # the recorder's model after a tool ran
INJECTED = (
    "session_context",
    "USER-GEMINI-MD-MARKER",
    "Project rules",
    "headless",
    "HEADLESS",
    "Refs: trailer",
    "system_note",  # what an @agent prompt is sent with
    "Content from referenced files",  # what an @file prompt is sent with
    "TODO: retry",
    "state_snapshot",
)


def real_sessions(kind: str) -> list[str]:
    return sorted(key for key, facts in TRUTH["sessions"].items() if facts["kind"] == kind)


def typed(key: str) -> list[str]:
    return [t.replace(TRUTH["secret_placeholder"], REDACTED) for t in TRUTH["sessions"][key]["typed"]]


@pytest.fixture(scope="module")
def real_home(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("real-gemini")
    for packed in (REAL / "gemini").rglob("*.gz"):
        target = root / packed.relative_to(REAL).with_suffix("")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.decompress(packed.read_bytes()))
    return root / "gemini"


@pytest.fixture(scope="module")
def real(real_home: Path) -> dict[str, Any]:
    result = harvest(TRUTH["project"], source="gemini", homes={"gemini": real_home})
    return {Path(d.path).relative_to(real_home.parent).as_posix(): d for d in result.digests}


def test_the_recording_covers_every_kind_of_session():
    assert {facts["kind"] for facts in TRUTH["sessions"].values()} == {"interactive", "headless", "subagent"}
    assert TRUTH["cli"] == "gemini" and TRUTH["version"]


def test_only_the_interactive_session_is_harvested(real):
    assert sorted(real) == real_sessions("interactive")


@pytest.mark.parametrize("key", real_sessions("interactive"))
def test_real_typed_prompts_once_each_in_order(real, key):
    digest = real[key]
    assert digest.user_prompts == typed(key)
    assert digest.n_user_turns == len(typed(key))
    assert digest.project == TRUTH["project"]


@pytest.mark.parametrize("key", real_sessions("interactive"))
def test_real_replies_paired_by_turn_and_nothing_injected(real, key):
    digest = real[key]
    text = json.dumps(digest.to_dict())
    for marker in INJECTED:
        assert marker not in text, marker
    for prompt, answer in zip(digest.user_prompts, digest.assistant_finals, strict=True):
        if answer not in REPLIES:  # the echo of the prompt, cut at 80 characters before redaction
            echo = answer.removeprefix("Done: ")
            assert answer.startswith("Done: ") and prompt.startswith(echo) and len(echo) >= min(len(prompt), 40), (
                prompt,
                answer,
            )


@pytest.mark.parametrize("key", real_sessions("interactive"))
def test_real_tools_files_and_feedback(real, key):
    digest = real[key]
    assert {"read_file", "write_file", "invoke_agent"} <= set(digest.tools_used)
    assert {"src/app.py", "CHANGELOG.md"} <= set(digest.files_touched)
    complaint = digest.user_prompts.index("no — you forgot the ticket number again")
    assert [(f.polarity, f.prompt_index) for f in digest.feedback] == [("negative", complaint - 1)]


def test_the_planted_secret_is_in_the_recording_and_in_no_digest(real, real_home):
    raw = "".join(p.read_text(encoding="utf-8") for p in real_home.rglob("session-*.jsonl"))
    found = set(re.findall(r"ghp_[A-Za-z0-9]{36}", raw))
    [secret] = [s for s in found if hashlib.sha256(s.encode()).hexdigest() == TRUTH["secret_sha256"]]
    for digest in real.values():
        assert secret not in json.dumps(digest.to_dict())
