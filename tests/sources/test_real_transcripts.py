"""Genuine transcripts written by the real Claude Code 2.1.328 and Codex 0.169.0 CLIs
(``scripts/record_transcripts.py``; ``tests/fixtures/real/ground_truth.json`` says what a person
typed into each session). Each one must be harvested exactly: typed prompts once each and in
order, nothing injected, headless and sub-agent threads left out, replies paired by turn.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from skillopt_sleep.sources import harvest

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
TRUTH = json.loads((REAL / "ground_truth.json").read_text(encoding="utf-8"))
# the recorder's scripted models answer a plain prompt with "Done: <prompt>"
ECHO = "Done: "
# markers of the user's own CLAUDE.md / AGENTS.md, and texts the harness (not the person) sent
INJECTED = (
    "USER-CLAUDE-MD-MARKER",
    "USER-AGENTS-MD-MARKER",
    "AGENTS.md instructions",
    "environment_context",
    "task-notification",
    "subagent_notification",
    "headless",
    "CONTEXT CHECKPOINT",
    "<summary>",
    "reported back",
    "This session is being continued",
)


def session_id(key: str) -> str:
    name = key.rsplit("/", 1)[-1].removesuffix(".jsonl")
    return name[-36:] if name.startswith("rollout-") else name


@pytest.fixture(scope="module")
def homes(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("real")
    for packed in REAL.rglob("*.jsonl.gz"):
        target = root / packed.relative_to(REAL).with_suffix("")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.decompress(packed.read_bytes()))
    return root


@pytest.fixture(scope="module")
def digests(homes: Path) -> dict[str, object]:
    result = harvest(TRUTH["project"], claude_home=homes / "claude", codex_home=homes / "codex")
    return {d.session_id: d for d in result.digests}


def sessions(kind: str) -> list[str]:
    return sorted(key for key, facts in TRUTH["sessions"].items() if facts["kind"] == kind)


def test_the_fixtures_cover_every_kind_of_session_from_both_clients():
    keys = TRUTH["sessions"]
    for client in ("claude", "codex"):
        kinds = {facts["kind"] for key, facts in keys.items() if key.startswith(client + "/")}
        assert kinds == {"interactive", "headless", "subagent"}, client


def test_only_interactive_sessions_are_harvested(digests):
    assert set(digests) == {session_id(key) for key in sessions("interactive")}


@pytest.mark.parametrize("key", sessions("interactive"))
def test_typed_prompts_once_each_in_order(digests, key):
    digest = digests[session_id(key)]
    assert digest.user_prompts == TRUTH["sessions"][key]["typed"]
    assert digest.n_user_turns == len(TRUTH["sessions"][key]["typed"])


@pytest.mark.parametrize("key", sessions("interactive"))
def test_nothing_injected_and_replies_paired_by_turn(digests, key):
    digest = digests[session_id(key)]
    text = json.dumps(digest.to_dict())
    for marker in INJECTED:
        assert marker not in text, marker
    assert len(digest.assistant_finals) == len(digest.user_prompts)
    for prompt, reply in zip(digest.user_prompts, digest.assistant_finals, strict=True):
        if reply.startswith(ECHO):
            assert reply == ECHO + " ".join(prompt.split())[:80]
        else:  # a delegating turn: its last text, after the tool came back
            assert reply == "The helper is on it.", (prompt, reply)
