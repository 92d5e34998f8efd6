"""Flags more than one command takes."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from skillopt_sleep.paths import TRANSCRIPT_SOURCES, home_setting


def add_source_flags(parser: argparse.ArgumentParser, home_type: Callable[[str], Any] = str) -> None:
    """``--source`` and one ``--<agent>-home`` per agent whose sessions can be read."""
    parser.add_argument(
        "--source",
        choices=(*TRANSCRIPT_SOURCES, "auto", "all"),
        help="which agent's transcripts (auto: those that have sessions for the project)",
    )
    for name, (label, default) in TRANSCRIPT_SOURCES.items():
        parser.add_argument(f"--{name}-home", type=home_type, help=f"{label} data dir (default {default})")


def home_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The ``<agent>_home`` settings the flags give (None where a flag is absent)."""
    return {home_setting(name): getattr(args, home_setting(name), None) for name in TRANSCRIPT_SOURCES}
