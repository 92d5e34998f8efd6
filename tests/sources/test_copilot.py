"""GitHub Copilot CLI source: hand-written events, and the sessions the real CLI wrote
(``scripts/record_copilot.py``; ``tests/fixtures/real/copilot_ground_truth.json`` says what a
person typed into each)."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from skillopt_sleep.sources import SOURCES, available_sources, harvest
from skillopt_sleep.sources.base import HELD, HOLD, IGNORED, USED
from skillopt_sleep.sources.copilot import CopilotParser, CopilotSource

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
TRUTH = json.loads((REAL / "copilot_ground_truth.json").read_text(encoding="utf-8"))
PROJECT = "/work/demo-app"
SID = "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5"
TS = "2026-11-28T09:00:00.000Z"
INTERACTIVE_PROMPT = "You are the GitHub Copilot CLI. You are an interactive tool that helps users."
HEADLESS_PROMPT = "You are the GitHub Copilot CLI. You are running in non-interactive mode and have no way to ask."


def ev(kind: str, agent: str | None = None, **data: object) -> dict:
    record: dict = {"type": kind, "data": data, "id": "e", "timestamp": TS, "parentId": None}
    if agent:
        record["agentId"] = agent
    return record


def start(cwd: str = PROJECT) -> dict:
    return ev("session.start", sessionId=SID, context={"cwd": cwd, "branch": "main"})


def user(text: str, **extra: object) -> dict:
    return ev(
        "user.message", content=text, transformedContent=f"<current_datetime>{TS}</current_datetime>\n\n{text}", **extra
    )


def system(text: str = INTERACTIVE_PROMPT) -> dict:
    return ev("system.message", role="system", content=text)


def reply(text: str, tools: tuple[str, ...] = ()) -> dict:
    requests = [{"toolCallId": f"t-{name}", "name": name, "arguments": {}} for name in tools]
    return ev("assistant.message", content=text, toolRequests=requests)


def tool(name: str, **arguments: object) -> dict:
    return ev("tool.execution_start", toolCallId=f"t-{name}", toolName=name, arguments=arguments)


def parse(*records: object, state: dict | None = None) -> tuple[CopilotParser, list[str]]:
    parser = CopilotParser(f"/h/session-state/{SID}/events.jsonl", state or {})
    outcomes = [parser.feed((r if isinstance(r, str) else json.dumps(r)).encode()) for r in records]
    return parser, outcomes


def digest_of(*records: object):
    parser, _ = parse(*records)
    parts, _state, excluded = parser.finish()
    return (parts[0].to_digest() if parts else None), excluded


# -- the parser on hand-written events ------------------------------------------------------------


def test_typed_prompts_replies_tools_and_files():
    digest, excluded = digest_of(
        start(),
        user("rename the parser module"),
        system(),
        ev("assistant.turn_start", turnId="0"),
        reply("Renaming it.", ("edit",)),
        tool("edit", path="/work/demo-app/parser.py", old_str="a", new_str="b"),
        ev("tool.execution_complete", toolCallId="t-edit", success=True, fileEdits=[{"path": "/work/demo-app/x.py"}]),
        reply("Renamed."),
        user("no, you forgot the tests"),
        ev("assistant.turn_start", turnId="0"),
        tool("skill", skill="pytest-runner"),
        ev("skill.invoked", name="pytest-runner", content="# the skill body"),
        reply("Fixed the tests too."),
    )
    assert excluded == []
    assert digest.user_prompts == ["rename the parser module", "no, you forgot the tests"]
    assert digest.assistant_finals == ["Renamed.", "Fixed the tests too."]
    assert digest.tools_used == ["edit", "skill"]
    assert digest.skills_used == ["pytest-runner"]
    assert digest.files_touched == ["/work/demo-app/parser.py", "/work/demo-app/x.py"]
    assert (digest.project, digest.branch, digest.n_assistant_turns) == (PROJECT, "main", 3)
    assert [(f.polarity, f.prompt_index) for f in digest.feedback] == [("negative", 0)]


def test_the_typed_text_is_read_never_the_transformed_one_nor_the_system_prompt():
    digest, _ = digest_of(
        start(), user("hi"), system(INTERACTIVE_PROMPT + " <custom_instruction>X</custom_instruction>")
    )
    assert digest.user_prompts == ["hi"]
    assert "current_datetime" not in json.dumps(digest.to_dict())
    assert "custom_instruction" not in json.dumps(digest.to_dict())


def test_a_session_begun_headless_is_left_out():
    parser, outcomes = parse(start(), user("HEADLESS one-off"), system(HEADLESS_PROMPT), reply("done"))
    assert outcomes == [USED, HOLD, "headless_session", IGNORED]
    assert parser.finish()[0] == [] and parser.finish()[2] == [SID]


def test_headless_runs_on_an_interactive_session_are_not_counted_and_the_tui_counts_again():
    digest, excluded = digest_of(
        start(),
        user("first typed"),
        system(),
        reply("one"),
        ev("session.resume", context={"cwd": PROJECT}),
        user("HEADLESS through resume"),
        system(HEADLESS_PROMPT),
        reply("HEADLESS reply"),
        ev("session.resume", context={"cwd": PROJECT}),
        user("HEADLESS through continue"),  # no new system prompt: the run is as headless as the last
        ev("assistant.turn_start", turnId="0"),
        reply("HEADLESS reply"),
        ev("session.resume", context={"cwd": PROJECT}),
        user("typed again"),
        system(),
        reply("two"),
    )
    assert excluded == []
    assert digest.user_prompts == ["first typed", "typed again"]
    assert digest.assistant_finals == ["one", "two"]
    assert "HEADLESS" not in json.dumps(digest.to_dict())


def test_a_headless_session_later_resumed_in_the_tui_yields_its_typed_prompts():
    digest, excluded = digest_of(
        start(), user("HEADLESS"), system(HEADLESS_PROMPT), ev("session.resume"), user("typed"), system(), reply("ok")
    )
    assert excluded == [] and digest.user_prompts == ["typed"] and digest.assistant_finals == ["ok"]


def test_subagent_events_are_skipped():
    agent = "3e9e49f3-5aec-4676-837e-7c1334a6d58a"
    parser, outcomes = parse(
        start(),
        user("please delegate the count"),
        system(),
        reply("Delegating.", ("task",)),
        tool("task", prompt="Count", agent_type="explore"),
        ev("subagent.started", agent, toolCallId="t-task", agentName="explore"),
        ev("user.message", agent, content="SUBAGENT prompt", source=f"agent-{SID}"),
        ev("system.message", agent, role="system", content=HEADLESS_PROMPT),
        ev("assistant.message", agent, content="SUBAGENT answer", parentToolCallId="t-task"),
        ev("tool.execution_start", agent, toolName="grep", arguments={"path": "/x"}, parentToolCallId="t-task"),
        ev("assistant.message", content="stray", parentToolCallId="t-task"),
        ev("subagent.completed", agent, toolCallId="t-task"),
        reply("The helper counted 3."),
    )
    assert outcomes.count("subagent_event") == 1
    (part,), _state, _excluded = parser.finish()
    digest = part.to_digest()
    assert digest.user_prompts == ["please delegate the count"]
    assert digest.assistant_finals == ["The helper counted 3."]
    assert digest.tools_used == ["task"]
    assert "SUBAGENT" not in json.dumps(digest.to_dict())


@pytest.mark.parametrize(
    "extra",
    [{"source": "agent-other"}, {"source": "skill-pdf"}, {"isAutopilotContinuation": True}, {"agentMode": "shell"}],
)
def test_messages_a_person_did_not_type_are_not_prompts(extra):
    digest, _ = digest_of(start(), user("typed"), system(), reply("r1"), user("NOT TYPED", **extra), reply("r2"))
    assert digest.user_prompts == ["typed"]
    if "agentMode" not in extra:
        assert digest.assistant_finals == ["r1"]  # what answers an injected message is no reply to "typed"


def test_a_notification_closes_the_turn():
    digest, _ = digest_of(
        start(),
        user("typed"),
        system(),
        reply("r1"),
        ev("system.notification", content="<system_notification>"),
        reply("x"),
    )
    assert digest.assistant_finals == ["r1"] and digest.n_assistant_turns == 1


@pytest.mark.parametrize(
    "record, outcome",
    [
        ({"type": "user.message", "data": "x"}, "wrong_field_type"),
        ({"type": 3, "data": {}}, "wrong_field_type"),
        ({"type": "user.message", "data": {"content": ["a"]}}, "wrong_field_type"),
        ({"type": "assistant.message", "data": {"content": 5}}, "wrong_field_type"),
        ({"type": "tool.execution_start", "data": {"toolName": None}}, "wrong_field_type"),
        ({"type": "tool.execution_complete", "data": {"fileEdits": "x"}}, IGNORED),
        ({"type": "session.start", "data": {"context": "nope"}}, USED),
        ({"type": "session.start", "data": {"context": {"cwd": 5}}}, USED),
        ({"type": "session.usage_record", "data": {"usage": {"x": 1}}}, IGNORED),
        ({"type": "system.message", "data": {"role": "system", "content": 7}}, USED),
    ],
)
def test_line_outcomes(record, outcome):
    assert parse(record)[1] == [outcome]


def test_values_of_the_wrong_kind_inside_a_turn_are_passed_over():
    parser, outcomes = parse(
        start(),
        user("go"),
        system(),
        ev("tool.execution_start", toolName="edit", arguments="path=/x"),
        ev("tool.execution_start", toolName="create", arguments={"path": ["/x"]}),
        ev("tool.execution_complete", fileEdits=[1, "x", {"path": 5}, [], {"path": "/work/demo-app/ok.py"}]),
        ev("skill.invoked", name=["x"]),
        ev("user.message", content="later", source=3),
        "x" * 100,
    )
    (part,), _state, _excluded = parser.finish()
    assert part.tools_used == ["edit", "create"] and part.files_touched == ["/work/demo-app/ok.py"]
    assert part.skills_used == [] and part.user_prompts == ["go"]
    assert outcomes[-1] == "malformed_json"


def test_malformed_lines_are_counted_never_raised():
    parser, outcomes = parse(
        start(), '{"type": "user.message", "data": {"content": "cut', "[1, 2]", "\xff", user("still read"), system()
    )
    assert outcomes[1:4] == ["malformed_json", "not_object", "malformed_json"]
    (part,), _state, _excluded = parser.finish()
    assert part.user_prompts == ["still read"]


def test_a_prompt_waits_for_its_runs_mode_and_holds_the_checkpoint_meanwhile():
    parser, outcomes = parse(start(), user("typed?"), ev("hook.start", hookType="userPromptSubmitted"))
    assert outcomes == [USED, HOLD, HELD]
    parts, state, excluded = parser.finish()
    assert parts == [] and excluded == [] and state["prompts"] == 0  # read again from the prompt next time
    assert parse(user("a"), user("b"))[1] == [HOLD, HOLD]  # the second settles the first: the hold moves
    assert parse(user("a"), system(HEADLESS_PROMPT))[1] == [HOLD, "headless_session"]
    assert parse(user("a"), ev("assistant.turn_start"))[1] == [HOLD, IGNORED]


def test_a_session_in_a_replay_dir_holds_nothing():
    parser, outcomes = parse(user("a"), ev("session.context_changed", cwd="/tmp/skillopt-sleep-replay-x"))
    assert outcomes == [HOLD, "own_replay"] and parser.finish()[2] == [SID]


def test_a_checkpoint_between_a_prompt_and_its_system_prompt_waits_for_the_mode(tmp_path):
    events = tmp_path / "session-state" / SID / "events.jsonl"
    events.parent.mkdir(parents=True)
    state = tmp_path / "state"

    def harvested(*records: dict) -> list:
        with open(events, "a", encoding="utf-8") as handle:
            handle.writelines(json.dumps(r) + "\n" for r in records)
        result = harvest(PROJECT, source="copilot", homes={"copilot": tmp_path}, state_dir=state)
        result.commit()
        return [d.user_prompts for d in result.digests]

    assert harvested(start(), user("typed"), system(), reply("ok")) == [["typed"]]
    assert harvested(ev("session.resume", context={"cwd": PROJECT}), user("HEADLESS")) == [["typed"]]
    assert harvested(system(HEADLESS_PROMPT), reply("HEADLESS reply")) == [["typed"]]
    assert harvested(ev("session.resume", context={"cwd": PROJECT}), user("typed again")) == [["typed"]]
    assert harvested(system(), reply("ok")) == [["typed", "typed again"]]


def test_a_checkpoint_holds_no_text_and_resumes_the_mode():
    parser, _ = parse(start(), user("typed sk-secretsecret"), system(HEADLESS_PROMPT))
    _parts, state, _excluded = parser.finish()
    assert "secret" not in json.dumps(state) and state["mode"] == "headless"
    resumed, outcomes = parse(user("HEADLESS again"), ev("assistant.turn_start"), state=json.loads(json.dumps(state)))
    assert outcomes == [HOLD, "headless_turn"]


def test_discover_reads_each_session_dir_and_nothing_else(tmp_path):
    state = tmp_path / "session-state"
    (state / SID).mkdir(parents=True)
    (state / SID / "events.jsonl").write_text(json.dumps(start()) + "\n")
    (state / SID / "workspace.yaml").write_text("id: x\n")
    (state / ".session-operation-locks").mkdir()
    (state / "not-a-session").mkdir()
    skipped: Counter[str] = Counter()
    assert list(CopilotSource().discover(tmp_path, skipped)) == [state / SID / "events.jsonl"]
    assert list(CopilotSource().discover(tmp_path / "missing", skipped)) == [] and not skipped


def test_the_source_is_registered_and_reads_copilot_home(monkeypatch, tmp_path):
    assert isinstance(SOURCES["copilot"], CopilotSource)
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path))
    assert SOURCES["copilot"].default_home() == tmp_path


# -- the sessions the real CLI wrote --------------------------------------------------------------


def unpack(root: Path) -> Path:
    home = root / "copilot"
    for packed in (REAL / "copilot").rglob("*.jsonl.gz"):
        target = root / packed.relative_to(REAL).with_suffix("")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.decompress(packed.read_bytes()))
    return home


def session_id(key: str) -> str:
    return key.split("/")[-2]


def hide_secret(text: str) -> str:
    return text.replace(TRUTH["secret"], "[REDACTED:github_token]")


@pytest.fixture(scope="module")
def real_home(tmp_path_factory) -> Path:
    return unpack(tmp_path_factory.mktemp("copilot-real"))


@pytest.fixture(scope="module")
def real(real_home: Path):
    return harvest(TRUTH["project"], source="copilot", homes={"copilot": real_home})


def kinds(kind: str) -> list[str]:
    return sorted(key for key, facts in TRUTH["sessions"].items() if facts["kind"] == kind)


def test_the_real_fixtures_are_what_the_recorder_says():
    assert TRUTH["cli"] == "copilot" and TRUTH["version"]
    assert kinds("interactive") and kinds("headless")
    assert any(TRUTH["sessions"][key]["inline_subagents"] for key in kinds("interactive"))


def test_only_interactive_real_sessions_are_harvested(real):
    assert {d.session_id for d in real.digests} == {session_id(key) for key in kinds("interactive")}
    assert real.skipped.get("headless_session") == len(kinds("headless"))


@pytest.mark.parametrize("key", kinds("interactive"))
def test_real_typed_prompts_once_each_in_order_and_paired(real, key):
    (digest,) = [d for d in real.digests if d.session_id == session_id(key)]
    typed = TRUTH["sessions"][key]["typed"]
    assert digest.user_prompts == [hide_secret(p) for p in typed]
    assert digest.n_user_turns == len(typed)
    assert len(digest.assistant_finals) == len(typed)
    for prompt, final in zip(typed, digest.assistant_finals, strict=True):
        if prompt.startswith(("read ", "write ")):
            assert final.startswith("Done with "), (prompt, final)  # the reply after the tool came back
        elif "delegate" in prompt:
            assert final == "The helper counted 3 TODO markers."
        else:  # the scripted model echoes the prompt
            assert final == hide_secret("Done: " + " ".join(prompt.split())[:80])
    assert digest.tools_used == ["view", "create", "task"]
    assert digest.files_touched == [TRUTH["project"] + "/NOTES.md"]
    assert digest.project == TRUTH["project"] and digest.branch == "main"
    assert [(f.polarity, f.prompt_index) for f in digest.feedback][:1] == [("negative", 1)]


def test_nothing_injected_secret_or_from_a_subagent_in_any_digest(real):
    text = json.dumps([d.to_dict() for d in real.digests])
    assert TRUTH["secret"] not in text
    for marker in (*TRUTH["injected_markers"], "current_datetime", "headless", "Count the TODO markers"):
        assert marker not in text, marker
    assert all("3 TODO markers." not in d.assistant_finals for d in real.digests)  # the sub-agent's answer


def test_available_sources_sees_the_interactive_session(real_home):
    assert "copilot" in available_sources(TRUTH["project"], homes={"copilot": real_home})
    for key in kinds("headless"):
        assert CopilotSource().head_cwds(real_home.parent / key) == set()


@pytest.mark.parametrize("kind", ["interactive", "headless"])
def test_appending_line_by_line_gives_what_one_read_gives(real_home, tmp_path, kind):
    """Harvest a real session as it grows, a checkpoint after every line: a prompt whose run's
    system prompt is not written yet waits in the file (``base.HOLD``), never counted too early."""
    key = kinds(kind)[0]
    whole = (real_home.parent / key).read_bytes()
    lines = whole.splitlines(keepends=True)
    cuts = range(1, len(lines))
    home = tmp_path / "copilot"
    target = home / "session-state" / session_id(key) / "events.jsonl"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"")
    done = 0
    for cut in [*cuts, len(lines)]:
        with open(target, "ab") as handle:
            handle.write(b"".join(lines[done:cut]))
        done = cut
        result = harvest(TRUTH["project"], source="copilot", homes={"copilot": home}, state_dir=tmp_path / "state")
        result.commit()
    pieced = [d.to_dict() for d in result.digests]
    shutil.rmtree(tmp_path / "state")
    once = [d.to_dict() for d in harvest(TRUTH["project"], source="copilot", homes={"copilot": home}).digests]
    assert pieced == once and len(once) == (kind == "interactive")
