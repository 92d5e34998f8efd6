"""OpenCode's session database: hand-written databases for each rule of the reader, and the exact
harvest of a database the real CLI wrote (``scripts/record_opencode.py``;
``tests/fixtures/real/opencode_ground_truth.json`` says what a person typed into each session)."""

from __future__ import annotations

import gzip
import hashlib
import json
import multiprocessing
import os
import re
import sqlite3
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from skillopt_sleep.sources import SOURCES, harvest
from skillopt_sleep.sources.base import MAX_PROMPT_CHARS, clip
from skillopt_sleep.sources import opencode
from skillopt_sleep.sources.opencode import OpenCodeSource, is_headless, read_database, snapshot

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
TRUTH = json.loads((REAL / "opencode_ground_truth.json").read_text(encoding="utf-8"))
RUN_RULES = json.dumps(
    [
        {"permission": "question", "pattern": "*", "action": "deny"},
        {"permission": "plan_enter", "pattern": "*", "action": "deny"},
        {"permission": "plan_exit", "pattern": "*", "action": "deny"},
    ]
)
PROJECT = "/work/acme"


class Store:
    """A database with the tables (and only the columns) the reader needs, written as OpenCode does."""

    def __init__(self, home: Path, name: str = "opencode.db") -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.path = home / name
        self.db = sqlite3.connect(self.path)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.executescript(
            "CREATE TABLE session (id text PRIMARY KEY, parent_id text, directory text NOT NULL, "
            "permission text, time_created integer);"
            "CREATE TABLE message (id text PRIMARY KEY, session_id text, time_created integer, data text);"
            "CREATE TABLE part (id text PRIMARY KEY, message_id text, session_id text, data text);"
        )
        self.clock = 1_790_000_000_000
        self.count = 0

    def session(self, session_id: str, *, directory: str = PROJECT, parent: str | None = None, permission=None):
        self.db.execute("INSERT INTO session VALUES (?, ?, ?, ?, ?)", (session_id, parent, directory, permission, 0))
        self.db.commit()

    def message(self, session_id: str, role: str, *parts: dict | str, raw: str | None = None, **fields) -> str:
        self.count += 1
        self.clock += 1000
        message_id = f"msg_{self.count:04d}"
        data = raw if raw is not None else json.dumps({"role": role, **fields})
        self.db.execute("INSERT INTO message VALUES (?, ?, ?, ?)", (message_id, session_id, self.clock, data))
        for index, part in enumerate(parts):
            body = part if isinstance(part, str) else json.dumps(part)
            self.db.execute(
                "INSERT INTO part VALUES (?, ?, ?, ?)", (f"prt_{self.count:04d}_{index}", message_id, session_id, body)
            )
        self.db.commit()
        return message_id

    def read(self) -> tuple[dict[str, object], list[str], Counter[str]]:
        skipped: Counter[str] = Counter()
        digests, excluded = read_database(str(self.path), skipped)
        return {d.session_id: d.to_digest() for d in digests}, excluded, skipped


def text(value: str, **fields) -> dict:
    return {"type": "text", "text": value, **fields}


def tool(tool_name: str, **state_input) -> dict:
    return {
        "type": "tool",
        "tool": tool_name,
        "callID": "call_1",
        "state": {"status": "completed", "input": state_input},
    }


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "opencode")


def test_typed_prompts_in_order_with_the_last_text_of_their_turn(store):
    store.session("ses_a")
    store.message("ses_a", "user", text("write the release notes"))
    store.message("ses_a", "assistant", text("Reading first."), tool("read", filePath="/work/acme/NOTES.md"))
    store.message("ses_a", "assistant", text("Here are the notes."))
    store.message("ses_a", "user", text("shorter please"))
    store.message("ses_a", "assistant", text("Short notes."))
    digests, excluded, _ = store.read()
    digest = digests["ses_a"]
    assert digest.user_prompts == ["write the release notes", "shorter please"]
    assert digest.assistant_finals == ["Here are the notes.", "Short notes."]
    assert digest.project == PROJECT
    assert digest.n_assistant_turns == 3
    assert digest.started is not None and digest.ended is not None and digest.started < digest.ended
    assert excluded == []


