"""The Cursor CLI's chat stores, built by hand to the described format
(``tests/fixtures/documented/cursor-cli``, ``docs/agents/cursor.md``): the exact harvest of the
fixture chats, which project a chat belongs to, what is left out, and hostile stores."""

from __future__ import annotations

import json
import os
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from skillopt_sleep.cli import main
from skillopt_sleep.sources import available_sources, cursor_cli, harvest
from skillopt_sleep.sources.cursor_cli import CursorCliSource, read_chat, root_fields, workspace_hash
from tests.support.cursor_cli_store import CURSOR_CLI_CHATS, chat_dir, field, write_chat, write_cursor_cli_home

PROJECT = "/work/demo-app"
SECRET = "ghp_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"
BLOB_KEY = "BLOBKEY-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
MAIN = "c0ffee00-1111-4222-8333-444455556666"  # meta.json, context, tools, a repeated prompt, a complaint
OLD = "0ld0ld00-2222-4333-8444-555566667777"  # no meta.json: the workspace from the root blob
HASH_ONLY = "4a5h0n1y-3333-4444-8555-666677778888"  # names no workspace: its directory's hash
SUB = "5ub5ub00-4444-4555-8666-777788889999"  # a sub-agent's chat
OTHER = "07he4000-5555-4666-8777-88889999aaaa"  # /work/other-project


def fixture_chats() -> list[dict[str, Any]]:
    return json.loads(CURSOR_CLI_CHATS.read_text(encoding="utf-8"))["chats"]


@pytest.fixture
def chats(tmp_path: Path) -> Path:
    """The fixture's chats in a Cursor CLI config dir (not ``home``: that is the suite's own)."""
    return write_cursor_cli_home(tmp_path / "cursor")


def run(home: Path, project: str | None = PROJECT, **kwargs: Any):
    return harvest(project, source="cursor-cli", homes={"cursor-cli": home}, **kwargs)


def chat(chat_id: str, messages: list[Any], *, hashed: str = PROJECT, **fields: Any) -> dict[str, Any]:
    """A chat kept in the directory of workspace ``hashed``; ``workspace="file://…"`` names it in the root."""
    meta = {"agentId": chat_id, "name": "New Agent", "createdAt": 1790330400000}
    return {"id": chat_id, "workspace_hash_of": hashed, "meta": meta, "messages": messages, **fields}


def read(path: Path) -> tuple[list[Any], list[str], Counter[str]]:
    skipped: Counter[str] = Counter()
    digests, excluded = read_chat(str(path), skipped)
    return [d.to_digest() for d in digests], excluded, skipped


def store(home: Path, chat_id: str, workspace: str = PROJECT) -> Path:
    return home / "chats" / workspace_hash(workspace) / chat_id / "store.db"


# -- the exact harvest of the fixture --------------------------------------------------------------


def test_the_fixture_harvest_exactly(chats):
    result = run(chats)
    by_id = {d.session_id: d for d in result.digests}
    assert list(by_id) == [OLD, MAIN, HASH_ONLY]  # by start; the sub-agent and the other project are out
    main_chat = by_id[MAIN]
    assert main_chat.user_prompts == [
        "Write the commit message for the staged changes; push with [REDACTED:github_token]",
        "No, that's wrong: the subject line must stay under 50 characters",
    ]
    assert main_chat.assistant_finals == [
        "feat(parser): accept trailing commas in argument lists",
        "feat(parser): allow trailing commas",
    ]
    assert main_chat.source == "cursor-cli" and main_chat.project == PROJECT
    assert main_chat.tools_used == ["Shell", "Edit"] and main_chat.files_touched == ["CHANGELOG.md"]
    assert [(f.polarity, f.prompt_index) for f in main_chat.feedback] == [("negative", 0)]
    assert (main_chat.n_user_turns, main_chat.n_assistant_turns) == (2, 4)
    assert main_chat.started is not None and main_chat.started.isoformat() == "2026-09-21T10:00:00+00:00"
    assert main_chat.ended is not None and main_chat.ended.isoformat() == "2026-09-21T10:05:00+00:00"
    old, hash_only = by_id[OLD], by_id[HASH_ONLY]
    assert old.user_prompts == ["Summarize the open PR"]
    assert old.assistant_finals == ["The PR adds trailing comma support."]
    assert old.ended is not None and old.ended.isoformat() == "2026-09-21T09:02:30+00:00"  # the store's last write
    assert hash_only.user_prompts == ["Add a test for the tokenizer"]
    assert hash_only.tools_used == ["Write"] and hash_only.files_touched == ["tests/test_tokenizer.py"]
    assert result.skipped == {"injected_context": 1, "subagent_thread": 1}
    assert result.files_found == {"cursor-cli": 5}


