"""Whether a scheduled night has anything new to learn from, decided without a model call.

A night's tasks come from the project's sessions. When no transcript of the project was written
since its last night (or it has none at all), tonight would mine what the last night mined and
pay at least for the preflight call; the scheduled night skips it and says why. A night that
was interrupted is never skipped: it is continued.

The look is cheap: the transcript files' modification times, then only the head of a file written
since the last night (the same head read as ``sources.available_sources``).
"""

from __future__ import annotations

import os
from collections import Counter
from datetime import datetime
from pathlib import Path

from skillopt_sleep.config import Config

STATEFUL_MODES = ("run", "demo")  # nights that record what they read


def last_night_started(project: Path) -> datetime | None:
    """When the project's newest recorded night started (None: it never had one)."""
    from skillopt_sleep.store.history import History
    from skillopt_sleep.types import parse_time

    parsed = [parse_time(n.get("started")) for n in History().nights(project) if n.get("mode") in STATEFUL_MODES]
    starts = [s for s in parsed if s is not None]
    return max(starts) if starts else None


def _homes(config: Config) -> dict[str, Path]:
    from skillopt_sleep.sources import SOURCES

    given = config.harvest.homes()
    wanted = list(SOURCES) if config.harvest.source in ("auto", "all") else [config.harvest.source]
    return {name: given.get(name) or SOURCES[name].default_home() for name in wanted if name in SOURCES}


def written_since(project: Path, config: Config, since: datetime | None) -> bool:
    """Whether any of the project's own (non-replay) transcripts was written at or after
    ``since`` (any at all when ``since`` is None)."""
    from skillopt_sleep.sources.harvester import SOURCES, ProjectFilter
    from skillopt_sleep.sources.base import is_replay_dir

    wanted = ProjectFilter(project)
    cutoff = since.timestamp() if since is not None else None
    for name, home in _homes(config).items():
        source = SOURCES[name]
        for path in source.discover(home, Counter()):
            if cutoff is not None:
                try:
                    if os.stat(path).st_mtime < cutoff:
                        continue
                except OSError:
                    continue
            if any(wanted(cwd) and not is_replay_dir(cwd) for cwd in source.head_cwds(path)):
                return True
    return False


def nothing_new(project: Path, config: Config) -> str | None:
    """Why tonight's night for ``project`` would have nothing new to learn from, or None when it
    should run (new sessions, an interrupted night to continue, or a question only the night
    can answer: a project that is gone, a source this engine does not know)."""
    from skillopt_sleep.store.call_journal import interrupted_nights

    if not project.is_dir() or interrupted_nights(project):
        return None
    if config.harvest.source not in ("auto", "all", "claude", "codex"):
        return None
    since = last_night_started(project)
    if written_since(project, config, since):
        return None
    if since is None:
        return "no sessions for this project yet: nothing to learn from, no model call made"
    return (
        f"no new sessions since the last night (started {since:%Y-%m-%d %H:%M} UTC): "
        "nothing new to learn from, no model call made"
    )
