"""The pi source: its parser on hand-written entries, the exact harvest of sessions the real pi CLI
wrote (``scripts/record_pi.py``; ``tests/fixtures/real/pi_ground_truth.json``), and a fresh
recording with the real CLI."""

from __future__ import annotations

import gzip
import json
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from skillopt_sleep.sources import harvest
from skillopt_sleep.sources.base import MAX_PROMPT_CHARS, clip
from skillopt_sleep.sources.pi import PiParser, PiSource, session_id_for, skill_prompt

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
TRUTH = json.loads((REAL / "pi_ground_truth.json").read_text(encoding="utf-8"))
PROJECT = "/work/demo-app"
SID = "01a22196-46ef-75d1-8aeb-da0fa8658ba0"
START = "2026-11-22T10:00:00.000Z"


def header(cwd: str = PROJECT, ts: str = START, **extra: object) -> dict:
    return {"type": "session", "version": 3, "id": SID, "timestamp": ts, "cwd": cwd, **extra}


def user(text: object, ts: str = "2026-11-22T10:00:30.000Z", **extra: object) -> dict:
    content = [{"type": "text", "text": text}] if isinstance(text, str) else text
    return {
        "type": "message",
        "id": "u1",
        "parentId": None,
        "timestamp": ts,
        "message": {"role": "user", "content": content},
        **extra,
    }


def assistant(*blocks: dict, ts: str = "2026-11-22T10:00:35.000Z") -> dict:
    message = {"role": "assistant", "content": list(blocks), "stopReason": "stop"}
    return {"type": "message", "id": "a1", "parentId": "u1", "timestamp": ts, "message": message}


def text(value: str) -> dict:
    return {"type": "text", "text": value}


def tool(name: str, **arguments: object) -> dict:
    return {"type": "toolCall", "id": "t1", "name": name, "arguments": arguments}


def write_session(home: Path, *records: object, name: str = f"2026-11-22T10-00-00-000Z_{SID}.jsonl") -> Path:
    path = home / "sessions" / "--work-demo-app--" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)
    path.write_text(lines, encoding="utf-8")
    return path


def digests(home: Path, project: str = PROJECT):
    result = harvest(project, source="pi", homes={"pi": home})
    return result, {d.session_id: d for d in result.digests}


def parse(*records: object, state: dict | None = None):
    parser = PiParser(f"/x/2026-11-22T10-00-00-000Z_{SID}.jsonl", state or {})
    outcomes = [parser.feed(json.dumps(r).encode() if not isinstance(r, bytes) else r) for r in records]
    return parser, outcomes


# -- the parser on hand-written entries ------------------------------------------------------------


def test_prompts_replies_tools_and_files_are_read(tmp_path):
    write_session(
        tmp_path,
        header(),
        {"type": "model_change", "id": "m", "parentId": None, "timestamp": START, "provider": "x", "modelId": "y"},
        user("fix the retry loop"),
        assistant(text("Reading."), tool("read", path="src/app.py")),
        {"type": "message", "timestamp": START, "message": {"role": "toolResult", "toolName": "read", "content": []}},
        assistant(text("Fixed it."), tool("edit", path="src/app.py"), tool("bash", command="pytest")),
        user("no, you forgot the ticket number again", ts="2026-11-22T10:01:00.000Z"),
        assistant(text("Added ACME-1."), ts="2026-11-22T10:01:05.000Z"),
    )
    _, found = digests(tmp_path)
    digest = found[SID]
    assert digest.user_prompts == ["fix the retry loop", "no, you forgot the ticket number again"]
    assert digest.assistant_finals == ["Fixed it.", "Added ACME-1."]
    assert digest.tools_used == ["read", "edit", "bash"]
    assert digest.files_touched == ["src/app.py"]
    assert digest.project == PROJECT
    assert [(f.polarity, f.prompt_index) for f in digest.feedback] == [("negative", 0)]


def test_a_first_prompt_right_after_the_header_is_a_headless_run(tmp_path):
    write_session(tmp_path, header(), user("HEADLESS question", ts="2026-11-22T10:00:00.120Z"), assistant(text("ok")))
    result, found = digests(tmp_path)
    assert found == {}
    assert result.skipped["headless_session"] == 1


def test_a_headless_session_stays_out_when_continued_later(tmp_path):
    path = write_session(tmp_path, header(), user("HEADLESS one", ts="2026-11-22T10:00:00.100Z"), assistant(text("ok")))
    harvest(PROJECT, source="pi", homes={"pi": tmp_path}, state_dir=tmp_path / "state").commit()
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(user("HEADLESS two", ts="2026-11-22T11:00:00.000Z")) + "\n")
    result = harvest(PROJECT, source="pi", homes={"pi": tmp_path}, state_dir=tmp_path / "state")
    assert result.digests == []
    assert result.bytes_read < path.stat().st_size  # only the appended line was read