def test_a_prompt_typed_while_the_agent_works_keeps_the_replies_with_their_turns(store):
    store.session("ses_a")
    first = store.message("ses_a", "user", text("read the notes"))
    store.message("ses_a", "assistant", tool("read", filePath="/work/acme/NOTES.md"), parentID=first)
    second = store.message("ses_a", "user", text("then the changelog"))  # queued: written at once
    store.message("ses_a", "assistant", text("The notes say hi."), parentID=first)
    store.message("ses_a", "assistant", text("Changelog done."), parentID=second)
    store.message("ses_a", "assistant", text("An answer to no message."), parentID="msg_gone")
    digest = store.read()[0]["ses_a"]
    assert digest.user_prompts == ["read the notes", "then the changelog"]
    assert digest.assistant_finals == ["The notes say hi.", "An answer to no message."]
    assert digest.tools_used == ["read"]


def test_tools_skills_and_files_are_noted(store):
    store.session("ses_a")
    store.message("ses_a", "user", text("ship it"))
    store.message(
        "ses_a",
        "assistant",
        tool("skill", name="release-notes"),
        tool("edit", filePath="/work/acme/a.py", oldString="x", newString="y"),
        tool("apply_patch", patchText="*** Begin Patch\n*** Update File: b.py\n@@\n-x\n+y\n*** End Patch"),
        {"type": "patch", "hash": "abc", "files": ["/work/acme/c.py"]},
        tool("read", filePath="/work/acme/not-touched.py"),
    )
    digest = store.read()[0]["ses_a"]
    assert digest.tools_used == ["skill", "edit", "apply_patch", "read"]
    assert digest.skills_used == ["release-notes"]
    assert digest.files_touched == ["/work/acme/a.py", "b.py", "/work/acme/c.py"]


def test_synthetic_text_attachments_and_compactions_are_not_prompts(store):
    store.session("ses_a")
    store.message(
        "ses_a",
        "user",
        text("look at @notes.md"),
        {"type": "file", "filename": "notes.md", "url": "file:///work/acme/notes.md", "mime": "text/plain"},
        text("Called the Read tool with the following input: notes.md", synthetic=True),
        text("draft text the user turned off", ignored=True),
    )
    store.message("ses_a", "assistant", text("Looked."))
    store.message("ses_a", "user", {"type": "compaction", "auto": True})
    store.message("ses_a", "assistant", text("Summary of the session so far."), summary=True)
    store.message("ses_a", "assistant", text("A reply outside any typed turn."))
    store.message("ses_a", "user", text("Called the Read tool", synthetic=True))
    store.message("ses_a", "assistant", text("Answering the harness."))
    store.message("ses_a", "user", text("now the changelog"))
    store.message("ses_a", "assistant", text("Changelog done."))
    digest = store.read()[0]["ses_a"]
    assert digest.user_prompts == ["look at @notes.md", "now the changelog"]
    assert digest.assistant_finals == ["Looked.", "Changelog done."]


def test_subagent_headless_and_replay_sessions_are_left_out(store):
    store.session("ses_main")
    store.message("ses_main", "user", text("delegate the count"))
    store.message("ses_main", "assistant", tool("task", description="Count", prompt="count", subagent_type="general"))
    store.session("ses_child", parent="ses_main", permission='[{"permission":"task","pattern":"*","action":"deny"}]')
    store.message("ses_child", "user", text("count"))
    store.session("ses_run", permission=RUN_RULES)
    store.message("ses_run", "user", text('"a headless question"'))
    store.session("ses_replay", directory="/tmp/skillopt-sleep-replay-123")
    store.message("ses_replay", "user", text("a replayed task"))
    digests, excluded, skipped = store.read()
    assert set(digests) == {"ses_main"}
    assert sorted(excluded) == ["ses_child", "ses_replay", "ses_run"]
    assert skipped == Counter({"subagent_thread": 1, "headless_session": 1, "own_replay": 1})


