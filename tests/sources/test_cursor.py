"""Cursor's chat stores, built by hand to the documented format (``tests/fixtures/documented/cursor``,
``docs/agents/cursor.md``): conversations and their messages, the workspace each belongs to, the
exact harvest of the fixture stores, and hostile input."""

from __future__ import annotations

import json
import os
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from skillopt_sleep.sources import harvest, opencode
from skillopt_sleep.sources.cursor import CursorSource, read_store
from tests.support.cursor_store import CURSOR_ROWS, write_cursor_home, write_store

PROJECT = "/work/demo-app"
SECRET = "ghp_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"
AGENT = "3f1e2d4c-5b6a-4798-8a0b-1c2d3e4f5a6b"  # headers + bubble rows, a complaint, tools
INLINE = "6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d"  # the older inline ``conversation``
OTHER = "8e9f0a1b-2c3d-4e5f-a6b7-c8d9e0f1a2b3"  # /work/other-project
SUB = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"  # started by AGENT (subComposerIds)


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    return write_cursor_home(tmp_path / "User")


def run(user_dir: Path, project: str | None = PROJECT, **kwargs: Any):
    return harvest(project, source="cursor", homes={"cursor": user_dir}, **kwargs)


def rows(*conversations: tuple[str, dict[str, Any], list[dict[str, Any]]], folder: str = PROJECT) -> dict[str, Any]:
    """Stores holding ``(composer id, composer fields, bubbles)``, all listed by one workspace."""
    kv: dict[str, Any] = {}
    for composer_id, fields, bubbles in conversations:
        headers = []
        for index, bubble in enumerate(bubbles):
            bubble_id = bubble.get("bubbleId", f"b{index}")
            headers.append({"bubbleId": bubble_id, "type": bubble.get("type")})
            kv[f"bubbleId:{composer_id}:{bubble_id}"] = bubble.get("raw", bubble)
        kv[f"composerData:{composer_id}"] = {
            "composerId": composer_id,
            "fullConversationHeadersOnly": headers,
            **fields,
        }
    listed = [{"composerId": c} for c, _, _ in conversations]
    return {
        "globalStorage": {"cursorDiskKV": kv},
        "workspaceStorage": {
            "ws1": {
                "workspace.json": {"folder": "file://" + folder},
                "ItemTable": {"composer.composerData": {"allComposers": listed}},
            }
        },
    }


def user(text: Any, **fields: Any) -> dict[str, Any]:
    return {"type": 1, "text": text, **fields}


def assistant(text: Any = "", **fields: Any) -> dict[str, Any]:
    return {"type": 2, "text": text, **fields}


def read(user_dir: Path) -> tuple[dict[str, Any], list[str], Counter[str]]:
    skipped: Counter[str] = Counter()
    digests, excluded = read_store(str(user_dir / "globalStorage" / "state.vscdb"), skipped)
    return {d.session_id: d.to_digest() for d in digests}, excluded, skipped


# -- the exact harvest of the fixture --------------------------------------------------------------


def test_the_fixture_harvest_exactly(user_dir):
    result = run(user_dir)
    by_id = {d.session_id: d for d in result.digests}
    assert list(by_id) == [INLINE, AGENT]  # by start; the other project and the sub-conversation are out
    agent, inline = by_id[AGENT], by_id[INLINE]
    assert agent.user_prompts == [
        "Write the commit message for the staged changes; push with [REDACTED:github_token]",
        "No, that's wrong: the subject line must stay under 50 characters",
    ]
    assert agent.assistant_finals == [
        "feat(parser): accept trailing commas\n\nThe token is [REDACTED:github_token]",
        "feat(parser): allow trailing commas",
    ]
    assert agent.project == PROJECT and agent.source == "cursor"
    assert agent.tools_used == ["run_terminal_cmd", "edit_file"] and agent.files_touched == ["CHANGELOG.md"]
    assert [(f.polarity, f.prompt_index) for f in agent.feedback] == [("negative", 0)]
    assert (agent.n_user_turns, agent.n_assistant_turns) == (2, 4)
    assert agent.started is not None and agent.started.isoformat() == "2026-09-21T10:00:00+00:00"
    assert agent.ended is not None and agent.ended.isoformat() == "2026-09-21T10:01:06+00:00"
    assert inline.user_prompts == ["Summarize the open PR"]
    assert inline.assistant_finals == ["The PR adds trailing comma support."]
    assert result.skipped == {"subagent_thread": 1}


def test_the_secret_and_the_attached_context_reach_no_digest_field(user_dir):
    text = json.dumps([d.to_dict() for d in run(user_dir, None).digests])
    assert SECRET not in text
    for planted in ("RULE TEXT", "TOOL OUTPUT", "THINKING TEXT", "CODE", "SUBAGENT", "dev@example.com"):
        assert planted not in text


