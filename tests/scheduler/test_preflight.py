"""Before anything is installed (``scheduler/preflight.py``): what a scheduled night's backends
need, seen from the job's bare environment, and a configuration record that holds no secret."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillopt_sleep.config import Config
from skillopt_sleep.errors import EXIT_CONFIG, EXIT_USAGE, UserError
from skillopt_sleep.scheduler.preflight import Needs, check_backends, config_record


def _which(found: dict[str, str]):
    return lambda name: found.get(name)


def _refusal(config: Config, env: dict[str, str] | None = None, which=_which({})) -> UserError:
    with pytest.raises(UserError) as caught:
        check_backends(config, env or {}, which)
    assert caught.value.code == EXIT_CONFIG
    return caught.value


def test_the_sim_needs_nothing() -> None:
    assert check_backends(Config(backend="sim:seed=3"), {}, _which({})) == Needs()


def test_a_cli_backend_records_its_binary_and_the_directories_it_runs_from(tmp_path: Path) -> None:
    binary = tmp_path / "bin" / "claude"
    needs = check_backends(
        Config(backend="claude-cli"), {}, _which({"claude": str(binary), "node": "/opt/node/bin/node"})
    )
    assert needs.binaries == {"claude-cli": str(binary)}
    assert needs.path == [str(tmp_path / "bin"), "/opt/node/bin"], "node too: npm installs claude as a script"


def test_a_cli_backend_whose_binary_is_not_found_is_refused(tmp_path: Path) -> None:
    assert "`codex` is not on PATH" in _refusal(Config(backend="codex-cli")).message
    missing = str(tmp_path / "no-codex")
    config = Config(backend="codex-cli", backend_options={"codex-cli": {"command": missing}})
    assert "backend_options.codex-cli.command" in _refusal(config).message


def test_an_sdk_backend_needs_its_key_in_the_env_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    refused = _refusal(Config(backend="openai"))
    assert "needs OPENAI_API_KEY;" in refused.message and "--env-file" in refused.message
    monkeypatch.setenv("OPENAI_API_KEY", "from-the-shell")
    assert "does not see your shell" in _refusal(Config(backend="openai")).message
    assert check_backends(Config(backend="openai"), {"OPENAI_API_KEY": "k"}, _which({})) == Needs()


def test_auto_is_chosen_from_the_jobs_environment_not_the_shells(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-the-shell")
    assert "backend auto:" in _refusal(Config(backend="auto", agent="claude")).message
    needs = check_backends(Config(backend="auto", agent="claude"), {}, _which({"claude": "/usr/bin/claude"}))
    assert needs.binaries == {"claude-cli": "/usr/bin/claude"}


def test_the_record_makes_binaries_and_homes_absolute(tmp_path: Path) -> None:
    needs = Needs(binaries={"claude-cli": "/usr/bin/claude"})
    record = config_record(Config(backend="claude-cli", claude_home=str(tmp_path / "c")), needs)
    assert record["backend"] == "claude-cli" and record["claude_home"] == str(tmp_path / "c")
    assert all(os.path.isabs(record[f"{name}_home"]) for name in ("claude", "codex"))
    assert record["backend_options"] == {"claude-cli": {"command": "/usr/bin/claude"}}
    relative = Config(backend="claude-cli", backend_options={"claude-cli": {"command": "claude"}})
    assert config_record(relative, needs)["backend_options"]["claude-cli"]["command"] == "/usr/bin/claude"


@pytest.mark.parametrize(
    "settings, said",
    [
        ({"backend_options": {"openai": {"api_key": "x"}}}, "backend_options.openai.api_key holds a credential"),
        ({"backend": "openai:token=abc"}, "a backend spec holds a credential"),
        ({"backend": "sim", "model": "sk-ant-api03-" + "a" * 40}, "looks like a secret"),
    ],
)
def test_a_record_with_a_secret_is_refused(settings: dict, said: str) -> None:
    with pytest.raises(UserError) as caught:
        config_record(Config(**settings), Needs())
    assert caught.value.code == EXIT_CONFIG and said in caught.value.message


def test_a_record_with_a_control_character_is_refused() -> None:
    with pytest.raises(UserError) as caught:
        config_record(Config(backend="sim", model="a\nb"), Needs())
    assert caught.value.code == EXIT_USAGE and "newline or control character" in caught.value.message
