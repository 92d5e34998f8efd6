"""The pinned real clients are where the real-client tests expect them."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.support import provider_env
from tests.support.anthropic_server import FakeAnthropic
from tests.support.http_base import Drop
from tests.support.openai_server import FakeOpenAI

from tests.support.real_clients import RELEASES, client_env, real_cli, version_of

pytestmark = pytest.mark.real_clis  # drives the real claude / codex CLIs (scripts/install_real_clis.sh)


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("name", ["claude", "codex"])
def test_real_cli_reports_the_pinned_version(name, release, tmp_path):
    out = subprocess.run(
        [real_cli(name, release), "--version"], capture_output=True, text=True, timeout=60, env=client_env(tmp_path)
    )
    assert out.returncode == 0, out.stderr
    assert version_of(name, release) in out.stdout


# -- the real CLIs against the fake providers (tests/support) ---------------------------------------


def test_claude_print_completes_one_streamed_turn_against_the_fake(tmp_path):
    claude = real_cli("claude")
    with FakeAnthropic(key="sk-ant-fake-" + "k" * 20) as fake:
        fake.responder = lambda body: "pong from the fake"
        work = tmp_path / "work"
        work.mkdir()
        out = subprocess.run(
            [claude, "-p", "ping", "--output-format", "json"],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=120,
            env=provider_env.claude_env(tmp_path, fake),
        )
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["result"] == "pong from the fake"
        turns = fake.seen("/v1/messages")
        assert turns and all(r.body.get("stream") is True for r in turns)
        assert turns[0].headers.get("x-api-key") == fake.key
        assert fake.unknown() == []


def test_codex_exec_completes_one_streamed_turn_and_survives_a_dropped_stream(tmp_path):
    codex = real_cli("codex")
    with FakeOpenAI(key="sk-fake-" + "k" * 20) as fake:
        fake.responder = lambda body: "pong from the fake"
        fake.push(Drop(after=3))  # the first stream is cut: codex must reconnect
        work = tmp_path / "work"
        work.mkdir()
        out = subprocess.run(
            [codex, "exec", "--json", "--skip-git-repo-check", "ping"],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=120,
            env=provider_env.codex_env(tmp_path, fake),
        )
        assert out.returncode == 0, out.stderr
        events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        kinds = [e["type"] for e in events]
        assert "turn.completed" in kinds
        assert any(e["type"] == "error" and "Reconnecting" in e["message"] for e in events)
        assert [
            e["item"]["text"] for e in events if e["type"] == "item.completed" and e["item"]["type"] == "agent_message"
        ] == ["pong from the fake"]
        turns = fake.seen("/v1/responses")
        assert len(turns) == 2 and all(r.body.get("stream") is True for r in turns)
        assert turns[0].headers.get("authorization") == f"Bearer {fake.key}"
        assert fake.unknown() == []
