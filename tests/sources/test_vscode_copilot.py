"""VS Code Copilot Chat sessions, built by hand to the documented format
(``tests/fixtures/documented/vscode-copilot``, ``docs/agents/vscode-copilot.md``): the mutation log
replayed, the exact harvest of the fixture User dir, and hostile input."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from skillopt_sleep.sources import harvest
from skillopt_sleep.sources.vscode_copilot import VSCodeCopilotSource, apply, read_session, replay

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "documented" / "vscode-copilot" / "User"
PROJECT = "/work/demo-app"
SECRET = "ghp_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"
COPILOT = {"extensionId": {"value": "GitHub.copilot-chat", "_lower": "github.copilot-chat"}}
LOG = "5b0e6a1c-2d3f-4a5b-8c7d-9e0f1a2b3c4d"
DOCUMENT = "0c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f"
OTHER = "9f8e7d6c-5b4a-4392-8a1b-0c9d8e7f6a5b"


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "User")
    return tmp_path / "User"


def run(user_dir: Path, project: str | None = PROJECT, **kwargs: Any):
    return harvest(project, source="vscode-copilot", homes={"vscode-copilot": user_dir}, **kwargs)


def request(text: Any, response: list[Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {
        "requestId": "r",
        "timestamp": 1790000001000,
        "agent": COPILOT,
        "message": {"text": text, "parts": []},
        "response": response or [],
        **fields,
    }


def write_log(user_dir: Path, *entries: dict[str, Any] | str, folder: str = PROJECT, name: str = "s.jsonl") -> Path:
    workspace = user_dir / "workspaceStorage" / "feedface"
    (workspace / "chatSessions").mkdir(parents=True, exist_ok=True)
    (workspace / "workspace.json").write_text(json.dumps({"folder": "file://" + folder}))
    path = workspace / "chatSessions" / name
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in entries))
    return path


def read(path: Path) -> tuple[Any, Counter[str]]:
    skipped: Counter[str] = Counter()
    digests, _ = read_session(str(path), skipped)
    return [d.to_digest() for d in digests], skipped


# -- the mutation log --------------------------------------------------------------------------


def test_set_push_with_a_cut_and_delete_replay_as_vs_code_writes_them():
    state: dict[str, Any] = {"requests": [{"response": [{"value": "old"}], "x": 1}]}
    assert apply(state, {"kind": 2, "k": ["requests", 0, "response"], "i": 0, "v": [{"value": "new"}]})
    assert apply(state, {"kind": 1, "k": ["requests", 0, "modelState"], "v": {"value": 1}})
    assert apply(state, {"kind": 3, "k": ["requests", 0, "x"]})
    assert apply(state, {"kind": 2, "k": ["requests", 0, "fresh"], "v": [1]})  # a missing array starts empty
    assert state == {"requests": [{"response": [{"value": "new"}], "modelState": {"value": 1}, "fresh": [1]}]}


@pytest.mark.parametrize(
    "entry",
    [
        {"kind": 1, "k": ["nope", "deeper"], "v": 1},
        {"kind": 1, "k": [], "v": 1},
        {"kind": 1, "k": "requests", "v": 1},
        {"kind": 2, "k": ["requests"], "v": "not a list"},
        {"kind": 2, "k": ["requests"], "i": -1, "v": []},
        {"kind": 2, "k": ["requests", 5], "v": []},
        {"kind": 1, "k": ["requests", True], "v": 1},
        {"kind": 9, "k": ["requests"]},
        {"kind": 1, "k": ["x"] * 100, "v": 1},
    ],
)
def test_a_mutation_that_does_not_fit_the_session_is_refused(entry):
    state: dict[str, Any] = {"requests": []}
    assert not apply(state, entry)
    assert state == {"requests": []}


def test_a_later_initial_line_replaces_the_state_as_after_a_compaction():
    data = b"\n".join(
        json.dumps(e).encode()
        for e in (
            {"kind": 0, "v": {"requests": [{"message": "a"}]}},
            {"kind": 0, "v": {"requests": [{"message": "b"}]}},
            {"kind": 1, "k": ["requests", 0, "message"], "v": "c"},
        )
    )
    skipped: Counter[str] = Counter()
    assert replay(data + b"\n", skipped) == {"requests": [{"message": "c"}]} and not skipped


# -- the exact harvest of the fixture --------------------------------------------------------------


def test_the_fixture_harvest_exactly(user_dir):
    result = run(user_dir)
    by_id = {d.session_id: d for d in result.digests}
    assert sorted(by_id) == sorted([LOG, DOCUMENT])  # the other project is filtered out
    log, document = by_id[LOG], by_id[DOCUMENT]
    assert log.user_prompts == [
        "Write the commit message for the staged changes; push with [REDACTED:github_token]",
        "No, that's wrong: the subject line must stay under 50 characters",
        "Add a test for the trailing comma case",
    ]
    assert log.assistant_finals == [
        "feat(parser): accept trailing commas\n\nThe token is [REDACTED:github_token]",
        "feat(parser): allow trailing commas",
        "Added `test_trailing_comma`.",
    ]
    assert log.project == PROJECT and log.source == "vscode-copilot"
    assert log.tools_used == ["run_in_terminal", "copilot_replaceString"]
    assert log.files_touched == ["/work/demo-app/CHANGELOG.md"]
    assert [(f.polarity, f.prompt_index) for f in log.feedback] == [("negative", 0)]
    assert (log.n_user_turns, log.n_assistant_turns) == (3, 3)
    assert log.started is not None and log.started.isoformat() == "2026-09-21T14:13:20+00:00"
    assert log.ended is not None and log.ended.isoformat() == "2026-09-21T14:13:50+00:00"
    assert document.user_prompts == ["Summarize the open PR"]
    assert document.assistant_finals == ["The PR adds trailing comma support."]
    assert result.skipped == {"other_participant": 1}


def test_the_secret_and_the_injected_context_reach_no_digest_field(user_dir):
    text = json.dumps([d.to_dict() for d in run(user_dir, None).digests])
    assert SECRET not in text
    for planted in ("INSTRUCTIONS FILE TEXT", "RENDERED CONTEXT", "THINKING TEXT", "OTHER PARTICIPANT", "obsolete"):
        assert planted not in text


def test_every_project_and_the_cwd_for_the_project_filter(user_dir):
    digests = run(user_dir, None).digests
    assert {d.session_id: d.project for d in digests} == {
        LOG: PROJECT,
        DOCUMENT: PROJECT,
        OTHER: "/work/other-project",
    }
    assert [d.session_id for d in run(user_dir, "/work/other-project").digests] == [OTHER]
    assert VSCodeCopilotSource().head_cwds(next(user_dir.glob(f"*/*/chatSessions/{OTHER}.jsonl"))) == {
        "/work/other-project"
    }


def test_a_session_is_read_again_when_it_grows_and_replaced_not_added_to(user_dir, tmp_path):
    state = tmp_path / "state"
    first = run(user_dir, state_dir=state)
    first.commit()
    path = next(user_dir.glob(f"*/*/chatSessions/{LOG}.jsonl"))
    with open(path, "a") as handle:
        handle.write(json.dumps({"kind": 2, "k": ["requests"], "v": [request("one more prompt")]}) + "\n")
    again = {d.session_id: d for d in run(user_dir, state_dir=state).digests}
    assert again[LOG].user_prompts[-1] == "one more prompt" and len(again[LOG].user_prompts) == 4
    assert again[DOCUMENT].user_prompts == ["Summarize the open PR"]


# -- rules on small sessions -------------------------------------------------------------------------


def test_only_the_typed_text_is_a_prompt(tmp_path):
    path = write_log(
        tmp_path,
        {
            "kind": 0,
            "v": {
                "sessionId": "s",
                "requests": [
                    request("<environment_info>The user's OS is Linux</environment_info>"),
                    request("<context>ctx</context><userRequest>fix the flaky test</userRequest>"),
                    request("   "),
                    request("what runs this?", isSystemInitiated=True),
                    request(42),
                ],
            },
        },
    )
    [digest], skipped = read(path)
    assert digest.user_prompts == ["fix the flaky test"]
    assert skipped == {"injected_context": 1, "system_initiated": 1, "wrong_field_type": 1}


def test_a_reply_to_a_turn_that_is_no_prompt_is_not_paired_with_the_one_before(tmp_path):
    other = {"extensionId": {"value": "someone.else"}}
    path = write_log(
        tmp_path,
        {"kind": 0, "v": {"requests": [request("first", [{"value": "one"}])]}},
        {"kind": 2, "k": ["requests"], "v": [request("@else hi", [{"value": "NOT COPILOT"}], agent=other)]},
    )
    [digest], _ = read(path)
    assert digest.assistant_finals == ["one"] and digest.n_assistant_turns == 1


def test_an_older_json_document_is_read_unless_a_log_of_the_session_is_beside_it(tmp_path):
    doc = {"sessionId": "d", "requests": [request("from the document")]}
    path = write_log(tmp_path, json.dumps(doc), name="d.json")
    assert [d.user_prompts for d in read(path)[0]] == [["from the document"]]
    write_log(tmp_path, {"kind": 0, "v": doc}, name="d.jsonl")
    skipped: Counter[str] = Counter()
    found = list(VSCodeCopilotSource().discover(tmp_path, skipped))
    assert [p.name for p in found] == ["d.jsonl"] and skipped == {"superseded_json": 1}


def test_a_session_in_one_of_our_replay_dirs_is_left_out(tmp_path):
    path = write_log(
        tmp_path,
        {"kind": 0, "v": {"sessionId": "s", "requests": [request("x")]}},
        folder="/tmp/skillopt-sleep-replay-abc",
    )
    skipped: Counter[str] = Counter()
    assert read_session(str(path), skipped) == ([], ["s"]) and skipped == {"own_replay": 1}


# -- hostile input ----------------------------------------------------------------------------


def test_hostile_lines_are_skipped_and_counted_never_raised(tmp_path):
    path = write_log(
        tmp_path,
        {"kind": 1, "k": ["requests"], "v": []},  # before any initial state
        "not json",
        "[1, 2]",
        {"kind": 0, "v": "not an object"},
        {"kind": 0, "v": {"requests": [request("kept")]}},
        {"kind": 2, "k": ["requests", 0, "response"], "v": {"value": "not a list"}},
        "[" * 100_000,
        {"kind": 1, "k": ["requests", 0, "message"], "v": "the oldest form: a plain string"},
        '{"kind": 2, "k": ["requests"], "v": [',  # the last line, still being written
    )
    with open(path, "rb+") as handle:
        handle.seek(0, 2)
        handle.seek(handle.tell() - 1)
        handle.truncate()
    [digest], skipped = read(path)
    assert digest.user_prompts == ["the oldest form: a plain string"]
    assert skipped == {
        "truncated_line": 1,
        "bad_log_entry": 2,
        "malformed_json": 2,
        "not_object": 1,
        "wrong_field_type": 1,
    }


def test_a_workspace_without_a_folder_gives_no_project_and_bad_requests_are_counted(tmp_path):
    path = write_log(tmp_path, {"kind": 0, "v": {"requests": ["x", request("ok", ["junk", {"kind": "thinking"}])]}})
    (path.parent.parent / "workspace.json").write_text(json.dumps({"folder": "vscode-remote://wsl%2Bu/work/app"}))
    [digest], skipped = read(path)
    assert digest.project == "" and digest.user_prompts == ["ok"] and digest.assistant_finals == [""]
    assert skipped == {"no_workspace_folder": 1, "wrong_field_type": 1}


def test_special_and_oversized_files_are_refused(tmp_path, monkeypatch):
    import os

    path = write_log(tmp_path, {"kind": 0, "v": {"requests": [request("x")]}})
    fifo = path.parent / "fifo.jsonl"
    os.mkfifo(fifo)
    result = run(tmp_path, None)
    assert result.skipped.get("not_a_regular_file") == 1 and len(result.digests) == 1
    monkeypatch.setattr("skillopt_sleep.sources.vscode_copilot.MAX_WHOLE_FILE_BYTES", 10)
    skipped: Counter[str] = Counter()
    assert read_session(str(path), skipped) == ([], []) and skipped == {"whole_file_too_large": 1}


@pytest.mark.parametrize(
    ("platform", "env", "vscode", "cursor"),
    [
        ("linux", {"XDG_CONFIG_HOME": "/cfg"}, "/cfg/Code/User", "/cfg/Cursor/User"),
        ("linux", {}, "{home}/.config/Code/User", "{home}/.config/Cursor/User"),
        (
            "darwin",
            {},
            "{home}/Library/Application Support/Code/User",
            "{home}/Library/Application Support/Cursor/User",
        ),
        ("win32", {"APPDATA": "/roaming"}, "/roaming/Code/User", "/roaming/Cursor/User"),
        ("linux", {"VSCODE_PORTABLE": "/portable"}, "/portable/user-data/User", "{home}/.config/Cursor/User"),
    ],
)
def test_the_default_user_dirs_on_each_system(monkeypatch, tmp_path, platform, env, vscode, cursor):
    from skillopt_sleep import paths

    for key in ("XDG_CONFIG_HOME", "APPDATA", "VSCODE_PORTABLE"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(paths.sys, "platform", platform)
    assert paths.vscode_home() == Path(vscode.format(home=tmp_path))
    assert paths.cursor_home() == Path(cursor.format(home=tmp_path))