@pytest.mark.parametrize(
    ("permission", "headless"),
    [
        (RUN_RULES, True),
        (None, False),
        ("[]", False),
        ('[{"permission":"task","pattern":"*","action":"deny"}]', False),
        ('[{"permission":"question","pattern":"*","action":"allow"},{"permission":"plan_exit"}]', False),
        ("not json plan_exit", False),
        ('{"plan_exit": 1}', False),
    ],
)
def test_only_the_run_commands_rules_mark_a_headless_session(permission, headless):
    assert is_headless(permission) is headless


def test_a_complaint_and_praise_become_feedback_on_the_previous_turn(store):
    store.session("ses_a")
    store.message("ses_a", "user", text("write the commit message"))
    store.message("ses_a", "assistant", text("feat: retry uploads"))
    store.message("ses_a", "user", text("no — you forgot the ticket number again"))
    store.message("ses_a", "assistant", text("feat: retry uploads (ACME-42)"))
    store.message("ses_a", "user", text("thanks, that works"))
    digest = store.read()[0]["ses_a"]
    assert [(f.polarity, f.prompt_index) for f in digest.feedback] == [("negative", 0), ("positive", 1)]


def test_secrets_are_redacted_and_huge_text_is_clipped(store):
    token = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
    store.session("ses_a")
    store.message("ses_a", "user", text(f"use this token {token} for the deploy"))
    store.message("ses_a", "assistant", text(f"Using {token}."))
    store.message("ses_a", "user", text("word " * 200_000))
    store.message("ses_a", "assistant", text("x" * 100_000))
    digest = store.read()[0]["ses_a"]
    assert token not in json.dumps(digest.to_dict())
    assert "[REDACTED" in digest.user_prompts[0]
    assert len(digest.user_prompts[1]) <= MAX_PROMPT_CHARS + 2
    assert len(digest.assistant_finals[1]) <= 2002


def test_malformed_rows_are_counted_never_raised(store):
    store.session("ses_a")
    store.message("ses_a", "user", text("first prompt"))
    store.message("ses_a", "assistant", '{"type": "text", "text": "cut off', text("Reply."))
    store.message("ses_a", "assistant", {"type": "tool", "tool": None}, {"type": "patch", "files": "not-a-list"})
    store.message("ses_a", "user", raw='{"role": "user", "time": ')  # truncated JSON
    store.message("ses_a", "user", raw='["not", "an", "object"]')
    store.message("ses_a", "user", raw='{"role": 7}')
    store.message("ses_a", "user", {"type": "text", "text": 42}, {"type": "tool", "tool": ["x"]})
    store.message("ses_a", "user", text("second prompt"))
    store.db.execute("INSERT INTO session VALUES ('ses_b', NULL, ?, NULL, 0)", (b"\x00\xff",))  # a blob, not text
    store.db.commit()
    digests, excluded, skipped = store.read()
    assert digests["ses_a"].user_prompts == ["first prompt", "second prompt"]
    assert digests["ses_a"].assistant_finals == ["Reply.", ""]
    assert excluded == ["ses_b"]
    assert skipped["malformed_json"] == 2
    # the array's role, role 7, text 42, tool null, files a string, the blob directory
    assert skipped["wrong_field_type"] == 6


def test_a_database_of_another_shape_is_counted_and_gives_nothing(tmp_path):
    path = tmp_path / "opencode.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE session (id text, title text)")
    db.commit()
    db.close()
    skipped: Counter[str] = Counter()
    assert read_database(str(path), skipped) == ([], [])
    assert skipped == Counter({"unknown_schema": 1})


def test_views_are_not_read_and_a_query_past_the_deadline_stops(tmp_path, monkeypatch):
    path = tmp_path / "opencode.db"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE VIEW session AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
        "SELECT 'ses_' || i AS id, '/work' AS directory FROM n;"
        "CREATE TABLE message (id text, session_id text, time_created integer, data text);"
        "CREATE TABLE part (id text, message_id text, data text);"
    )
    db.close()
    skipped: Counter[str] = Counter()
    assert read_database(str(path), skipped) == ([], [])
    assert skipped == Counter({"unknown_schema": 1})
    monkeypatch.setattr("skillopt_sleep.sources.opencode.MAX_READ_SECONDS", 0.5)
    with snapshot(str(path)) as connection, pytest.raises(sqlite3.OperationalError):
        connection.execute("SELECT count(*) FROM session").fetchall()