def test_each_conversation_takes_the_folder_of_the_workspace_that_lists_it(user_dir):
    assert {d.session_id: d.project for d in run(user_dir, None).digests} == {
        AGENT: PROJECT,
        INLINE: PROJECT,
        OTHER: "/work/other-project",  # listed by an index in its array form
    }
    assert [d.session_id for d in run(user_dir, "/work/other-project").digests] == [OTHER]
    assert CursorSource().head_cwds(user_dir / "globalStorage" / "state.vscdb") == {PROJECT, "/work/other-project"}


def test_the_store_is_read_again_when_it_changes(user_dir, tmp_path):
    state = tmp_path / "state"
    run(user_dir, state_dir=state).commit()
    assert run(user_dir, state_dir=state).files_read == 0
    fixture = json.loads(CURSOR_ROWS.read_text())
    kv = fixture["globalStorage"]["cursorDiskKV"]
    composer = kv[f"composerData:{INLINE}"]
    composer["conversation"].append({"type": 1, "text": "and the release notes"})
    write_store(user_dir / "globalStorage" / "state.vscdb", {"cursorDiskKV": {f"composerData:{INLINE}": composer}})
    again = {d.session_id: d for d in run(user_dir, state_dir=state).digests}
    assert again[INLINE].user_prompts == ["Summarize the open PR", "and the release notes"]
    assert len(again[AGENT].user_prompts) == 2


def test_only_a_changed_store_is_copied_again(user_dir, tmp_path, monkeypatch):
    copies: list[str] = []
    copy = opencode._copy

    def counting(source: str, target: str, limit: int) -> None:
        copy(source, target, limit)
        copies.append(source)

    monkeypatch.setattr(opencode, "_copy", counting)
    global_store = str(user_dir / "globalStorage" / "state.vscdb")
    workspaces = sorted(str(p) for p in (user_dir / "workspaceStorage").glob("*/state.vscdb"))
    assert workspaces
    read(user_dir)
    assert sorted(copies) == sorted([global_store, *workspaces])
    copies.clear()
    run(user_dir, state_dir=tmp_path / "state")
    assert copies == []
    composer = json.loads(CURSOR_ROWS.read_text())["globalStorage"]["cursorDiskKV"][f"composerData:{INLINE}"]
    composer["conversation"].append({"type": 1, "text": "and the release notes"})
    write_store(user_dir / "globalStorage" / "state.vscdb", {"cursorDiskKV": {f"composerData:{INLINE}": composer}})
    digests, _, _ = read(user_dir)
    assert copies == [global_store]
    assert digests[INLINE].user_prompts == ["Summarize the open PR", "and the release notes"]


def test_the_stores_are_never_written(user_dir):
    store = user_dir / "globalStorage" / "state.vscdb"
    before = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in user_dir.rglob("*") if p.is_file()}
    run(user_dir, None)
    after = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in user_dir.rglob("*") if p.is_file()}
    assert before == after and not Path(f"{store}-shm").exists()


# -- rules on small stores ------------------------------------------------------------------------


def test_a_message_that_is_only_context_is_no_prompt_and_a_wrapped_one_is(tmp_path):
    user_dir = write_cursor_home(
        tmp_path,
        rows(
            (
                "c1",
                {},
                [
                    user("<attached_files>\nsrc/a.py\n</attached_files>"),
                    assistant("NOT PAIRED"),
                    user("<user_info>OS linux</user_info>\n<user_query>\nrename the flag\n</user_query>"),
                    assistant("Renamed."),
                    user(""),
                ],
            )
        ),
    )
    digests, _, skipped = read(user_dir)
    assert digests["c1"].user_prompts == ["rename the flag"] and digests["c1"].assistant_finals == ["Renamed."]
    assert skipped == {"injected_context": 1}


def test_the_last_text_of_a_turn_is_its_reply_and_tool_steps_name_files(tmp_path):
    steps = [
        user("fix it"),
        assistant("Let me look."),
        assistant(toolFormerData={"name": "read_file", "params": json.dumps({"target_file": "src/a.py"})}),
        assistant(toolFormerData={"name": "search_replace", "params": {"file_path": "/abs/b.py"}}),
        assistant(toolFormerData={"name": "codebase_search", "rawArgs": "not json"}),
        assistant("Fixed."),
    ]
    user_dir = write_cursor_home(tmp_path, rows(("c1", {}, steps)))
    [digest] = read(user_dir)[0].values()
    assert digest.assistant_finals == ["Fixed."]
    assert digest.tools_used == ["read_file", "search_replace", "codebase_search"]
    assert digest.files_touched == ["src/a.py", "/abs/b.py"]


def test_sub_conversations_and_replay_dirs_are_left_out(tmp_path):
    user_dir = write_cursor_home(
        tmp_path / "a",
        rows(
            ("parent", {"subComposerIds": ["child"]}, [user("go")]),
            ("child", {}, [user("SUBAGENT")]),
            ("best", {"isBestOfNSubcomposer": True}, [user("SUBAGENT too")]),
        ),
    )
    digests, excluded, skipped = read(user_dir)
    assert list(digests) == ["parent"] and sorted(excluded) == ["best", "child"]
    replay = write_cursor_home(tmp_path / "b", rows(("r", {}, [user("x")]), folder="/tmp/skillopt-sleep-replay-1"))
    assert read(replay)[:2] == ({}, ["r"])


