"""Reading the settings: defaults < user config file < project config file < environment <
command line, each value converted to its declared type (msgspec) or refused in one line that
names where it was set. A project's config file may not set the nightly schedule's per-user
settings (``PER_USER``)."""

from __future__ import annotations

import os
import sys
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from skillopt_sleep.config.checks import COMMAND_LINE, ENVIRONMENT, check_backends, validate
from skillopt_sleep.config.sections import PER_USER, SECTION_OF, SECTIONS, Config
from skillopt_sleep.errors import EXIT_CONFIG, UserError
from skillopt_sleep.files import read_regular
from skillopt_sleep.paths import project_dirs, user_dirs


# the most of a config file it reads: a real one is a few hundred bytes
CONFIG_READ_LIMIT = 1024 * 1024

# Locations (read by paths.py) and the agent plugins' hook runner's own knobs, which it passes
# down to the engine it starts: none of them is an engine setting.
ENV_NOT_SETTINGS = frozenset(
    {
        "SKILLOPT_SLEEP_HOME",
        "SKILLOPT_SLEEP_PYTHON",
        # the plugin launcher's: where it sets the engine up, and its own path
        "SKILLOPT_SLEEP_ENGINE_DIR",
        "SKILLOPT_SLEEP_LAUNCHER",
    }
)


def _declared(hint: Any) -> tuple[Any, bool]:
    """A setting's type without ``None``, and whether ``None`` is allowed."""
    args = typing.get_args(hint)
    if type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0], True
    return hint, False


# Every setting's type, resolved from the annotations (``from __future__ import annotations``
# leaves them as strings): the type itself, and whether it may be None.
_TYPES = {
    name: _declared(hint)
    for cls in SECTIONS.values()
    for name, hint in typing.get_type_hints(cls).items()
    if name in SECTION_OF
}
_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}
_EXPECTED = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list of strings",
    dict: "a table",
}


def _coerce(key: str, value: Any, where: str) -> Any:
    """A setting's value as its declared type (msgspec converts and checks), from a config file's
    value or from text (the environment, the command line: booleans in words, lists
    comma-separated); else one line naming the setting and what it must be."""
    wanted, optional = _TYPES[key]
    kind = typing.get_origin(wanted) or wanted
    if value is None:
        if optional:
            return None
        raise UserError(f"{where}: {key} may not be empty", EXIT_CONFIG)
    if isinstance(value, str) and kind is bool:
        value = _WORDS.get(value.lower(), value)
    elif isinstance(value, str) and kind is list:
        value = [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, bool) and kind in (int, float):
        raise UserError(f"{where}: {key} must be a number, got {value!r}", EXIT_CONFIG)
    try:  # numbers may come as text or as a whole float; nothing else is converted
        return msgspec.convert(value, wanted, strict=kind not in (int, float))
    except msgspec.ValidationError:
        raise UserError(f"{where}: {key} must be {_EXPECTED[kind]}, got {value!r}", EXIT_CONFIG) from None


def _apply(config: Config, values: Mapping[str, Any], where: str, origins: dict[str, str] | None = None) -> None:
    """Set each flat-named setting in ``values`` in its section, recording where it was set."""
    for key, value in values.items():
        name = key.replace("-", "_")
        if name not in SECTION_OF:
            raise UserError(f"{where}: unknown setting {key!r}", EXIT_CONFIG)
        setattr(getattr(config, SECTION_OF[name]), name, _coerce(name, value, where))
        if origins is not None:
            origins[name] = where


def _flatten(values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A config file's settings by flat name: ``[learning]\nk = 3`` and a top-level ``k = 3`` both
    give ``k``, since every name is unique; a setting in a section not its own, an unknown section
    or a setting given twice is one line naming the file."""
    flat: dict[str, Any] = {}

    def put(name: str, value: Any) -> None:
        if name in flat:
            raise UserError(f"{where}: {name} is set twice", EXIT_CONFIG)
        flat[name] = value

    for key, value in values.items():
        name = key.replace("-", "_")
        if name in SECTION_OF:
            put(name, value)
            continue
        if name not in SECTIONS:
            kind = "section" if isinstance(value, dict) else "setting"
            raise UserError(
                f"{where}: unknown {kind} {key!r} (sections: {', '.join(SECTIONS)})"
                if kind == "section"
                else f"{where}: unknown setting {key!r}",
                EXIT_CONFIG,
            )
        if not isinstance(value, dict):
            raise UserError(f"{where}: [{key}] must be a section of settings, got {value!r}", EXIT_CONFIG)
        for inner, inner_value in value.items():
            inner_name = inner.replace("-", "_")
            home = SECTION_OF.get(inner_name)
            if home is None:
                raise UserError(f"{where}: unknown setting {inner!r} in [{key}]", EXIT_CONFIG)
            if home != name:
                raise UserError(f"{where}: {inner} belongs in [{home}], not [{key}]", EXIT_CONFIG)
            put(inner_name, inner_value)
    return flat


def read_config_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # the same parser, published as tomli for older Pythons
        import tomli as tomllib
    try:
        return tomllib.loads(read_regular(path, CONFIG_READ_LIMIT).decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"config file {path} is broken: {exc}", EXIT_CONFIG) from None


def load_config(
    project: Path | None = None, overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Config:
    config = Config()
    origins: dict[str, str] = {}
    user_file = user_dirs().config_file
    _apply(config, _flatten(read_config_file(user_file), str(user_file)), str(user_file), origins)
    env_file = config.schedule.env_file
    if env_file and not Path(env_file).expanduser().is_absolute():  # a file's relative path: beside it
        config.schedule.env_file = str(user_file.parent / env_file)
    if project is not None:
        project_file = project_dirs(project).config_file
        project_values = _flatten(read_config_file(project_file), str(project_file))
        for name in PER_USER:
            if name in project_values:
                raise UserError(
                    f"{project_file}: {name} is the nightly schedule's, one for all your projects: set it in "
                    f"{user_file} or with `schedule --{name.replace('_', '-')}`",
                    EXIT_CONFIG,
                )
        _apply(config, project_values, str(project_file), origins)
    env = os.environ if env is None else env
    env_values = {
        key[len("SKILLOPT_SLEEP_") :].lower(): value
        for key, value in env.items()
        if key.startswith("SKILLOPT_SLEEP_") and key not in ENV_NOT_SETTINGS
    }
    for key in env_values:
        if key not in SECTION_OF:
            raise UserError(
                f"environment: SKILLOPT_SLEEP_{key.upper()} is not a setting (settings: {', '.join(sorted(SECTION_OF))})",
                EXIT_CONFIG,
            )
    _apply(config, env_values, ENVIRONMENT, origins)
    _apply(config, {k: v for k, v in (overrides or {}).items() if v is not None}, COMMAND_LINE, origins)
    check_backends(config, origins)
    return validate(config, origins)


def config_problem(project: Path | None = None) -> str | None:
    """Why this project's settings do not load, in one line (None when they do): for ``status``
    and the session notice, which report a broken config instead of failing."""
    try:
        load_config(project)
    except UserError as exc:
        return exc.message
    return None
