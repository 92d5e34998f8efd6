"""A night on a person's CLI login leaves their own ``~/.claude``, ``~/.claude.json`` and
``~/.codex`` byte-identical, with the REAL ``claude`` and ``codex`` of each release in
scripts/real_clis.versions, against the fake providers.

The person has used each CLI before (a plain ``claude -p`` / ``codex exec`` runs first, as theirs
would), then the night replays several calls; every file's path, mode and bytes, and which files
exist, are compared before and after.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from tests.support import provider_env
from tests.support.anthropic_server import FakeAnthropic
from tests.support.openai_server import FakeOpenAI
from tests.support.real_clients import RELEASES, real_cli
from tests.support.tree_hash import differences, fingerprint

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.claude_cli import ClaudeCliBackend
from skillopt_sleep.backends.codex_cli import CodexCliBackend

CALLS = 3
DOCUMENT = "## Rules\n- Keep every answer under 300 characters.\n"


def person_trees(home: Path, codex_home: Path) -> tuple[Path, ...]:
    return home / ".claude", home / ".claude.json", codex_home


def use(env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Make ``env`` this process's environment (the backend passes it on to the CLI)."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "CODEX_API_KEY",
                 "CLAUDE_CONFIG_DIR", "CLAUDE_SECURESTORAGE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))


def replay_night(backend: ClaudeCliBackend | CodexCliBackend) -> None:
    for index in range(CALLS):
        completion = backend.complete(Request(purpose="attempt", system=DOCUMENT, user=f"task {index}"))
        assert completion.ok and completion.text == f"answer {index}", completion.error_message


def answer_by_task(body: dict) -> str:
    text = str(body)
    return next((f"answer {i}" for i in range(CALLS) if f"task {i}" in text), "warm-up")


@pytest.mark.parametrize("release", RELEASES)
def test_claude_night_leaves_the_persons_trees_byte_identical(release, tmp_path, monkeypatch):
    claude = real_cli("claude", release)
    with FakeAnthropic(key="sk-ant-fake-" + "k" * 24) as fake:
        fake.responder = answer_by_task
        env = provider_env.claude_env(tmp_path, fake)
        home, codex_home = Path(env["HOME"]), Path(env["CODEX_HOME"])
        own = subprocess.run([claude, "-p", "hello"], cwd=home, env=env, capture_output=True, text=True,
                             timeout=120)  # the person's own use, before any night
        assert own.returncode == 0, own.stderr
        use(env, monkeypatch, tmp_path)
        before = fingerprint(*person_trees(home, codex_home))
        replay_night(ClaudeCliBackend(command=claude, timeout=120))
        after = fingerprint(*person_trees(home, codex_home))
    assert differences(before, after) == []
    assert len(fake.seen("/v1/messages")) >= CALLS + 1


@pytest.mark.parametrize("release", RELEASES)
def test_codex_night_leaves_the_persons_trees_byte_identical(release, tmp_path, monkeypatch):
    codex = real_cli("codex", release)
    with FakeOpenAI(key="sk-fake-" + "k" * 24) as fake:
        fake.responder = answer_by_task
        env = provider_env.codex_env(tmp_path, fake)
        home, codex_home = Path(env["HOME"]), Path(env["CODEX_HOME"])
        (home / ".claude").mkdir()
        (home / ".claude.json").write_text("{}", encoding="utf-8")
        own = subprocess.run([codex, "exec", "--skip-git-repo-check", "--json", "hello"], cwd=home, env=env,
                             capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert own.returncode == 0, own.stderr
        use(env, monkeypatch, tmp_path)
        before = fingerprint(*person_trees(home, codex_home))
        replay_night(CodexCliBackend(command=codex, timeout=120))
        after = fingerprint(*person_trees(home, codex_home))
    assert differences(before, after) == []
    assert os.path.exists(codex_home / "config.toml")