def test_rows_still_in_the_write_ahead_log_are_read_and_nothing_is_written_beside_it(store):
    store.session("ses_a")
    store.message("ses_a", "user", text("only in the log"))
    wal = Path(f"{store.path}-wal")
    assert wal.stat().st_size > 0  # the writer is still open: nothing was checkpointed
    before = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in store.path.parent.iterdir()}
    digests, _, _ = store.read()
    assert digests["ses_a"].user_prompts == ["only in the log"]
    after = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in store.path.parent.iterdir()}
    assert after == before


def test_the_harvest_reads_the_database_again_when_its_log_grows(store, tmp_path):
    store.session("ses_a")
    store.message("ses_a", "user", text("first prompt"))
    state = tmp_path / "state"
    homes = {"opencode": store.path.parent}
    first = harvest(PROJECT, source="opencode", homes=homes, state_dir=state)
    first.commit()
    assert [d.user_prompts for d in first.digests] == [["first prompt"]]
    again = harvest(PROJECT, source="opencode", homes=homes, state_dir=state)
    assert again.files_read == 0
    store.message("ses_a", "user", text("second prompt"))
    store.session("ses_run", permission=RUN_RULES)
    store.message("ses_run", "user", text("headless"))
    later = harvest(PROJECT, source="opencode", homes=homes, state_dir=state)
    assert later.files_read == 1
    assert [d.user_prompts for d in later.digests] == [["first prompt", "second prompt"]]
    assert harvest("/somewhere/else", source="opencode", homes=homes).digests == []


def counted_copies(monkeypatch, after_copy=None) -> list[str]:
    """The files ``snapshot`` copies from, in order; ``after_copy(source)`` runs after each copy."""
    copies: list[str] = []
    copy = opencode._copy

    def counting(source: str, target: str, limit: int) -> None:
        copy(source, target, limit)
        copies.append(source)
        if after_copy is not None:
            after_copy(source)

    monkeypatch.setattr(opencode, "_copy", counting)
    return copies


def prompts(path: Path) -> list[str]:
    with snapshot(str(path)) as connection:
        return [json.loads(row[0])["text"] for row in connection.execute("SELECT data FROM part ORDER BY id")]


def test_an_unchanged_database_is_copied_once_and_any_change_copies_it_again(store, monkeypatch):
    copies = counted_copies(monkeypatch)
    store.session("ses_a")
    store.message("ses_a", "user", text("first"))
    assert prompts(store.path) == ["first"]
    assert copies == [f"{store.path}-wal", str(store.path)]
    assert prompts(store.path) == ["first"] and store.read()[0]["ses_a"].user_prompts == ["first"]
    assert len(copies) == 2
    store.message("ses_a", "user", text("in the log"))
    assert prompts(store.path) == ["first", "in the log"]
    assert len(copies) == 4
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.message("ses_a", "user", text("after a checkpoint"))
    assert prompts(store.path) == ["first", "in the log", "after a checkpoint"]
    assert len(copies) == 6


def test_a_database_without_a_log_is_copied_again_when_it_changes(tmp_path, monkeypatch):
    copies = counted_copies(monkeypatch)
    path = tmp_path / "opencode.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE part (id text, data text)")
    db.execute("INSERT INTO part VALUES ('1', ?)", (json.dumps(text("one")),))
    db.commit()
    assert prompts(path) == prompts(path) == ["one"]
    assert copies == [str(path)]
    db.execute("INSERT INTO part VALUES ('2', ?)", (json.dumps(text("two")),))
    db.commit()
    db.close()
    assert prompts(path) == ["one", "two"]
    assert copies == [str(path)] * 2


