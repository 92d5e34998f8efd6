"""The harvest (sources/harvester.py): incremental — checkpoints, digest cache, commit semantics —
and hostile transcript files that get a clear outcome and lose nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.harvest import (
    CLAUDE_BACKEND,
    CLAUDE_MAIN,
    CODEX_MAIN,
    PROJECT,
    append_records,
    by_id,
    claude_assistant,
    claude_file,
    claude_user,
    codex_file,
)

from skillopt_sleep.sources import harvest
from skillopt_sleep.sources.store import CHECKPOINTS_FILE, DIGESTS_DIR


def run(homes, state_dir, **kw):
    kw.setdefault("source", "all")
    return harvest(PROJECT, claude_home=homes[0], codex_home=homes[1], state_dir=state_dir, **kw)


def night(homes, state_dir, **kw):
    result = run(homes, state_dir, **kw)
    result.commit()
    return result


def summary(result):
    return {
        d.session_id: (d.user_prompts, d.assistant_finals, d.n_user_turns, d.n_assistant_turns) for d in result.digests
    }


def test_second_night_reads_nothing_when_nothing_changed(homes, tmp_path):
    state = tmp_path / "state"
    first = night(homes, state)
    assert first.files_read > 0 and first.bytes_read > 0
    second = run(homes, state)
    assert second.files_read == 0 and second.bytes_read == 0
    assert second.new_session_ids == set()
    assert summary(second) == summary(first)


def test_only_appended_bytes_are_read_and_merged(homes, tmp_path):
    state = tmp_path / "state"
    first = night(homes, state)
    path = claude_file(homes[0], CLAUDE_MAIN)
    appended = append_records(
        path,
        claude_user("Write the commit message for the docs change"),
        claude_assistant("msg_N1", "docs: explain token refresh"),
        claude_user("thanks", ts="2026-11-22T10:01:00.000Z"),
    )
    second = run(homes, state)
    assert second.bytes_read == appended and second.files_read == 1
    assert second.new_session_ids == {CLAUDE_MAIN}
    before, after = by_id(first)[CLAUDE_MAIN], by_id(second)[CLAUDE_MAIN]
    assert after.user_prompts == before.user_prompts + ["Write the commit message for the docs change", "thanks"]
    assert after.n_user_turns == before.n_user_turns + 2
    assert after.n_assistant_turns == before.n_assistant_turns + 1
    # feedback index is absolute: it points at the prompt appended in this same harvest
    assert (after.feedback[-1].polarity, after.feedback[-1].prompt_index) == ("positive", len(before.user_prompts))
    assert after.ended > before.ended and after.started == before.started
    # the incremental result equals a fresh full read
    assert summary(second)[CLAUDE_MAIN] == summary(run(homes, None))[CLAUDE_MAIN]


def test_feedback_on_a_reply_from_the_previous_night(homes, tmp_path):
    state = tmp_path / "state"
    before = by_id(night(homes, state))[CLAUDE_MAIN]
    append_records(claude_file(homes[0], CLAUDE_MAIN), claude_user("perfect, thanks"))
    after = by_id(run(homes, state))[CLAUDE_MAIN]
    assert after.feedback[-1].prompt_index == len(before.user_prompts) - 1


def test_without_commit_the_same_bytes_are_read_again(homes, tmp_path):
    state = tmp_path / "state"
    first = run(homes, state)  # a dry run: never committed
    assert not state.exists()
    again = run(homes, state)
    assert again.bytes_read == first.bytes_read
    assert summary(again) == summary(first)


def test_stateless_harvest_writes_nothing(homes, tmp_path):
    result = run(homes, None)
    result.commit()
    assert result.digests and list(tmp_path.glob("**/harvest-checkpoints.json")) == []


def test_assistant_message_straddling_two_nights_counts_once(homes, tmp_path):
    state = tmp_path / "state"
    path = claude_file(homes[0], CLAUDE_MAIN)
    append_records(path, claude_user("explain the retry"), claude_assistant("msg_S", "part one"))
    before = by_id(night(homes, state))[CLAUDE_MAIN]
    append_records(path, claude_assistant("msg_S", "part two", ts="2026-11-22T10:00:06.000Z"))
    after = by_id(night(homes, state))[CLAUDE_MAIN]
    assert after.n_assistant_turns == before.n_assistant_turns
    assert after.assistant_finals[-1] == "part one\npart two"
    assert len(after.assistant_finals) == len(before.assistant_finals)


def test_codex_twin_straddling_two_nights_counts_once(homes, tmp_path):
    state = tmp_path / "state"
    path = codex_file(homes[1], CODEX_MAIN)
    ts = "2026-11-22T08:00:00.000Z"
    item = {
        "timestamp": ts,
        "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "add docs"}]},
    }
    append_records(path, item)
    before = by_id(night(homes, state))[CODEX_MAIN]
    append_records(
        path, {"timestamp": ts, "type": "event_msg", "payload": {"type": "user_message", "message": "add docs"}}
    )
    after = by_id(night(homes, state))[CODEX_MAIN]
    assert after.n_user_turns == before.n_user_turns
    assert after.user_prompts[-1] == "add docs"


def test_truncated_last_line_is_read_once_complete(homes, tmp_path):
    state = tmp_path / "state"
    path = claude_file(homes[0], CLAUDE_BACKEND)
    data = path.read_bytes()
    complete = data[: data.rindex(b"\n") + 1]
    record = json.dumps(claude_assistant("msg_T", "FINISHED LATER") | {"sessionId": CLAUDE_BACKEND}).encode()
    path.write_bytes(complete + record[:40])  # the writer is mid-line
    first = night(homes, state)
    assert first.skipped["truncated_line"] == 1
    assert "FINISHED LATER" not in json.dumps(by_id(first)[CLAUDE_BACKEND].to_dict())
    checkpoint = json.loads((state / CHECKPOINTS_FILE).read_text())["files"][str(path)]
    assert checkpoint["offset"] == len(complete) and checkpoint["size"] == len(complete) + 40
    with open(path, "ab") as handle:
        handle.write(record[40:] + b"\n")  # ... and finishes it
    second = night(homes, state)
    digest = by_id(second)[CLAUDE_BACKEND]
    assert second.bytes_read == len(record) + 1
    assert digest.assistant_finals[-1] == "FINISHED LATER"
    assert digest.n_assistant_turns == by_id(first)[CLAUDE_BACKEND].n_assistant_turns + 1
    assert "truncated_line" not in second.skipped


def test_deleted_transcripts_still_count(homes, tmp_path):
    state = tmp_path / "state"
    first = night(homes, state)
    path = claude_file(homes[0], CLAUDE_MAIN)
    path.unlink()  # Claude Code's 30-day cleanup
    second = night(homes, state)
    assert summary(second)[CLAUDE_MAIN] == summary(first)[CLAUDE_MAIN]
    assert str(path) not in json.loads((state / CHECKPOINTS_FILE).read_text())["files"]


def test_rewritten_file_is_reread_from_the_start_and_replaces_the_digest(homes, tmp_path):
    state = tmp_path / "state"
    night(homes, state)
    path = claude_file(homes[0], CLAUDE_MAIN)
    replacement = path.with_suffix(".new")
    replacement.write_text(json.dumps(claude_user("only prompt now")) + "\n")
    os.replace(replacement, path)  # new inode, smaller file
    digest = by_id(night(homes, state))[CLAUDE_MAIN]
    assert digest.user_prompts == ["only prompt now"] and digest.n_user_turns == 1


def test_exclusion_is_remembered_across_nights(homes, tmp_path):
    state = tmp_path / "state"
    night(homes, state)
    (headless,) = [p for p in homes[0].glob("projects/*/*.jsonl") if b"sdk-cli" in p.read_bytes()]
    append_records(
        headless,
        {
            "type": "user",
            "cwd": PROJECT,
            "timestamp": "2026-11-22T10:00:00.000Z",
            "message": {"role": "user", "content": "more headless work"},
        },
    )
    result = night(homes, state)
    assert all("headless" not in p for d in result.digests for p in d.user_prompts)
    assert result.files_read == 1


def test_since_applies_to_cached_sessions_too(homes, tmp_path):
    from datetime import datetime, timezone

    state = tmp_path / "state"
    night(homes, state)
    recent = run(homes, state, since=datetime(2026, 11, 21, tzinfo=timezone.utc))
    assert set(by_id(recent)) == {CLAUDE_BACKEND}


def test_a_stale_commit_does_not_roll_back_a_newer_one(homes, tmp_path):
    """Two projects' nights may harvest at once; the slower commit must not undo the faster."""
    state = tmp_path / "state"
    night(homes, state)
    path = claude_file(homes[0], CLAUDE_MAIN)
    append_records(path, claude_user("first request"))
    stale = run(homes, state)
    night(homes, state)
    append_records(path, claude_user("second request", ts="2026-11-22T11:00:00.000Z"))
    night(homes, state)
    stale.commit()  # based on checkpoints two commits old
    final = run(homes, state)
    assert final.bytes_read == 0
    prompts = by_id(final)[CLAUDE_MAIN].user_prompts
    assert prompts.count("first request") == 1 and prompts.count("second request") == 1


