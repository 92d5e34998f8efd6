"""Codex source on realistic rollouts (DESIGN §9)."""

from __future__ import annotations

import json

import pytest
from tests.support.harvest import (
    CODEX_ARCHIVED,
    CODEX_MAIN,
    FORBIDDEN,
    PROJECT,
    append_records,
    by_id,
    codex_file,
)

from skillopt_sleep.sources import SOURCES, harvest
from skillopt_sleep.sources.base import IGNORED, USED
from skillopt_sleep.sources.codex import CodexParser, session_id_for


def run(homes, project=PROJECT, source="codex", **kw):
    claude_home, codex_home = homes
    return harvest(project, source=source, claude_home=claude_home, codex_home=codex_home, **kw)


def event(kind, **payload):
    return {"timestamp": "2026-11-22T08:00:00.000Z", "type": "event_msg", "payload": {"type": kind, **payload}}


def item(role, text):
    block = "output_text" if role == "assistant" else "input_text"
    return {
        "timestamp": "2026-11-22T08:00:00.000Z",
        "type": "response_item",
        "payload": {"type": "message", "role": role, "content": [{"type": block, "text": text}]},
    }


def test_sessions_dirs_and_archive_are_read_exec_and_replays_are_not(homes):
    result = run(homes)
    assert set(by_id(result)) == {CODEX_MAIN, CODEX_ARCHIVED}
    text = json.dumps([d.to_dict() for d in result.digests])
    for marker in FORBIDDEN:
        assert marker not in text
    assert result.skipped["headless_session"] == 1
    assert result.skipped["own_replay"] == 1
    assert result.skipped["malformed_json"] == 1


def test_each_prompt_and_reply_is_counted_once(homes):
    digest = by_id(run(homes))[CODEX_MAIN]
    # "continue" really was sent twice: two twin pairs, two prompts
    assert digest.user_prompts == [
        "Summarize the open PR for the changelog",
        "thanks, looks good",
        "continue",
        "continue",
    ]
    assert digest.n_user_turns == 4
    assert digest.assistant_finals == [
        "Added a changelog entry: token refresh on 401.",
        "Glad it helps.",
        "Continuing with the release notes.",
        "Done.",
    ]
    assert digest.n_assistant_turns == 4


def test_injected_context_is_not_a_prompt(homes):
    prompts = " ".join(p for d in run(homes).digests for p in d.user_prompts)
    assert "AGENTS.md" not in prompts and "environment_context" not in prompts
    assert "permissions" not in prompts


def test_tools_files_branch_project_and_feedback(homes):
    digests = by_id(run(homes))
    main = digests[CODEX_MAIN]
    assert main.tools_used == ["shell", "apply_patch", "web_search"]
    assert main.files_touched == ["CHANGELOG.md"]
    assert main.skills_used == []
    assert main.branch == "main" and main.project == PROJECT
    assert [(f.polarity, f.prompt_index) for f in main.feedback] == [("positive", 0)]
    archived = digests[CODEX_ARCHIVED]
    assert archived.tools_used == ["local_shell"]
    assert [(f.polarity, f.prompt_index) for f in archived.feedback] == [("negative", 0)]
    assert archived.started.utcoffset().total_seconds() == 0


def test_auto_uses_the_agents_that_have_the_project(homes):
    assert run(homes, source="auto").sources_used == ["claude", "codex"]
    legacy = run(homes, project="/work/demo-app-legacy", source="auto")
    assert legacy.sources_used == ["claude"]
    assert run(homes, source="all", project="/work/nowhere").sources_used == list(SOURCES)
    both = run(homes, source="all")
    assert {d.source for d in both.digests} == {"claude", "codex"}


def test_session_id_comes_from_the_file_name():
    path = "/h/sessions/2026/11/20/rollout-2026-11-20T09-12-03-019A9F3C-1D2E-7F40-8A1B-2C3D4E5F6071.jsonl"
    assert session_id_for(path) == "019a9f3c-1d2e-7f40-8a1b-2c3d4e5f6071"
    assert session_id_for("/h/odd-name.jsonl") == "odd-name"