def test_a_write_during_the_copy_is_never_read_stale(store, monkeypatch):
    store.session("ses_a")
    store.message("ses_a", "user", text("first"))
    writes = iter([lambda: store.message("ses_a", "user", text("during the copy"))])

    def write_once_after_the_log(source: str) -> None:
        if source.endswith("-wal"):
            next(writes, lambda: None)()

    copies = counted_copies(monkeypatch, write_once_after_the_log)
    assert prompts(store.path) == ["first"]  # the log was copied before the row was written
    assert prompts(store.path) == ["first", "during the copy"]
    assert len(copies) == 4


def test_a_database_that_changes_during_the_copy_is_copied_again(store, monkeypatch):
    store.session("ses_a")
    store.message("ses_a", "user", text("first"))
    checkpoints = iter([lambda: store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")])

    def checkpoint_once(source: str) -> None:
        if not source.endswith("-wal"):
            next(checkpoints, lambda: None)()

    copies = counted_copies(monkeypatch, checkpoint_once)
    assert prompts(store.path) == ["first"]
    assert len(copies) == 4
    assert prompts(store.path) == ["first"]
    assert len(copies) == 4


def copy_read_from(path: str) -> tuple[str, bool]:
    """The private copy a snapshot of ``path`` read, and whether it still exists after the read."""
    with snapshot(path) as connection:
        copy = connection.execute("PRAGMA database_list").fetchone()[2]
    return copy, os.path.exists(copy)


def test_a_pool_worker_keeps_no_copy_and_the_main_process_keeps_one(store):
    store.session("ses_a")
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        copy, kept = pool.submit(copy_read_from, str(store.path)).result()
    assert Path(copy).parent.name.startswith("skillopt-opencode-") and not kept
    assert not Path(copy).parent.exists()  # removed with the read: the worker ends without cleanup
    copy, kept = copy_read_from(str(store.path))
    assert kept and (Path(copy).parent.stat().st_mode & 0o777) == 0o700


def test_a_file_that_is_not_a_database_is_counted_unreadable(tmp_path):
    home = tmp_path / "opencode"
    home.mkdir()
    (home / "opencode.db").write_bytes(b"not a database at all" * 100)
    result = harvest(PROJECT, source="opencode", homes={"opencode": home})
    assert result.digests == []
    assert result.skipped.get("unreadable_file") == 1


def test_discovery_finds_the_database_of_each_channel(tmp_path):
    home = tmp_path / "opencode"
    home.mkdir()
    for name in ("opencode.db", "opencode-dev.db", "opencode.db-wal", "opencode.db-shm", "auth.json", "other.db"):
        (home / name).write_bytes(b"")
    (home / "storage").mkdir()
    found = [p.name for p in OpenCodeSource().discover(home, Counter())]
    assert found == ["opencode-dev.db", "opencode.db"]
    assert list(OpenCodeSource().discover(tmp_path / "missing", Counter())) == []


def test_the_source_is_registered_and_its_home_follows_xdg(monkeypatch, tmp_path):
    assert isinstance(SOURCES["opencode"], OpenCodeSource)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert SOURCES["opencode"].default_home() == tmp_path / "opencode"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert SOURCES["opencode"].default_home() == tmp_path / ".local" / "share" / "opencode"


def test_head_cwds_names_only_main_interactive_sessions(store):
    store.session("ses_a", directory="/work/one")
    store.session("ses_run", directory="/work/two", permission=RUN_RULES)
    store.session("ses_child", directory="/work/three", parent="ses_a")
    assert OpenCodeSource().head_cwds(store.path) == {"/work/one"}


# -- the database the real CLI wrote ------------------------------------------------------------


@pytest.fixture(scope="module")
def real_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("opencode-real") / "opencode"
    home.mkdir()
    packed = REAL / (TRUTH["database"] + ".gz")
    (home / "opencode.db").write_bytes(gzip.decompress(packed.read_bytes()))
    return home


@pytest.fixture(scope="module")
def real_digests(real_home: Path) -> dict[str, object]:
    result = harvest(TRUTH["project"], source="opencode", homes={"opencode": real_home})
    return {d.session_id: d for d in result.digests}


@pytest.fixture(scope="module")
def planted_secret(real_home: Path) -> str:
    """The secret the recorder pasted: found in the database, known by its hash."""
    data = (real_home / "opencode.db").read_bytes().decode("utf-8", "replace")
    [secret] = {s for s in re.findall(r"ghp_[A-Za-z0-9]{36}", data) if _sha(s) == TRUTH["secret_sha256"]}
    return secret


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def real_sessions(kind: str) -> list[str]:
    return sorted(key for key, facts in TRUTH["sessions"].items() if facts["kind"] == kind)


def test_the_real_database_was_written_by_the_pinned_cli_and_covers_every_kind():
    from tests.support.agent_clis import pinned

    assert (TRUTH["package"], TRUTH["version"]) == pinned()["opencode"]
    assert {facts["kind"] for facts in TRUTH["sessions"].values()} == {"interactive", "headless", "subagent"}


def test_only_the_real_interactive_sessions_are_harvested(real_digests):
    assert set(real_digests) == set(real_sessions("interactive"))


@pytest.mark.parametrize("key", real_sessions("interactive"))
def test_real_typed_prompts_once_each_in_order(real_digests, planted_secret, key):
    facts = TRUTH["sessions"][key]
    # turns `opencode run --session` appended carry no mark in the store: they are counted too
    expected = [p.replace("{SECRET}", planted_secret) for p in facts["typed"] + facts.get("headless_turns", [])]
    digest = real_digests[key]
    assert digest.user_prompts == [clip(p, MAX_PROMPT_CHARS) for p in expected]
    assert digest.n_user_turns == len(expected)


@pytest.mark.parametrize("key", real_sessions("interactive"))
def test_real_replies_paired_and_the_secret_nowhere(real_digests, planted_secret, key):
    digest = real_digests[key]
    text = json.dumps(digest.to_dict())
    assert planted_secret not in text
    assert planted_secret[4:20] not in text
    for injected in ("USER-AGENTS-MD-MARKER", "## Testing", "SUMMARY:", "executed by the user", "ls src"):
        assert injected not in text, injected
    assert len(digest.assistant_finals) == len(digest.user_prompts)
    for prompt, reply in zip(digest.user_prompts, digest.assistant_finals, strict=True):
        if reply.startswith("Done: "):
            assert (
                reply.split("[REDACTED")[0]
                == clip("Done: " + " ".join(prompt.split())[:80], 2000).split("[REDACTED")[0]
            )
        else:  # a turn that used a tool ends with the text after the tool came back
            assert reply == "Tool finished.", (prompt, reply)


def test_real_tools_files_and_feedback(real_digests):
    by_first = {d.user_prompts[0]: d for d in real_digests.values()}
    first = by_first["write the release notes for v1.2"]
    second = by_first["add a changelog entry for the retry fix"]
    assert first.tools_used == ["read"]
    assert [(f.polarity, f.prompt_index) for f in first.feedback] == [("negative", 1)]
    # the `!ls src` the person ran is not the model's tool; "shorter" after /compact is a complaint
    assert second.tools_used == ["write", "task"]
    assert second.files_touched == [TRUTH["project"] + "/CHANGELOG.md"]
    assert [(f.polarity, f.prompt_index) for f in second.feedback] == [("positive", 1), ("negative", 2)]
    assert all(d.project == TRUTH["project"] for d in real_digests.values())


def test_the_real_database_names_the_project_for_available_sources(real_home):
    from skillopt_sleep.sources import available_sources

    assert "opencode" in available_sources(TRUTH["project"], homes={"opencode": real_home})
    assert "opencode" not in available_sources("/elsewhere", homes={"opencode": real_home})


def test_reading_the_real_database_leaves_its_directory_as_it_was(real_home):
    before = sorted(os.listdir(real_home))
    harvest(TRUTH["project"], source="opencode", homes={"opencode": real_home})
    assert sorted(os.listdir(real_home)) == before