def test_a_conversation_no_workspace_lists_has_no_project(tmp_path):
    store = rows(("c1", {}, [user("hello")]))
    store["workspaceStorage"] = {}
    user_dir = write_cursor_home(tmp_path, store)
    assert read(user_dir)[0]["c1"].project == ""
    assert run(user_dir).digests == [] and [d.session_id for d in run(user_dir, None).digests] == ["c1"]


# -- hostile input ----------------------------------------------------------------------------


def test_hostile_rows_are_skipped_and_counted_never_raised(tmp_path):
    store = rows(
        (
            "c1",
            {},
            [
                user("kept"),
                {"type": 2, "raw": b"not json"},
                {"type": 2, "raw": "[" * 100_000},
                {"type": 1, "raw": "[1]"},
                user(7),
                {"type": 9, "text": "what"},
                assistant("reply"),
            ],
        )
    )
    kv = store["globalStorage"]["cursorDiskKV"]
    kv["composerData:c1"]["fullConversationHeadersOnly"] += [{"bubbleId": "gone", "type": 1}, {"bubbleId": 5}, "x"]
    kv["composerData:bad"] = b"\xff\xfe"
    kv["composerData:list"] = "[]"
    kv["composerData:weird"] = {"conversation": ["x", {"type": 1, "text": "inline kept"}]}
    store["workspaceStorage"]["ws1"]["ItemTable"]["composer.composerData"]["allComposers"] += ["x", {"composerId": 5}]
    user_dir = write_cursor_home(tmp_path, store)
    digests, excluded, skipped = read(user_dir)
    assert digests["c1"].user_prompts == ["kept"] and digests["c1"].assistant_finals == ["reply"]
    assert digests["weird"].user_prompts == ["inline kept"] and excluded == []
    assert skipped == {
        "malformed_json": 2,
        "not_object": 2,
        "bad_utf8": 1,
        "wrong_field_type": 5,
        "missing_bubble": 1,
    }


def test_a_store_of_another_shape_or_no_database_is_counted_or_an_error(tmp_path):
    odd = tmp_path / "odd" / "globalStorage" / "state.vscdb"
    odd.parent.mkdir(parents=True)
    db = sqlite3.connect(odd)
    db.execute("CREATE VIEW cursorDiskKV AS SELECT 'composerData:x' AS key, '{}' AS value")
    db.commit()
    db.close()
    skipped: Counter[str] = Counter()
    assert read_store(str(odd), skipped) == ([], []) and skipped == {"unknown_schema": 1}
    junk = tmp_path / "junk" / "globalStorage" / "state.vscdb"
    junk.parent.mkdir(parents=True)
    junk.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    result = run(tmp_path / "junk", None)
    assert result.digests == [] and result.files_read == 0


def test_an_unreadable_workspace_store_is_counted_and_the_rest_read(user_dir):
    workspace = next(p for p in (user_dir / "workspaceStorage").iterdir() if "7d1c" in p.name)
    (workspace / "state.vscdb").write_bytes(b"not a database at all" * 10)
    digests, _, skipped = read(user_dir)
    assert digests[AGENT].project == "" and digests[OTHER].project == "/work/other-project"
    assert skipped["unreadable_file"] == 1


def test_a_fifo_in_place_of_the_store_is_refused(tmp_path):
    store = tmp_path / "globalStorage" / "state.vscdb"
    store.parent.mkdir(parents=True)
    os.mkfifo(store)
    result = run(tmp_path, None)
    assert result.skipped == {"not_a_regular_file": 1} and result.digests == []


def test_text_that_is_not_utf8_is_counted_and_the_rest_read(tmp_path):
    conversation = [user("kept", createdAt=1790330400000), assistant("ok"), user("replaced below")]
    user_dir = write_cursor_home(tmp_path, rows(("c1", {}, conversation)))
    db = sqlite3.connect(user_dir / "globalStorage" / "state.vscdb")
    db.execute("INSERT INTO cursorDiskKV VALUES ('bubbleId:c1:b2', CAST(? AS TEXT))", (b'{"type":1,"text":"\xff"}',))
    db.execute("INSERT INTO cursorDiskKV VALUES (CAST(? AS TEXT), '{}')", (b"composerData:\xfe",))
    db.commit()
    db.close()
    digests, _, skipped = read(user_dir)
    assert digests["c1"].user_prompts == ["kept"] and digests["c1"].assistant_finals == ["ok"]
    assert digests["c1"].started is not None and digests["c1"].started.isoformat() == "2026-09-25T10:00:00+00:00"
    assert skipped == {"bad_utf8": 2}