def test_event_only_rollouts_still_count_every_prompt():
    parser = CodexParser("/h/rollout-x.jsonl", {})
    for text in ("fix the build", "fix the build"):  # repeated for real, no twins in this format
        assert parser.feed(json.dumps(event("user_message", message=text)).encode()) == USED
    (builder,), _state, excluded = parser.finish()
    assert builder.user_prompts == ["fix the build", "fix the build"] and excluded == []


def test_twins_in_either_order_are_paired():
    parser = CodexParser("/h/rollout-x.jsonl", {})
    outcomes = [
        parser.feed(json.dumps(r).encode())
        for r in (
            item("user", "next"),
            event("user_message", message="next"),
            event("agent_message", message="Done."),
            item("assistant", "Done."),
        )
    ]
    assert outcomes == [USED, IGNORED, USED, IGNORED]


def test_pre_2025_rollouts_with_top_level_items():
    parser = CodexParser("/h/rollout-x.jsonl", {})
    header = {"id": "abc", "timestamp": "2025-04-01T10:00:00.000Z", "instructions": "be brief"}
    assert parser.feed(json.dumps(header).encode()) == IGNORED
    message = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "rename foo"}]}
    assert parser.feed(json.dumps(message).encode()) == USED
    call = {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c"}
    assert parser.feed(json.dumps(call).encode()) == USED
    (builder,), _state, _excluded = parser.finish()
    assert builder.user_prompts == ["rename foo"] and builder.tools_used == ["shell"]


@pytest.mark.parametrize(
    "record, outcome",
    [
        ({"type": "event_msg", "payload": "x"}, "wrong_field_type"),
        ({"type": "event_msg", "payload": {"type": "user_message", "message": ["a"]}}, "wrong_field_type"),
        ({"type": "response_item", "payload": {"type": "message", "role": "user", "content": 3}}, "wrong_field_type"),
        ({"type": "response_item", "payload": {"type": "function_call", "name": None}}, "wrong_field_type"),
        ({"type": "response_item", "payload": {"type": "function_call_output", "output": "x" * 1000}}, IGNORED),
        ({"type": "event_msg", "payload": {"type": "token_count", "info": None}}, IGNORED),
        ({"type": "compacted", "payload": {"message": "summary"}}, IGNORED),
        ({"type": "turn_context", "payload": {"cwd": 5}}, USED),
    ],
)
def test_line_outcomes(record, outcome):
    assert CodexParser("/h/rollout-x.jsonl", {}).feed(json.dumps(record).encode()) == outcome


def test_exec_session_excluded_even_if_exec_meta_is_its_only_clue(homes):
    path = codex_file(homes[1], CODEX_MAIN)
    lines = path.read_text().splitlines()
    meta = json.loads(lines[0])
    meta["payload"]["originator"] = "codex_exec"
    meta["payload"].pop("source")
    path.write_text("\n".join([json.dumps(meta)] + lines[1:]) + "\n")
    assert CODEX_MAIN not in by_id(run(homes))


def test_malformed_tail_in_codex_does_not_lose_the_session(homes):
    path = codex_file(homes[1], CODEX_ARCHIVED)
    append_records(path, '{"timestamp": "x", "type": "event_msg", "payload": {"type": "user_mess')
    with open(path, "ab") as handle:
        handle.write(b'{"timestamp": "2026-11-22T08:00:00.000Z", "type": "event_msg", "pay')  # no newline
    result = run(homes)
    assert result.skipped["malformed_json"] == 2  # this one + the fixture's broken agent_message
    assert result.skipped["truncated_line"] == 1
    assert by_id(result)[CODEX_ARCHIVED].n_user_turns == 2


def feed_all(parser, *records):
    return [parser.feed(json.dumps(r).encode()) for r in records]


def test_global_agents_md_and_subagent_notifications_are_injected_without_kinds():
    parser = CodexParser("/h/rollout-x.jsonl", {})
    outcomes = feed_all(
        parser,
        item("user", "# AGENTS.md instructions\n\nAlways answer briefly."),  # the global file: no " for <dir>"
        item("user", "rename foo"),
        item("user", '<subagent_notification>\n{"status": "done"}\n</subagent_notification>'),
        item("assistant", "Noted the helper's result."),  # answers the notification, not the prompt
    )
    assert outcomes == [IGNORED, USED, IGNORED, IGNORED]
    (builder,), _, _ = parser.finish()
    assert builder.user_prompts == ["rename foo"] and builder.assistant_finals == [""]


def test_content_item_kinds_decide_what_was_typed():
    parser = CodexParser("/h/rollout-x.jsonl", {})
    typed = item("user", "rename foo")
    typed["payload"]["internal_chat_message_metadata_passthrough"] = {"content_item_kinds": ["user.text"]}
    injected = item("user", "looks like a prompt but the harness wrote it")
    injected["payload"]["content_item_kinds"] = ["agents_md.instructions"]
    assert feed_all(parser, injected, typed) == [IGNORED, USED]


def test_exec_turns_and_compaction_output_are_not_counted():
    parser = CodexParser("/h/rollout-x.jsonl", {})
    compaction = item("assistant", "Summary of the work so far")
    compaction["payload"]["metadata"] = {"compaction_output": True}
    outcomes = feed_all(
        parser,
        event("task_started", turn_attribution={"turn_trigger": "user"}),
        item("user", "rename foo"),
        item("assistant", "Renamed."),
        compaction,
        event("task_started", turn_attribution={"turn_trigger": "exec"}),  # `codex exec resume`
        item("user", "headless follow-up"),
        item("assistant", "headless reply"),
    )
    assert outcomes == [USED, USED, USED, IGNORED, USED, "headless_turn", IGNORED]
    (builder,), state, _ = parser.finish()
    assert builder.user_prompts == ["rename foo"] and builder.assistant_finals == ["Renamed."]
    resumed = CodexParser("/h/rollout-x.jsonl", state)  # the turn's trigger survives a resume
    assert feed_all(resumed, item("user", "still headless")) == ["headless_turn"]


def test_subagent_threads_are_excluded():
    for meta in (
        {"source": {"subagent": {"thread_spawn": {"depth": 1}}}},
        {"thread_source": "subagent"},
        {"parent_thread_id": "019a0000-0000-0000-0000-000000000000"},
    ):
        parser = CodexParser("/h/rollout-x.jsonl", {})
        record = {
            "timestamp": "2026-11-22T08:00:00.000Z",
            "type": "session_meta",
            "payload": {"id": "x", "cwd": PROJECT, "originator": "codex-tui", **meta},
        }
        assert feed_all(parser, record, item("user", "count TODOs")) == ["subagent_thread", IGNORED]
        assert parser.finish()[0] == []


@pytest.mark.parametrize("resumed", [False, True])
def test_twins_differing_in_whitespace_pair_within_a_read_and_across_a_checkpoint(resumed):
    """A twin is compared as text while the file is read, by its hash across a checkpoint; the
    checkpoint's state holds the hash, never the text."""
    first, second = (
        item("user", "fix  the\nbuild sk-secretsecret"),
        event("user_message", message="fix the build sk-secretsecret"),
    )
    parser = CodexParser("/h/rollout-x.jsonl", {})
    assert parser.feed(json.dumps(first).encode()) == USED
    if resumed:
        _parts, state, _excluded = parser.finish()
        assert "secret" not in json.dumps(state)
        parser = CodexParser("/h/rollout-x.jsonl", json.loads(json.dumps(state)))
    assert parser.feed(json.dumps(second).encode()) == IGNORED
    assert parser.feed(json.dumps(event("user_message", message="fix the tests")).encode()) == USED


def test_a_checkpoint_with_a_damaged_twin_entry_is_read_without_it():
    parser = CodexParser("/h/rollout-x.jsonl", {"pending": {"user": ["event"], "assistant": [1, 2], "x": "y"}})
    assert parser.feed(json.dumps(item("user", "next")).encode()) == USED
    _parts, state, _excluded = parser.finish()
    assert set(state["pending"]) == {"user"} and len(state["pending"]["user"]) == 2