def test_a_resumed_session_keeps_counting_prompts_in_order(tmp_path):
    path = write_session(tmp_path, header(), user("first"), assistant(text("one")))
    state = tmp_path / "state"
    harvest(PROJECT, source="pi", homes={"pi": tmp_path}, state_dir=state).commit()
    with open(path, "a", encoding="utf-8") as handle:
        for record in (user("second", ts="2026-11-23T09:00:00.100Z"), assistant(text("two"))):
            handle.write(json.dumps(record) + "\n")
    result = harvest(PROJECT, source="pi", homes={"pi": tmp_path}, state_dir=state)
    [digest] = result.digests
    assert digest.user_prompts == ["first", "second"]
    assert digest.assistant_finals == ["one", "two"]


def test_a_skill_prompt_is_what_was_typed_and_notes_the_skill():
    expanded = '<skill name="release-notes" location="/h/SKILL.md">\nReferences are relative to /h.\n\nBODY\n</skill>'
    parser, _ = parse(header(), user(expanded + "\n\nfor v1.3"), assistant(text("ok")), user(expanded))
    [builder], _, _ = parser.finish()
    assert builder.user_prompts == ["/skill:release-notes for v1.3", "/skill:release-notes"]
    assert builder.skills_used == ["release-notes"]


def test_a_fork_skips_the_entries_it_copied():
    copied = user("COPIED prompt", ts="2026-11-21T10:00:00.000Z")
    parser, outcomes = parse(
        header(parentSession="/h/old.jsonl"),
        copied,
        assistant(text("old"), ts="2026-11-21T10:00:05.000Z"),
        user("new prompt", ts="2026-11-22T10:00:40.000Z"),
        assistant(text("new"), ts="2026-11-22T10:00:45.000Z"),
    )
    [builder], _, _ = parser.finish()
    assert builder.user_prompts == ["new prompt"]
    assert builder.assistant_finals == ["new"]


def test_a_compaction_closes_the_turn():
    parser, _ = parse(
        header(),
        user("first"),
        {"type": "compaction", "id": "c", "timestamp": START, "summary": "SUMMARY"},
        assistant(text("after compaction")),
    )
    [builder], _, _ = parser.finish()
    assert builder.assistant_finals == [""]


def test_hostile_entries_are_counted_not_raised(tmp_path):
    write_session(
        tmp_path,
        header(),
        '{"type": "message", "message": {"role": "user", "content": [',
        "not json at all",
        {"type": 7},
        {"type": "message", "message": "a string"},
        {"type": "message", "message": {"role": "user", "content": 12}},
        {"type": "message", "message": {"role": "assistant", "content": {"a": 1}}},
        {"type": "message", "message": {"role": ["x"]}},
        user([{"type": "text", "text": 5}, "x", None]),
        user("still read"),
        assistant(text("fine"), {"type": "toolCall", "name": 3}, tool("write", path=["x"])),
    )
    result, found = digests(tmp_path)
    assert found[SID].user_prompts == ["still read"]
    assert found[SID].assistant_finals == ["fine"]
    assert result.skipped["malformed_json"] >= 2
    assert result.skipped["wrong_field_type"] >= 4


def test_other_projects_and_stray_files_are_left_out(tmp_path):
    write_session(tmp_path, header(cwd="/elsewhere"), user("OTHER PROJECT"), assistant(text("x")))
    (tmp_path / "sessions" / "notes.jsonl").write_text("{}\n")  # not in a per-cwd dir
    result, found = digests(tmp_path)
    assert found == {}
    assert PiSource().head_cwds(next((tmp_path / "sessions").glob("*/*.jsonl"))) == {"/elsewhere"}


def test_session_id_comes_from_the_file_name():
    assert session_id_for(f"/s/--x--/2026-11-22T10-00-00-000Z_{SID.upper()}.jsonl") == SID
    assert session_id_for("/s/--x--/odd.jsonl") == "odd"


# -- the real pi CLI's sessions --------------------------------------------------------------------


def _unpack(root: Path) -> Path:
    for packed in (REAL / "pi").rglob("*.jsonl.gz"):
        target = root / "sessions" / packed.relative_to(REAL / "pi").with_suffix("")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.decompress(packed.read_bytes()))
    return root


def _session_id(key: str) -> str:
    return session_id_for(key)


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    home = _unpack(tmp_path_factory.mktemp("pi"))
    result = harvest(TRUTH["project"], source="pi", homes={"pi": home})
    return result, {d.session_id: d for d in result.digests}


def test_the_fixtures_are_of_the_recorded_cli_and_cover_both_kinds():
    assert (TRUTH["cli"], TRUTH["version"]) == ("pi", "0.73.1")
    assert {facts["kind"] for facts in TRUTH["sessions"].values()} == {"interactive", "headless"}


def test_real_sessions_only_interactive_ones_harvested(real):
    _, found = real
    expected = {_session_id(k) for k, facts in TRUTH["sessions"].items() if facts["kind"] == "interactive"}
    assert set(found) == expected


