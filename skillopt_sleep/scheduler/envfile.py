"""The env file a scheduled night reads its API keys from.

A scheduled job runs without the user's shell environment, and keys never go into an OS entry or
the schedule file, so the user names a file of ``KEY=VALUE`` lines (``export`` and quotes
allowed, ``#`` comments). It must be readable by its owner only (mode 0600 or stricter):
``schedule`` refuses any other, and so does the job, in case the mode changed since. Error
messages name the line, never its value.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from skillopt_sleep.errors import EXIT_CONFIG, UserError
from skillopt_sleep.files import UnreadableFile, read_regular_text
from skillopt_sleep.scheduler.base import has_control_chars

ENV_READ_LIMIT = 1024 * 1024  # an env file of a few keys is a few hundred bytes
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_env_file(path: str | os.PathLike[str]) -> Path:
    """The absolute path of a readable env file private to its owner; else a clear error."""
    resolved = Path(path).expanduser().resolve()
    try:
        info = resolved.stat()
    except OSError:
        raise UserError(f"env file {resolved} does not exist or cannot be read", EXIT_CONFIG) from None
    if not stat.S_ISREG(info.st_mode):
        raise UserError(f"env file {resolved} is not a regular file", EXIT_CONFIG)
    if os.name == "posix":
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o077:
            raise UserError(
                f"env file {resolved} has mode {mode:04o}; it holds keys, so it must be "
                f"private to you: chmod 600 {resolved}",
                EXIT_CONFIG,
            )
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            raise UserError(f"env file {resolved} belongs to another user", EXIT_CONFIG)
    return resolved


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def read_env_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """``KEY=VALUE`` pairs of a checked env file."""
    resolved = check_env_file(path)
    try:
        text = read_regular_text(resolved, ENV_READ_LIMIT)
    except UnreadableFile as exc:  # larger than the bound (read no further), or no regular file
        raise UserError(
            f"env file {resolved} cannot be read: {exc.strerror}; an env file holds a few NAME=VALUE lines", EXIT_CONFIG
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"env file {resolved} cannot be read: {type(exc).__name__}", EXIT_CONFIG) from None
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        name, eq, value = line.partition("=")
        name = name.strip()
        if not eq or not _NAME.fullmatch(name):
            raise UserError(f"env file {resolved}, line {number}: expected NAME=VALUE", EXIT_CONFIG)
        value = _unquote(value.strip())
        if has_control_chars(value):
            raise UserError(f"env file {resolved}, line {number}: {name} holds a control character", EXIT_CONFIG)
        values[name] = value
    return values