def test_state_files_are_valid_and_no_temp_files_remain(homes, tmp_path):
    state = tmp_path / "state"
    night(homes, state)
    json.loads((state / CHECKPOINTS_FILE).read_text())
    shards = list((state / DIGESTS_DIR).glob("*.jsonl"))
    assert shards
    for shard in shards:
        for line in shard.read_text().splitlines():
            json.loads(line)
    assert not [p for p in state.rglob("*") if p.name.endswith(".tmp")]


def test_damaged_state_falls_back_to_a_full_read(homes, tmp_path):
    state = tmp_path / "state"
    first = night(homes, state)
    (state / CHECKPOINTS_FILE).write_text("{not json")
    for shard in (state / DIGESTS_DIR).glob("*.jsonl"):
        shard.write_text("garbage\n")
    again = night(homes, state)
    assert again.bytes_read == first.bytes_read
    assert summary(again) == summary(first)


def test_progress_is_reported(homes, tmp_path):
    messages: list[str] = []
    run(homes, None, progress=messages.append)
    assert messages and messages[-1].startswith("harvest: ")


# -- hostile files -------------------------------------------------------------------------------

HARVEST_SCRIPT = """
import json, sys
from pathlib import Path
from skillopt_sleep.sources import harvest
r = harvest(sys.argv[1], source="claude", claude_home=Path(sys.argv[2]), codex_home=Path(sys.argv[3]))
print(json.dumps({"skipped": r.skipped, "ids": sorted(d.session_id for d in r.digests)}))
"""