def test_real_sessions_typed_prompts_once_in_order_replies_paired(real):
    _, found = real
    for key, facts in TRUTH["sessions"].items():
        if facts["kind"] != "interactive":
            continue
        digest = found[_session_id(key)]
        assert digest.user_prompts == [clip(t, MAX_PROMPT_CHARS) for t in facts["typed"]]
        assert digest.n_user_turns == len(facts["typed"])
        assert len(digest.assistant_finals) == len(digest.user_prompts)
        assert all(reply.startswith("Done") for reply in digest.assistant_finals)
        assert digest.tools_used == ["read", "write"]
        assert digest.files_touched == ["src/app.py", "NOTES.md"]
        assert digest.skills_used == ["release-notes"]
        assert any(f.polarity == "negative" and "forgot the ticket" in f.text for f in digest.feedback)


def test_real_sessions_nothing_injected_and_the_secret_is_gone(real):
    _, found = real
    text = json.dumps([d.to_dict() for d in found.values()], default=str)
    for marker in ("USER-PI-AGENTS-MD-MARKER", "References are relative", "headless", "## Goal", "<skill"):
        assert marker not in text, marker
    assert TRUTH["secret"] not in text
    assert TRUTH["secret"][4:] not in text


# -- a fresh session with the real CLI ---------------------------------------------------------------


@pytest.mark.real_clis
def test_a_fresh_real_pi_session_is_harvested(tmp_path):
    from scripts.record_pi import pi_model
    from tests.support.anthropic_server import FakeAnthropic
    from tests.support.pi_env import pi_cli, pi_env

    pi = pi_cli()
    if not shutil.which("tmux"):
        pytest.skip("tmux is not installed")
    from tests.support.tui import Tmux, settle, wait_until

    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("# TODO\n")
    fake = FakeAnthropic(key="sk-ant-api03-" + secrets.token_urlsafe(20)).start()
    fake.responder = pi_model
    try:
        env = pi_env(tmp_path / "user", fake)
        typed = ["read src/app.py please", "no - you forgot the ticket number again"]
        tui = Tmux(f"skillopt-test-pi-{secrets.token_hex(4)}", [pi], project, env)
        try:
            wait_until("the pi prompt", lambda: "claude-sonnet-4-5" in tui.screen(), 60)
            time.sleep(4)  # keys typed while the TUI still starts can be lost
            for prompt in typed:
                before = len(fake.requests)
                tui.type_line(prompt)
                wait_until("a model call", lambda b=before: len(fake.requests) > b)
                settle(fake, quiet=2.0)
            tui.type_line("/quit")
            wait_until("pi to exit", lambda: not tui.alive(), 30)
        finally:
            tui.kill()
        subprocess.run(
            [pi, "-p", "a headless question"],
            cwd=project,
            env=env,
            capture_output=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=True,
        )
    finally:
        fake.stop()
    home = Path(env["HOME"]) / ".pi" / "agent"
    assert len(list((home / "sessions").glob("*/*.jsonl"))) == 2
    result = harvest(str(project), source="pi", homes={"pi": home})
    [digest] = result.digests
    assert digest.user_prompts == typed
    assert digest.tools_used == ["read"]
    assert result.skipped["headless_session"] == 1


def test_a_flat_session_dir_is_read_too(tmp_path):
    path = write_session(tmp_path, header(), user("from a flat dir"), assistant(text("ok")))
    path.rename(tmp_path / "sessions" / path.name)
    _, found = digests(tmp_path)
    assert found[SID].user_prompts == ["from a flat dir"]


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ('<skill name="s" location="/x">\nBODY\n</skill>', ("s", "/skill:s")),
        ('<skill name="s" location="/x">\n\n</skill>\n\nargs here', ("s", "/skill:s args here")),
        ('<skill name="s" location="/x">\na\n</skill>b\n</skill>\n\nargs', ("s", "/skill:s args")),
        ('<skill name="s" location="/x">\n</skill>', None),
        ('<skill name="s" location="/x">\nBODY\n</skill> trailing', None),
        ("plain words", None),
    ],
)
def test_skill_blocks_are_read_as_pi_reads_them(stored, expected):
    assert skill_prompt(stored) == expected


def test_a_huge_skill_like_prompt_is_read_in_linear_time():
    text = '<skill name="s" location="/x">\n' + "\n</skill>x" * 200_000
    started = time.monotonic()
    assert skill_prompt(text) is None
    assert time.monotonic() - started < 2


def test_available_sources_names_pi_for_interactive_sessions_only(tmp_path):
    from skillopt_sleep.sources import available_sources

    headless = tmp_path / "headless"
    write_session(headless, header(), user("HEADLESS", ts="2026-11-22T10:00:00.100Z"), assistant(text("x")))
    assert "pi" not in available_sources(PROJECT, homes={"pi": headless})
    typed = tmp_path / "typed"
    write_session(typed, header(), user("typed"), assistant(text("x")))
    assert "pi" in available_sources(PROJECT, homes={"pi": typed})