def test_the_secret_the_blob_key_and_the_injected_context_reach_no_digest_field(chats):
    text = json.dumps([d.to_dict() for d in run(chats, None).digests])
    assert SECRET not in text and BLOB_KEY not in text
    for planted in (
        "SYSTEM PROMPT",
        "RULE TEXT",
        "TOOL OUTPUT",
        "THINKING TEXT",
        "CODE",
        "SUBAGENT",
        "dev@example.com",
    ):
        assert planted not in text


def test_each_chat_takes_its_own_workspace_else_the_one_its_directory_hashes_to(chats):
    assert {d.session_id: d.project for d in run(chats, None).digests} == {
        MAIN: PROJECT,  # meta.json's cwd
        OLD: PROJECT,  # the root blob's file:// URI
        HASH_ONLY: PROJECT,  # a sibling's cwd whose MD5 is the directory's name
        OTHER: "/work/other-project",
    }
    assert [d.session_id for d in run(chats, "/work/other-project").digests] == [OTHER]
    assert workspace_hash(PROJECT) == "f6569f164d2eb9cd5bfbb6b8a03dcdec"
    assert CursorCliSource().head_cwds(store(chats, HASH_ONLY)) == {PROJECT}
    assert CursorCliSource().head_cwds(store(chats, SUB)) == set()
    assert "cursor-cli" in available_sources(PROJECT, homes={"cursor-cli": chats})


def test_a_chat_whose_directory_hashes_to_no_known_workspace_has_no_project(tmp_path):
    home = write_cursor_cli_home(
        tmp_path, [chat("lonely", [{"role": "user", "content": "hi"}], hashed="/work/unknown")]
    )
    (digest,), _, skipped = read(store(home, "lonely", "/work/unknown"))
    assert digest.project == "" and skipped == {"no_workspace_folder": 1}
    sibling = chat("claims", [{"role": "user", "content": "hi"}], hashed="/work/unknown")
    sibling["meta.json"] = {"cwd": "/work/somewhere-else"}  # a cwd that does not hash to the directory
    write_cursor_cli_home(home, [sibling])
    (digest,), _, _ = read(store(home, "lonely", "/work/unknown"))
    assert digest.project == ""


def test_the_store_is_read_again_when_it_changes_and_never_written(chats, tmp_path):
    before = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in chats.rglob("*") if p.is_file()}
    state = tmp_path / "state"
    run(chats, state_dir=state).commit()
    assert run(chats, state_dir=state).files_read == 0
    after = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in chats.rglob("*") if p.is_file()}
    assert before == after and not list(chats.rglob("*-shm"))
    old = next(c for c in fixture_chats() if c["id"] == OLD)
    old["messages"] += [{"role": "user", "content": "and the release notes"}]
    old.pop("mtime")
    write_chat(chat_dir(chats, old) / "store.db", old)
    again = {d.session_id: d for d in run(chats, state_dir=state).digests}
    assert again[OLD].user_prompts == ["Summarize the open PR", "and the release notes"]
    assert len(again[MAIN].user_prompts) == 2


def test_our_own_replay_dirs_are_left_out(tmp_path):
    replay = "/tmp/skillopt-sleep-replay-abc"
    spec = chat("r2", [{"role": "user", "content": "replayed"}], hashed=replay, workspace="file://" + replay)
    write_cursor_cli_home(tmp_path, [spec])
    digests, excluded, skipped = read(store(tmp_path, "r2", replay))
    assert digests == [] and excluded == ["r2"] and skipped["own_replay"] == 1


# -- hostile stores -------------------------------------------------------------------------------


def test_malformed_blobs_are_skipped_and_counted_never_raised(tmp_path):
    messages = [
        {"role": "user", "content": "<user_query>kept</user_query>"},
        b"{not json",
        b"[1, 2]",
        {"role": "user", "content": 42},
        {"role": "robot", "content": "?"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}, "stray"]},
    ]
    write_cursor_cli_home(tmp_path, [chat("m1", messages)])
    path = store(tmp_path, "m1")
    db = sqlite3.connect(path)
    db.execute("DELETE FROM blobs WHERE data = ?", (b"[1, 2]",))
    db.commit()
    db.close()
    (digest,), _, skipped = read(path)
    assert digest.user_prompts == ["kept"] and digest.assistant_finals == ["ok"]
    assert skipped == {
        "malformed_json": 1,
        "missing_blob": 1,
        "wrong_field_type": 3,  # content 42, the role "robot", the stray block
        "no_workspace_folder": 1,
    }


