"""Transcript sources: each agent's session files -> SessionDigests (read-only).

One protocol (``base.Source``), one module per agent (``claude_code.py``, ``codex.py``), and the
harvest over them (``harvester.py``), which is what the rest of the engine calls.
"""

from skillopt_sleep.sources.base import Source
from skillopt_sleep.sources.harvester import (
    SOURCE_CHOICES,
    SOURCES,
    HarvestResult,
    available_sources,
    describe_read,
    harvest,
    home_warnings,
)

__all__ = [
    "HarvestResult",
    "Source",
    "SOURCES",
    "available_sources",
    "describe_read",
    "harvest",
    "home_warnings",
    "SOURCE_CHOICES",
]