def harvest_in_child(homes: tuple[Path, Path]) -> dict:
    """In a child with a timeout: a harvest that hangs fails the test instead of the suite."""
    out = subprocess.run(
        [sys.executable, "-c", HARVEST_SCRIPT, PROJECT, str(homes[0]), str(homes[1])],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_fifo_and_a_link_to_dev_zero_are_skipped_not_read(homes: tuple[Path, Path]) -> None:
    folder = claude_file(homes[0], CLAUDE_MAIN).parent
    os.mkfifo(folder / "aaaaaaaa-fifo.jsonl")
    os.symlink("/dev/zero", folder / "bbbbbbbb-zero.jsonl")
    result = harvest_in_child(homes)
    assert result["skipped"]["not_a_regular_file"] == 2
    assert CLAUDE_MAIN in result["ids"]  # the real sessions are still harvested


def test_a_lone_surrogate_is_replaced_at_read(homes: tuple[Path, Path], tmp_path: Path) -> None:
    path = claude_file(homes[0], CLAUDE_MAIN)
    with open(path, "a", encoding="utf-8") as fh:  # Node split an emoji: "\\ud83d" with no pair
        fh.write(json.dumps(claude_user("ship it \ud83d now", ts="2026-11-22T11:00:00.000Z")) + "\n")
    state = tmp_path / "state"
    result = harvest(PROJECT, source="claude", claude_home=homes[0], codex_home=homes[1], state_dir=state)
    prompt = by_id(result)[CLAUDE_MAIN].user_prompts[-1]
    assert prompt == "ship it \ufffd now"
    prompt.encode("utf-8")
    result.commit()  # the digest cache is written as UTF-8 without an error
    again = harvest(PROJECT, source="claude", claude_home=homes[0], codex_home=homes[1], state_dir=state)
    assert by_id(again)[CLAUDE_MAIN].user_prompts[-1] == "ship it \ufffd now"


def test_two_files_with_one_session_id_are_both_kept(homes: tuple[Path, Path], tmp_path: Path) -> None:
    original = claude_file(homes[0], CLAUDE_MAIN)
    copy_in_other_project = homes[0] / "projects" / "-copy" / original.name
    copy_in_other_project.parent.mkdir()
    copy_in_other_project.write_bytes(original.read_bytes())
    append_records(copy_in_other_project, claude_user("only in the copy", ts="2026-11-22T12:00:00.000Z"))
    state = tmp_path / "state"
    first = harvest(PROJECT, source="claude", claude_home=homes[0], codex_home=homes[1], state_dir=state)
    sessions = [d for d in first.digests if d.session_id.startswith(CLAUDE_MAIN)]
    assert len(sessions) == 2, [d.session_id for d in first.digests]
    assert {d.path for d in sessions} == {str(original), str(copy_in_other_project)}
    assert sum("only in the copy" in d.user_prompts for d in sessions) == 1
    first.commit()
    # appending to either file later updates that file's session, and only it
    append_records(original, claude_user("later in the original", ts="2026-11-22T13:00:00.000Z"))
    second = harvest(PROJECT, source="claude", claude_home=homes[0], codex_home=homes[1], state_dir=state)
    again = {d.path: d for d in second.digests if d.session_id.startswith(CLAUDE_MAIN)}
    assert set(again) == {str(original), str(copy_in_other_project)}
    assert again[str(original)].user_prompts[-1] == "later in the original"
    assert "later in the original" not in again[str(copy_in_other_project)].user_prompts


# -- a source whose agent rewrites its file as a whole (a JSON document, an SQLite database) ----------


class WholeJsonSource:
    """A made-up agent keeping each session as one JSON document it rewrites as the session grows:
    ``{"id", "cwd", "prompts": [...]}``. ``reads`` counts the files read whole."""

    name = "whole"
    whole_file = True

    def __init__(self, home: Path) -> None:
        self.home = home
        self.reads = 0

    def default_home(self) -> Path:
        return self.home

    def discover(self, home: Path, skipped):
        yield from sorted(home.glob("*.json"))

    def read_whole(self, path: str, skipped):
        from skillopt_sleep.sources.base import DigestBuilder

        self.reads += 1
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        if doc.get("headless"):
            return [], [doc["id"]]
        part = DigestBuilder(source=self.name, session_id=doc["id"], path=path, project=doc["cwd"])
        for prompt in doc["prompts"]:
            part.add_prompt(prompt)
            part.new_reply("Done: " + prompt)
        return [part], []

    def head_cwds(self, path: Path) -> set[str]:
        return {json.loads(path.read_text(encoding="utf-8"))["cwd"]}


def whole_world(tmp_path: Path, monkeypatch) -> WholeJsonSource:
    from skillopt_sleep.sources import harvester, runner  # noqa: F401 - the registry the runner reads

    source = WholeJsonSource(tmp_path / "whole")
    source.home.mkdir()
    monkeypatch.setitem(harvester.SOURCES, "whole", source)
    return source


def write_doc(path: Path, prompts: list[str], **extra) -> None:
    path.write_text(json.dumps({"id": path.stem, "cwd": PROJECT, "prompts": prompts, **extra}), encoding="utf-8")


def whole_harvest(source: WholeJsonSource, state: Path):
    result = harvest(PROJECT, source="whole", homes={"whole": source.home}, state_dir=state)
    result.commit()
    return result


def test_a_whole_file_is_read_again_only_when_it_changed_and_replaces_what_it_gave(tmp_path, monkeypatch):
    source = whole_world(tmp_path, monkeypatch)
    doc = source.home / "s1.json"
    write_doc(doc, ["write the release note"])
    first = whole_harvest(source, tmp_path / "state")
    assert [d.user_prompts for d in first.digests] == [["write the release note"]]
    assert whole_harvest(source, tmp_path / "state").files_read == 0 and source.reads == 1
    # rewritten as a whole, the earlier prompt included: read again, and not counted twice
    write_doc(doc, ["write the release note", "no — you forgot the ticket number"])
    third = whole_harvest(source, tmp_path / "state")
    assert third.files_read == 1 and source.reads == 2
    assert [d.user_prompts for d in third.digests] == [["write the release note", "no — you forgot the ticket number"]]


def test_a_whole_file_of_the_same_size_rewritten_later_is_read_again(tmp_path, monkeypatch):
    source = whole_world(tmp_path, monkeypatch)
    doc = source.home / "s1.json"
    write_doc(doc, ["aaaa"])
    whole_harvest(source, tmp_path / "state")
    write_doc(doc, ["bbbb"])
    later = doc.stat().st_mtime_ns + 10**9
    os.utime(doc, ns=(later, later))
    result = whole_harvest(source, tmp_path / "state")
    assert [d.user_prompts for d in result.digests] == [["bbbb"]]


def test_a_change_in_the_write_ahead_log_alone_reads_the_file_again(tmp_path, monkeypatch):
    source = whole_world(tmp_path, monkeypatch)
    doc = source.home / "s1.json"
    write_doc(doc, ["one"])
    whole_harvest(source, tmp_path / "state")
    Path(f"{doc}-wal").write_bytes(b"new rows")
    whole_harvest(source, tmp_path / "state")
    assert source.reads == 2


def test_a_whole_file_over_the_bound_is_skipped_and_said(tmp_path, monkeypatch):
    from skillopt_sleep.sources import runner

    source = whole_world(tmp_path, monkeypatch)
    write_doc(source.home / "s1.json", ["one"])
    monkeypatch.setattr(runner, "MAX_WHOLE_FILE_BYTES", 10)
    result = whole_harvest(source, tmp_path / "state")
    assert result.digests == [] and result.skipped.get("whole_file_too_large") == 1 and source.reads == 0


def test_a_whole_file_reader_that_fails_loses_the_file_not_the_harvest(tmp_path, monkeypatch):
    source = whole_world(tmp_path, monkeypatch)
    (source.home / "a.json").write_text("{not json", encoding="utf-8")
    write_doc(source.home / "b.json", ["two"])
    result = whole_harvest(source, tmp_path / "state")
    assert [d.user_prompts for d in result.digests] == [["two"]] and result.skipped.get("parser_error") == 1


def test_a_session_the_whole_file_excludes_is_dropped(tmp_path, monkeypatch):
    source = whole_world(tmp_path, monkeypatch)
    doc = source.home / "s1.json"
    write_doc(doc, ["one"])
    assert len(whole_harvest(source, tmp_path / "state").digests) == 1
    write_doc(doc, ["one", "two"], headless=True)
    assert whole_harvest(source, tmp_path / "state").digests == []


def test_homes_by_agent_read_what_the_older_arguments_read(homes):
    by_name = harvest(PROJECT, source="all", homes={"claude": homes[0], "codex": homes[1]})
    older = harvest(PROJECT, source="all", claude_home=homes[0], codex_home=homes[1])
    assert summary(by_name) == summary(older) and by_name.homes == older.homes


def test_every_agent_named_in_paths_has_a_reader_a_home_setting_and_flags():
    import argparse
    import dataclasses

    from skillopt_sleep.commands.flags import add_source_flags
    from skillopt_sleep.config import HarvestSettings
    from skillopt_sleep.paths import TRANSCRIPT_SOURCES, home_setting
    from skillopt_sleep.sources import SOURCES

    assert list(SOURCES) == list(TRANSCRIPT_SOURCES)
    fields = {f.name for f in dataclasses.fields(HarvestSettings)}
    assert {home_setting(name) for name in SOURCES} <= fields
    parser = argparse.ArgumentParser()
    add_source_flags(parser)
    for name in SOURCES:
        assert getattr(parser.parse_args([f"--{name}-home", "/x", "--source", name]), home_setting(name)) == "/x"
