"""Claude Code source on realistic transcripts of every layout (DESIGN §9)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from tests.support.harvest import (
    CLAUDE_BACKEND,
    CLAUDE_LEGACY,
    CLAUDE_MAIN,
    FORBIDDEN,
    PROJECT,
    append_records,
    by_id,
    claude_assistant,
    claude_file,
    claude_user,
)

from skillopt_sleep.sources import available_sources, harvest
from skillopt_sleep.sources.base import IGNORED, USED
from skillopt_sleep.sources.claude_code import ClaudeParser, user_text


def run(homes, project=PROJECT, **kw):
    claude_home, codex_home = homes
    return harvest(project, source="claude", claude_home=claude_home, codex_home=codex_home, **kw)


def test_only_the_users_own_sessions_in_the_project_are_kept(homes):
    result = run(homes)
    assert set(by_id(result)) == {CLAUDE_MAIN, CLAUDE_BACKEND}
    text = json.dumps([d.to_dict() for d in result.digests])
    for marker in FORBIDDEN:
        assert marker not in text
    assert result.sources_used == ["claude"]
    assert {d.source for d in result.digests} == {"claude"}


def test_exclusions_and_bad_lines_are_counted(homes):
    skipped = run(homes).skipped
    assert skipped["subagent_file"] == 2  # <session>/subagents/agent-*.jsonl and old agent-*.jsonl
    assert skipped["headless_session"] == 1
    assert skipped["own_replay"] == 1
    assert skipped["sidechain"] == 1
    assert skipped["malformed_json"] == 1
    assert skipped["truncated_line"] == 1


def test_prompts_are_real_user_intent_only(homes):
    digest = by_id(run(homes))[CLAUDE_MAIN]
    assert digest.user_prompts == [
        "Write the commit message for the staged changes. Use our conventional-commit style.",
        "thanks, perfect",
        "Now add a docstring to refresh_token in src/auth.py",  # system reminder stripped
        "no, you forgot to mention the retry limit in the body",
    ]
    assert digest.n_user_turns == 4


def test_an_assistant_message_spread_over_records_counts_once(homes):
    digest = by_id(run(homes))[CLAUDE_MAIN]
    # five API messages (msg_01A..E); the synthetic API-error message is not a reply
    assert digest.n_assistant_turns == 5
    # paired by turn: the last text of each prompt's turn ("" when the turn has no text reply)
    assert digest.assistant_finals == [
        "feat(auth): refresh expired tokens before retrying\n"
        "Refresh the session token when the API answers 401, then retry once.",
        "",
        "",
        "Updated: the body now says the retry happens at most once.",
    ]


def test_tools_skills_files_branch_and_times(homes):
    digest = by_id(run(homes))[CLAUDE_MAIN]
    assert digest.tools_used == ["Bash", "Skill", "Edit"]
    assert digest.skills_used == ["commit-style"]
    assert digest.files_touched == ["/work/demo-app/src/auth.py", "src/auth.py"]
    assert digest.branch == "main"
    assert digest.project == PROJECT
    assert digest.started.tzinfo is not None and digest.started.utcoffset() == timedelta(0)
    assert digest.started < digest.ended
    assert digest.path.endswith(f"{CLAUDE_MAIN}.jsonl") and Path(digest.path).is_absolute()


def test_feedback_points_at_the_request_it_reacts_to(homes):
    digests = by_id(run(homes))
    main = digests[CLAUDE_MAIN]
    assert [(f.polarity, f.prompt_index, f.text) for f in main.feedback] == [
        ("positive", 0, "thanks, perfect"),
        ("negative", 2, "no, you forgot to mention the retry limit in the body"),
    ]
    backend = digests[CLAUDE_BACKEND]
    assert [(f.polarity, f.prompt_index) for f in backend.feedback] == [("negative", 0)]


def test_project_is_matched_on_cwd_not_on_the_folder_slug(homes):
    assert CLAUDE_LEGACY not in by_id(run(homes))  # /work/demo-app-legacy shares the prefix
    assert set(by_id(run(homes, project="/work/demo-app/backend"))) == {CLAUDE_BACKEND}
    assert set(by_id(run(homes, project="/work/demo-app-legacy"))) == {CLAUDE_LEGACY}
    everything = run(homes, project=None, all_projects=True)
    assert set(by_id(everything)) == {CLAUDE_MAIN, CLAUDE_BACKEND, CLAUDE_LEGACY}
    assert run(homes, project="/work/elsewhere").digests == []


def test_digests_are_sorted_by_start(homes):
    starts = [d.started for d in run(homes, project=None, all_projects=True).digests]
    assert starts == sorted(starts)


def test_since_filters_on_last_activity(homes):
    assert set(by_id(run(homes, since=datetime(2026, 11, 21, tzinfo=timezone.utc)))) == {CLAUDE_BACKEND}
    naive = datetime(2026, 11, 20, 9, 1)  # naive input is taken as UTC, still inside CLAUDE_MAIN
    assert set(by_id(run(homes, since=naive))) == {CLAUDE_MAIN, CLAUDE_BACKEND}
    assert run(homes, since=datetime(2030, 1, 1, tzinfo=timezone.utc)).digests == []


def test_a_headless_turn_appended_to_an_interactive_session_is_left_out_and_the_rest_kept(homes):
    # `claude -p --resume <id>` continues an interactive session in the same file: decide per turn
    path = claude_file(homes[0], CLAUDE_MAIN)
    before = by_id(run(homes))[CLAUDE_MAIN]
    append_records(path, claude_user("more work", entrypoint="sdk-cli"), claude_assistant("msg_H", "headless reply"))
    result = run(homes)
    after = by_id(result)[CLAUDE_MAIN]
    assert after.user_prompts == before.user_prompts
    assert after.assistant_finals == before.assistant_finals
    assert result.skipped["headless_turn"] == 1


def test_available_sources(homes):
    claude_home, codex_home = homes
    assert available_sources(PROJECT, claude_home, codex_home) == ["claude", "codex"]
    assert available_sources("/work/demo-app-legacy", claude_home, codex_home) == ["claude"]
    assert available_sources("/work/nowhere", claude_home, codex_home) == []
    assert available_sources("/tmp/skillopt-sleep-replay-k2j4h5", claude_home, codex_home) == []


def test_missing_homes_yield_nothing(tmp_path):
    result = harvest(PROJECT, claude_home=tmp_path / "none", codex_home=tmp_path / "none2")
    assert result.digests == [] and result.files_read == 0 and result.sources_used == []


def test_unknown_source_is_a_clear_error(homes):
    with pytest.raises(ValueError, match="unknown transcript source 'windsurf'"):
        harvest(PROJECT, source="windsurf", claude_home=homes[0], codex_home=homes[1])


@pytest.mark.parametrize(
    "text",
    [
        "<command-name>/review</command-name>",
        "<local-command-stdout>ok</local-command-stdout>",
        "Caveat: The messages below were generated by the user while running local commands.",
        "[Request interrupted by user]",
        "[Request interrupted by user for tool use]",
        "<system-reminder>remember</system-reminder>",
        "This session is being continued from a previous conversation that ran out of context.",
        "<bash-input>ls</bash-input>",
        "   ",
    ],
)
def test_meta_text_is_not_user_intent(text):
    assert user_text(text) == ""


def test_real_text_survives_meta_stripping():
    assert user_text("Fix the bug\n<system-reminder>x</system-reminder>") == "Fix the bug"


@pytest.mark.parametrize(
    "record, outcome",
    [
        ({"type": "user", "message": "not a dict"}, "wrong_field_type"),
        ({"type": "user", "message": {"content": 42}}, "wrong_field_type"),
        ({"type": "assistant", "message": {"content": {"a": 1}}}, "wrong_field_type"),
        ({"type": 7}, "wrong_field_type"),
        ({"type": "file-history-snapshot", "snapshot": []}, "wrong_field_type"),
        ({"type": "user", "message": {"content": [{"type": "tool_result", "content": "x"}]}}, IGNORED),
        ({"type": "user", "isMeta": True, "message": {"content": "Caveat: hi"}}, IGNORED),
        ({"type": "summary", "summary": "s"}, IGNORED),
        ({"type": "user", "message": {"content": [7, None, {"type": "text", "text": "hi there"}]}}, USED),
        # no typed prompt yet: a reply outside any turn is not counted
        ({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": 5, "input": []}]}}, IGNORED),
    ],
)
def test_line_outcomes(record, outcome):
    parser = ClaudeParser("/x/s.jsonl", {})
    assert parser.feed(json.dumps(record).encode()) == outcome


@pytest.mark.parametrize(
    "line, reason",
    [(b"\xff\xfe{}", "bad_utf8"), (b"{not json", "malformed_json"), (b"[1, 2]", "not_object"), (b'"s"', "not_object")],
)
def test_bad_lines(line, reason):
    assert ClaudeParser("/x/s.jsonl", {}).feed(line) == reason


def test_one_bad_line_does_not_lose_the_file(homes, tmp_path):
    path = claude_file(homes[0], CLAUDE_MAIN)
    append_records(
        path,
        "\x00\x01binary junk",
        "[]",
        claude_user("after the junk"),
        claude_assistant("msg_new", "reply after junk"),
    )
    digest = by_id(run(homes))[CLAUDE_MAIN]
    assert digest.user_prompts[-1] == "after the junk"
    assert digest.assistant_finals[-1] == "reply after junk"


def test_huge_line_is_skipped_without_losing_neighbours(homes, monkeypatch):
    import skillopt_sleep.sources.base as base

    monkeypatch.setattr(base, "MAX_LINE_BYTES", 4096)
    monkeypatch.setattr(base, "READ_CHUNK", 1000)  # the huge line spans many reads
    path = claude_file(homes[0], CLAUDE_MAIN)
    big = claude_user("x" * 50_000)
    append_records(path, big, claude_user("small after big"))
    result = run(homes)
    assert result.skipped["oversized_line"] == 1
    assert by_id(result)[CLAUDE_MAIN].user_prompts[-1] == "small after big"


def test_unreadable_file_and_directory_are_counted(homes, monkeypatch):
    import os

    locked_file = str(claude_file(homes[0], CLAUDE_MAIN))
    locked_dir = str(claude_file(homes[0], CLAUDE_BACKEND).parent)
    real_open, real_scandir = os.open, os.scandir

    def guarded_open(path, *args, **kwargs):  # chmod 0 does not stop root, so deny here
        if str(path) == locked_file:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    def guarded_scandir(path="."):
        if str(path) == locked_dir:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "open", guarded_open)  # transcripts are opened through os.open
    monkeypatch.setattr(os, "scandir", guarded_scandir)
    result = run(homes)
    assert result.skipped["unreadable_file"] == 1
    assert result.skipped["unreadable_dir"] == 1
    assert result.digests == []


def _feed(parser, *records):
    return [parser.feed(json.dumps(r).encode()) for r in records]


@pytest.mark.parametrize("marks", [{"promptSource": "system", "turnOrigin": "task_notification"}, {}])
def test_a_reply_to_a_task_notification_is_not_paired_with_the_prompt(marks):
    # Claude Code 2.1 marks the notification; older files are recognised by its text
    parser = ClaudeParser("/p/s.jsonl", {})
    notification = claude_user("<task-notification>\n<task-id>a1</task-id>\n</task-notification>", **marks)
    outcomes = _feed(
        parser,
        claude_user("count the TODOs", promptSource="typed", turnOrigin="human"),
        claude_assistant("msg_1", "Started a helper."),
        notification,
        claude_assistant("msg_2", "The helper reported back."),
    )
    assert outcomes == [USED, USED, IGNORED, IGNORED]
    (builder,), _, _ = parser.finish()
    assert builder.user_prompts == ["count the TODOs"]
    assert builder.assistant_finals == ["Started a helper."]


def test_sdk_prompts_are_headless_turns_and_a_headless_session_yields_nothing():
    parser = ClaudeParser("/p/s.jsonl", {})
    outcomes = _feed(
        parser,
        claude_user("headless one-off", entrypoint="sdk-cli", promptSource="sdk", turnOrigin="sdk"),
        claude_assistant("msg_1", "done"),
    )
    assert outcomes == ["headless_session", IGNORED]
    parts, _, excluded = parser.finish()
    assert parts == [] and excluded == [Path("/p/s.jsonl").stem]


def test_context_records_of_claude_code_2_1_are_not_prompts():
    parser = ClaudeParser("/p/s.jsonl", {})
    records = [
        {"type": "attachment", "attachment": {"type": "nested_memory", "content": "# CLAUDE.md rules"}},
        {"type": "mode", "mode": "normal"},
        {"type": "api-request", "params": {"model": "m"}},
        {"type": "cost-state", "totalCostUSD": 0.1},
        {"type": "api-request-blob", "message": {"role": "user", "content": "a request body, not a prompt"}},
    ]
    assert _feed(parser, *records) == [IGNORED] * len(records)
    assert parser.finish()[0] == []
