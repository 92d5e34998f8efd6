"""A night on a person's CLI login leaves their own ``~/.claude``, ``~/.claude.json`` and
``~/.codex`` byte-identical, with the REAL ``claude`` and ``codex`` of each release in
scripts/real_clis.versions, against the fake providers.

The person has used each CLI before (a plain ``claude -p`` / ``codex exec`` runs first, as theirs
would), then the night replays several calls; every file's path, mode and bytes, and which files
exist, are compared before and after.

A subscription login whose access token expired is refreshed during the night: Claude Code through
a fake token endpoint behind an HTTPS proxy (tests/support/token_proxy.py), Codex through
``CODEX_REFRESH_TOKEN_URL_OVERRIDE``. Exactly one refresh serves the whole night, every model call
carries the new token, and the person's own credentials file holds the new tokens afterwards (an
OAuth refresh replaces the refresh token: a stale copy would be a lost login); it is the only file
that changed.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.support import provider_env
from tests.support.anthropic_server import FakeAnthropic
from tests.support.openai_server import FakeOpenAI
from tests.support.real_clients import RELEASES, real_cli
from tests.support.token_proxy import TokenProxy
from tests.support.tree_hash import differences, fingerprint

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.claude_cli import ClaudeCliBackend
from skillopt_sleep.backends.codex_cli import CodexCliBackend

pytestmark = pytest.mark.real_clis  # drives the real claude / codex CLIs (scripts/install_real_clis.sh)

CALLS = 3
DOCUMENT = "## Rules\n- Keep every answer under 300 characters.\n"


def person_trees(home: Path, codex_home: Path) -> tuple[Path, ...]:
    return home / ".claude", home / ".claude.json", codex_home


def use(env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Make ``env`` this process's environment (the backend passes it on to the CLI)."""
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "CODEX_API_KEY",
        "CLAUDE_CONFIG_DIR",
        "CLAUDE_SECURESTORAGE_CONFIG_DIR",
    ):
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
        own = subprocess.run(
            [claude, "-p", "hello"], cwd=home, env=env, capture_output=True, text=True, timeout=120
        )  # the person's own use, before any night
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
        own = subprocess.run(
            [codex, "exec", "--skip-git-repo-check", "--json", "hello"],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert own.returncode == 0, own.stderr
        use(env, monkeypatch, tmp_path)
        before = fingerprint(*person_trees(home, codex_home))
        replay_night(CodexCliBackend(command=codex, timeout=120))
        after = fingerprint(*person_trees(home, codex_home))
    assert differences(before, after) == []
    assert os.path.exists(codex_home / "config.toml")


# -- a subscription login refreshed during the night -------------------------------------------------

OLD_ACCESS, OLD_REFRESH = "sk-ant-oat01-old-" + "a" * 40, "sk-ant-ort01-old-" + "b" * 40
NEW_ACCESS, NEW_REFRESH = "sk-ant-oat01-new-" + "c" * 40, "sk-ant-ort01-new-" + "d" * 40


def subscription_home(tmp_path: Path, fake: FakeAnthropic, custom_dir: bool) -> tuple[dict[str, str], Path]:
    """A person logged in to Claude Code with a subscription whose access token has expired, with
    the configuration in ``~/.claude`` (and ``~/.claude.json``) or in their own ``CLAUDE_CONFIG_DIR``;
    returns the environment and that configuration directory."""
    env = provider_env.claude_env(tmp_path, fake)
    del env["ANTHROPIC_API_KEY"]
    home = Path(env["HOME"])
    config_dir, state_file = home / ".claude", home / ".claude.json"
    if custom_dir:
        config_dir = home / "claude-work"
        env["CLAUDE_CONFIG_DIR"] = str(config_dir)
        config_dir.mkdir()
        state_file = state_file.rename(config_dir / ".claude.json")
    state = json.loads(state_file.read_text(encoding="utf-8"))
    state.pop("customApiKeyResponses")
    state["oauthAccount"] = {
        "accountUuid": "0b6c7a52-0000-4000-8000-000000000001",
        "emailAddress": "a@example.com",
        "organizationUuid": "0b6c7a52-0000-4000-8000-000000000002",
    }
    state_file.write_text(json.dumps(state, indent=2), encoding="utf-8")
    config_dir.mkdir(exist_ok=True)
    credentials = config_dir / ".credentials.json"
    credentials.write_text(
        json.dumps(
            {
                "claudeAiOauth": {
                    "accessToken": OLD_ACCESS,
                    "refreshToken": OLD_REFRESH,
                    "expiresAt": int(time.time() - 3600) * 1000,
                    "scopes": ["user:inference", "user:profile", "user:sessions:claude_code"],
                    "subscriptionType": "max",
                }
            }
        ),
        encoding="utf-8",
    )
    credentials.chmod(0o600)
    return env, config_dir


@pytest.mark.parametrize("custom_dir", [False, True], ids=["home-claude", "claude-config-dir"])
@pytest.mark.parametrize("release", RELEASES)
def test_claude_refreshes_the_persons_own_login_not_a_copy(release, custom_dir, tmp_path, monkeypatch):
    claude = real_cli("claude", release)
    with (
        FakeAnthropic(key=NEW_ACCESS) as fake,
        TokenProxy(
            tmp_path,
            {
                "access_token": NEW_ACCESS,
                "refresh_token": NEW_REFRESH,
                "expires_in": 28800,
                "scope": "user:inference user:profile user:sessions:claude_code",
                "token_type": "Bearer",
            },
        ) as proxy,
    ):
        fake.responder = answer_by_task
        env, config_dir = subscription_home(tmp_path, fake, custom_dir)
        env.update(proxy.env())
        home, codex_home = Path(env["HOME"]), Path(env["CODEX_HOME"])
        use(env, monkeypatch, tmp_path)
        trees = (*person_trees(home, codex_home), config_dir)
        before = fingerprint(*trees)
        replay_night(ClaudeCliBackend(command=claude, timeout=120))
        after = fingerprint(*trees)
    (refresh,) = proxy.token_requests()  # one refresh for the whole night, then the new token
    assert refresh.body["grant_type"] == "refresh_token" and refresh.body["refresh_token"] == OLD_REFRESH
    auth = [r.headers.get("authorization") for r in fake.seen("/v1/messages")]
    assert auth and set(auth) == {f"Bearer {NEW_ACCESS}"}
    credentials = config_dir / ".credentials.json"
    stored = json.loads(credentials.read_text(encoding="utf-8"))["claudeAiOauth"]
    assert stored["accessToken"] == NEW_ACCESS and stored["refreshToken"] == NEW_REFRESH  # not stale
    assert differences(before, after) == [f"changed {credentials}"]  # and nothing else


def _jwt(claims: dict) -> str:
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


class _TokenEndpoint(ThreadingHTTPServer):
    """``POST /oauth/token`` answering ``reply``; records each request's JSON body."""

    def __init__(self, reply: dict):
        self.reply, self.bodies = reply, []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                endpoint.bodies.append(json.loads(raw or b"{}"))
                payload = json.dumps(endpoint.reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/oauth/token"


@pytest.mark.parametrize("release", RELEASES)
def test_codex_refreshed_login_reaches_the_persons_auth_json(release, tmp_path, monkeypatch):
    codex = real_cli("codex", release)
    now = int(time.time())
    auth_claims = {"chatgpt_plan_type": "pro", "chatgpt_user_id": "user-1", "chatgpt_account_id": "acct-1"}
    id_token = _jwt({"email": "a@example.com", "exp": now + 3600, "https://api.openai.com/auth": auth_claims})
    old_access = _jwt({"exp": now - 3600, "n": "old", "https://api.openai.com/auth": auth_claims})
    new_access = _jwt({"exp": now + 3600, "n": "new", "https://api.openai.com/auth": auth_claims})
    endpoint = _TokenEndpoint({"id_token": id_token, "access_token": new_access, "refresh_token": "rt-new"})
    try:
        with FakeOpenAI(key=new_access) as fake:
            fake.responder = answer_by_task
            env = provider_env.codex_env(tmp_path, fake, CODEX_REFRESH_TOKEN_URL_OVERRIDE=endpoint.url)
            home, codex_home = Path(env["HOME"]), Path(env["CODEX_HOME"])
            (home / ".claude").mkdir()
            (home / ".claude.json").write_text("{}", encoding="utf-8")
            config = codex_home / "config.toml"
            config.write_text(
                config.read_text(encoding="utf-8").replace(
                    'env_key = "FAKE_OPENAI_KEY"', "requires_openai_auth = true"
                ),
                encoding="utf-8",
            )
            auth = codex_home / "auth.json"
            auth.write_text(
                json.dumps(
                    {
                        "OPENAI_API_KEY": None,
                        "tokens": {
                            "id_token": id_token,
                            "access_token": old_access,
                            "refresh_token": "rt-old",
                            "account_id": "acct-1",
                        },
                        "last_refresh": "2026-01-01T00:00:00Z",
                    }
                ),
                encoding="utf-8",
            )
            auth.chmod(0o600)
            use(env, monkeypatch, tmp_path)
            before = fingerprint(*person_trees(home, codex_home))
            replay_night(CodexCliBackend(command=codex, timeout=120))
            after = fingerprint(*person_trees(home, codex_home))
    finally:
        endpoint.shutdown()
        endpoint.server_close()
    (refresh,) = endpoint.bodies  # one refresh, kept for the rest of the night
    assert refresh["grant_type"] == "refresh_token" and refresh["refresh_token"] == "rt-old"
    auth_headers = {r.headers.get("authorization") for r in fake.seen("/v1/responses")}
    assert auth_headers == {f"Bearer {new_access}"}
    stored = json.loads(auth.read_text(encoding="utf-8"))["tokens"]
    assert stored["access_token"] == new_access and stored["refresh_token"] == "rt-new"  # not stale
    assert differences(before, after) == [f"changed {auth}"]  # and nothing else


# -- a whole night through the engine ----------------------------------------------------------------


@pytest.mark.parametrize("release", RELEASES)
def test_a_whole_claude_cli_night_leaves_the_persons_trees_byte_identical(release, tmp_path):
    """``skillopt-sleep run`` on the person's own Claude Code sessions, every call through the
    real ``claude``: harvest reads ``~/.claude/projects``, then the night's calls run up to its cap."""
    from skillopt_sleep.commands.demo import build_demo_home

    claude = real_cli("claude", release)
    with FakeAnthropic(key="sk-ant-fake-" + "k" * 24) as fake:
        env = provider_env.claude_env(tmp_path, fake)
        home, codex_home = Path(env["HOME"]), Path(env["CODEX_HOME"])
        own = subprocess.run([claude, "-p", "hello"], cwd=home, env=env, capture_output=True, text=True, timeout=120)
        assert own.returncode == 0, own.stderr
        engine_home, demo_claude, project = build_demo_home(tmp_path / "demo")
        shutil.copytree(demo_claude / "projects", home / ".claude" / "projects", dirs_exist_ok=True)
        before = fingerprint(*person_trees(home, codex_home))
        night = subprocess.run(
            [
                sys.executable,
                "-m",
                "skillopt_sleep",
                "run",
                "--project",
                str(project),
                "--backend",
                f"claude-cli:command={claude}",
                "--miner",
                "heuristic",
                "--max-calls",
                "60",
                "--json",
                "--quiet",
            ],
            env={**env, "SKILLOPT_SLEEP_HOME": str(engine_home), "TMPDIR": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
        )
        after = fingerprint(*person_trees(home, codex_home))
        calls = len(fake.seen("/v1/messages"))
    report = json.loads(night.stdout) if night.stdout.strip().startswith("{") else {}
    # a night on the person's sessions that made its calls (the call cap may end it: exit 5)
    assert night.returncode in (0, 5) and report.get("night_id"), (night.returncode, night.stderr[-2000:])
    assert report.get("n_sessions") == 21 and report.get("n_tasks") and calls >= 4, (
        calls,
        report.get("notes"),
        report.get("calls"),
        night.stderr[-1500:],
    )
    assert differences(before, after) == []
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("skillopt-sleep-cli-")] == []


@pytest.mark.parametrize("release", RELEASES)
def test_parallel_claude_calls_refresh_the_login_once(release, tmp_path, monkeypatch):
    """A night runs calls concurrently. Claude Code takes its refresh lock in the credential
    store's directory, the person's own, so parallel calls (and the person's own sessions) refresh
    once and the others read the new token; with a lock per private copy each would refresh."""
    claude = real_cli("claude", release)
    with (
        FakeAnthropic(key=NEW_ACCESS) as fake,
        TokenProxy(
            tmp_path,
            {
                "access_token": NEW_ACCESS,
                "refresh_token": NEW_REFRESH,
                "expires_in": 28800,
                "scope": "user:inference user:profile user:sessions:claude_code",
                "token_type": "Bearer",
            },
        ) as proxy,
    ):
        fake.responder = answer_by_task
        env, config_dir = subscription_home(tmp_path, fake, custom_dir=False)
        env.update(proxy.env())
        home, codex_home = Path(env["HOME"]), Path(env["CODEX_HOME"])
        use(env, monkeypatch, tmp_path)
        before = fingerprint(*person_trees(home, codex_home))
        backend = ClaudeCliBackend(command=claude, timeout=120)
        results: list = [None] * CALLS

        def call(index: int) -> None:
            results[index] = backend.complete(Request(purpose="attempt", system=DOCUMENT, user=f"task {index}"))

        threads = [threading.Thread(target=call, args=(i,)) for i in range(CALLS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        after = fingerprint(*person_trees(home, codex_home))
    assert all(r is not None and r.ok for r in results), [r and r.error_message for r in results]
    assert len(proxy.token_requests()) == 1
    assert {r.headers.get("authorization") for r in fake.seen("/v1/messages")} == {f"Bearer {NEW_ACCESS}"}
    assert differences(before, after) == [f"changed {config_dir / '.credentials.json'}"]
