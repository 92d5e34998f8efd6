"""A write the file system refuses (an agent's sandbox): one line that names the path and, inside
Codex's sandbox, the rules line that lets Codex run the engine outside it — exit 9, never a crash."""

from __future__ import annotations

import errno
import json
import os

import pytest

from skillopt_sleep import cli
from skillopt_sleep.errors import EXIT_NOT_WRITABLE
from skillopt_sleep.sandbox import not_writable_message

LAUNCHER = "/home/u/.codex/plugins/cache/skillopt-sleep/skillopt-sleep/0.1.0/plugins/codex/bin/skillopt-sleep"


@pytest.fixture
def codex_sandbox(monkeypatch, tmp_path):
    monkeypatch.setenv("CODEX_SANDBOX_NETWORK_DISABLED", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / ".codex"))
    monkeypatch.setenv("SKILLOPT_SLEEP_LAUNCHER", LAUNCHER)


def read_only(path: str) -> OSError:
    return OSError(errno.EROFS, os.strerror(errno.EROFS), path)


def test_inside_codex_it_gives_the_rules_line_for_the_launcher(codex_sandbox):
    message = not_writable_message(read_only("/p/.skillopt-sleep/night.lock"))
    assert message.startswith("cannot write /p/.skillopt-sleep/night.lock: Read-only file system; Codex's sandbox")
    assert (
        f'put the line prefix_rule(pattern = ["{LAUNCHER}"], decision = "allow") in '
        "~/.codex/rules/skillopt-sleep.rules" in message
    )


def test_a_launcher_path_that_needs_quoting_cannot_be_allowed_by_a_rule(codex_sandbox, monkeypatch):
    monkeypatch.setenv("SKILLOPT_SLEEP_LAUNCHER", "/home/a user/.codex/bin/skillopt-sleep")
    message = not_writable_message(read_only("/p/x"))
    assert "prefix_rule" not in message and "run the same command in a terminal" in message


def test_outside_codex_and_for_other_errors(monkeypatch):
    for name in ("CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_SANDBOX"):
        monkeypatch.delenv(name, raising=False)
    assert not_writable_message(read_only("/p/x")).endswith("run the command where that path is writable")
    assert not_writable_message(OSError(errno.ENOSPC, "No space left on device", "/p/x")) is None
    assert not_writable_message(ValueError("x")) is None


def test_the_cli_prints_one_line_and_exits_9(codex_sandbox, monkeypatch, capsys, tmp_path):
    def refuse(args):
        raise read_only(str(tmp_path / "AGENTS.md"))

    parser = cli.build_parser()
    status = parser._subparsers._group_actions[0].choices["status"]
    monkeypatch.setattr(status, "_defaults", {**status._defaults, "func": refuse})
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    assert cli.main(["status", "--json"]) == EXIT_NOT_WRITABLE
    out, err = capsys.readouterr()
    assert json.loads(out) == {"ok": False, "error": json.loads(out)["error"], "code": EXIT_NOT_WRITABLE}
    assert err.count("\n") == 1 and err.startswith(f"skillopt-sleep: cannot write {tmp_path / 'AGENTS.md'}")
    assert "Traceback" not in err and "internal error" not in err