def test_an_oversized_blob_is_never_read(tmp_path, monkeypatch):
    write_cursor_cli_home(
        tmp_path, [chat("big", [{"role": "user", "content": "x" * 500}, {"role": "user", "content": "y"}])]
    )
    monkeypatch.setattr(cursor_cli, "MAX_BLOB_BYTES", 400)
    (digest,), _, skipped = read(store(tmp_path, "big"))
    assert digest.user_prompts == ["y"] and skipped["oversized_blob"] == 1


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("DELETE FROM meta", "no_chat_metadata"),
        ("UPDATE meta SET value = 'zz-not-hex'", "wrong_field_type"),
        ("UPDATE meta SET value = '" + b"[1]".hex() + "'", "not_object"),
        ("UPDATE meta SET value = '" + json.dumps({"latestRootBlobId": "0" * 64}).encode().hex() + "'", "missing_blob"),
        ("DROP TABLE blobs", "unknown_schema"),
        ("DROP TABLE meta; CREATE VIEW meta AS SELECT '0' AS key, '' AS value", "unknown_schema"),
    ],
)
def test_a_store_of_another_shape_is_counted_and_gives_nothing(tmp_path, damage, reason):
    write_cursor_cli_home(tmp_path, [chat("d1", [{"role": "user", "content": "hi"}])])
    path = store(tmp_path, "d1")
    db = sqlite3.connect(path)
    db.executescript(damage)
    db.close()
    digests, _, skipped = read(path)
    assert skipped[reason] == 1
    assert digests == [] or digests[0].user_prompts == []


def test_a_root_blob_that_is_not_protobuf_is_counted(tmp_path):
    assert root_fields(field(1, bytes(32)) + field(9, b"file:///w")) == (["00" * 32], "file:///w")
    for broken in (b"\x0a\x20short", b"\x0f", b"\x08\xff"):
        with pytest.raises(ValueError):
            root_fields(broken)
    write_cursor_cli_home(tmp_path, [chat("p1", [])])
    path = store(tmp_path, "p1")
    db = sqlite3.connect(path)
    db.execute("UPDATE blobs SET data = ?", (b"\x0f\x0f",))
    db.commit()
    db.close()
    digests, _, skipped = read(path)
    assert skipped["malformed_blob"] == 1 and digests == []


def test_a_file_that_is_no_database_is_an_error_of_that_file_only(chats):
    store(chats, OLD).write_bytes(b"not a database at all" * 10)
    result = run(chats)
    assert [d.session_id for d in result.digests] == [MAIN, HASH_ONLY]
    assert result.skipped["unreadable_file"] == 1


def test_a_symlinked_or_special_store_is_refused(chats, tmp_path):
    target = store(chats, OLD)
    moved = tmp_path / "elsewhere.db"
    target.rename(moved)
    target.symlink_to(moved)
    hash_only = store(chats, HASH_ONLY)
    hash_only.unlink()
    os.mkfifo(hash_only)
    result = run(chats)
    assert [d.session_id for d in result.digests] == [MAIN]
    assert result.skipped == {"injected_context": 1, "not_a_regular_file": 2, "subagent_thread": 1}
    with pytest.raises(OSError):
        read_chat(str(target), Counter())


# -- the commands name the agent ------------------------------------------------------------------


def project_home(tmp_path: Path) -> tuple[Path, Path]:
    """The fixture's chats, moved to a project directory that exists."""
    project = tmp_path / "demo-app"
    project.mkdir()
    chats = fixture_chats()
    for spec in chats:
        if spec["workspace_hash_of"] == PROJECT:
            spec["workspace_hash_of"] = str(project)
            if "meta.json" in spec:
                spec["meta.json"]["cwd"] = str(project)
            if "workspace" in spec:
                spec["workspace"] = "file://" + str(project)
    return project, write_cursor_cli_home(tmp_path / "cursor", chats)


def test_harvest_names_the_cursor_cli_and_its_sessions(tmp_path, capsys):
    project, home = project_home(tmp_path)
    args = ["harvest", "--project", str(project), "--source", "cursor-cli", "--cursor-cli-home", str(home)]
    assert main([*args, "--json", "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["session_id"] for s in data["sessions"]] == [OLD, MAIN, HASH_ONLY]
    assert {s["source"] for s in data["sessions"]} == {"cursor-cli"}
    assert main([*args, "--quiet"]) == 0
    assert "3 session(s) from cursor-cli" in capsys.readouterr().out


def test_status_says_the_night_read_the_cursor_cli(tmp_path):
    from skillopt_sleep.commands import status as status_cmd
    from skillopt_sleep.config import Config
    from skillopt_sleep.night import NightOptions, run_night

    project, home = project_home(tmp_path)
    config = Config(backend="sim:seed=1", source="cursor-cli", cursor_cli_home=str(home))
    report = run_night(NightOptions(project=project, config=config, mode="run"))
    assert report.agents == {"cursor-cli": 3}
    status = status_cmd.format_status(status_cmd.collect_status(project))
    assert "sessions the last night read: Cursor CLI 3" in status
