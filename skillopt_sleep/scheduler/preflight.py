"""Before anything is installed: resolve each project's configuration into a record the job can
run from, and check that the job — with a bare environment, only the env file's variables and
the recorded PATH — will find what its backends need: an API key for the SDK backends, the
``claude`` / ``codex`` binary for the CLI backends. Any miss is one clear refusal.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt_sleep.backends import BackendSpecError, cli_command, key_env, spec_options
from skillopt_sleep.backends.auto import AUTO, choose_backend, is_auto
from skillopt_sleep.config import SECTION_OF, Config, settings_of
from skillopt_sleep.errors import EXIT_CONFIG, EXIT_USAGE, UserError
from skillopt_sleep.paths import home_setting
from skillopt_sleep.redact import redact
from skillopt_sleep.scheduler.base import has_control_chars
from skillopt_sleep.sources import SOURCES

SECRET_OPTION_NAMES = ("api_key", "key", "token", "secret", "password", "auth")

Which = Callable[[str], "str | None"]


@dataclass
class Needs:
    """What a project's scheduled night will use: binaries (absolute paths, recorded as the CLI
    backends' ``command``) and the directories the job must put on PATH."""

    binaries: dict[str, str] = field(default_factory=dict)
    path: list[str] = field(default_factory=list)

    def add_binary(self, backend: str, resolved: str, which: Which) -> None:
        self.binaries[backend] = resolved
        # npm installs claude / codex as node scripts: the job needs node too
        dirs = [str(Path(resolved).parent), str(Path(os.path.realpath(resolved)).parent)]
        node = which("node")
        if node:
            dirs.append(str(Path(node).parent))
        for d in dirs:
            if d not in self.path:
                self.path.append(d)


def _spec_name_and_options(spec: str, config: Config) -> tuple[str, dict[str, Any]]:
    """The backend ``spec`` names and its options (the config's defaults, then the spec's own)."""
    if is_auto(spec):
        return AUTO, {}
    try:
        return spec_options(spec, config.models.backend_options)
    except BackendSpecError as exc:
        raise UserError(f"backend {spec!r}: {exc}", EXIT_CONFIG) from None


def _auto_choice(config: Config, env_file_vars: Mapping[str, str], which: Which) -> str | None:
    """What ``auto`` would pick for the job (the same rule as a night's, backends/auto.py), seen
    from the job's environment: the env file's variables, not the shell's."""
    agents = [config.documents.agent] if config.documents.agent in ("claude", "codex") else []
    try:
        return choose_backend(
            agents, backend_options=config.models.backend_options, which=which, env=env_file_vars, harvested=False
        ).spec
    except UserError:
        return None


def _find_binary(backend: str, options: Mapping[str, Any], which: Which) -> str | None:
    command = str(options.get("command") or cli_command(backend))
    if os.path.isabs(command):
        return command if os.access(command, os.X_OK) else None
    found = which(command)
    return str(Path(found).absolute()) if found else None


def check_backends(config: Config, env_file_vars: Mapping[str, str], which: Which = shutil.which) -> Needs:
    """What the job needs for ``config``'s backends; refuses when it would not find it."""
    needs = Needs()
    for role in ("target", "optimizer"):
        spec = config.backend_for(role)
        name, options = _spec_name_and_options(spec, config)
        if name == AUTO:
            chosen = _auto_choice(config, env_file_vars, which)
            if chosen is None:
                raise UserError(
                    "backend auto: a scheduled night would find neither the claude / codex CLI nor "
                    "an ANTHROPIC_API_KEY / OPENAI_API_KEY in the --env-file; install the agent's "
                    "CLI, name an env file, or pass --backend",
                    EXIT_CONFIG,
                )
            name, options = _spec_name_and_options(chosen, config)
        if name == "handoff":
            raise UserError(
                "backend handoff: its prompts are answered by your own agent session, which is not "
                "there at night; run it from the agent (/skillopt-sleep handoff in Claude Code), or "
                "schedule another backend",
                EXIT_CONFIG,
            )
        if cli_command(name):
            found = _find_binary(name, options, which)
            if found is None:
                raise UserError(
                    f"backend {name}: `{cli_command(name)}` is not on PATH, so a scheduled "
                    f"night could not run it; install it or set backend_options.{name}.command "
                    "to its absolute path",
                    EXIT_CONFIG,
                )
            needs.add_binary(name, found, which)
        elif key := key_env(name):
            if not env_file_vars.get(key):
                hint = (
                    " (it is set in this shell, but a scheduled night does not see your shell)"
                    if os.environ.get(key)
                    else ""
                )
                raise UserError(
                    f"backend {name}: a scheduled night needs {key}{hint}; put it in a "
                    "file readable only by you (chmod 600) and pass --env-file FILE",
                    EXIT_CONFIG,
                )
    return needs


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(k) + _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def _refuse_secrets_in(record: dict[str, Any]) -> None:
    for backend, options in (record.get("backend_options") or {}).items():
        for option, value in (options or {}).items():
            if value and any(word in str(option).lower() for word in SECRET_OPTION_NAMES):
                raise UserError(
                    f"config backend_options.{backend}.{option} holds a credential; a schedule "
                    "never records one — put it in the --env-file instead",
                    EXIT_CONFIG,
                )
    for spec in (record.get("backend"), record.get("target_backend"), record.get("optimizer_backend")):
        if spec and any(f"{word}=" in str(spec).lower() for word in SECRET_OPTION_NAMES):
            raise UserError(
                "a backend spec holds a credential; a schedule never records one — put it in the --env-file instead",
                EXIT_CONFIG,
            )
    text = json.dumps(record, sort_keys=True)
    if redact(text) != text:
        raise UserError(
            "the project's configuration contains something that looks like a secret; "
            "a schedule never records one — keep keys in the --env-file",
            EXIT_CONFIG,
        )


def config_record(config: Config, needs: Needs) -> dict[str, Any]:
    """Every setting a night reads by its flat name (``settings_of``; not the ``schedule`` section,
    which the schedule itself records), with the agents' data homes and the CLI binaries made
    absolute, so the job's night uses exactly what the user's shell would have."""
    record = {name: value for name, value in settings_of(config).items() if SECTION_OF[name] != "schedule"}
    given = config.harvest.homes()
    for name, source in SOURCES.items():
        record[home_setting(name)] = str((given.get(name) or source.default_home()).expanduser().absolute())
    options = {k: dict(v) for k, v in (record.get("backend_options") or {}).items()}
    for backend, binary in needs.binaries.items():
        options.setdefault(backend, {}).setdefault("command", binary)
        if not os.path.isabs(str(options[backend]["command"])):
            options[backend]["command"] = binary
    record["backend_options"] = options
    _refuse_secrets_in(record)
    for text in _strings(record):
        if has_control_chars(text):
            raise UserError(
                f"the project's configuration holds a value with a newline or control "
                f"character ({text!r}); refusing to schedule it",
                EXIT_USAGE,
            )
    return record
