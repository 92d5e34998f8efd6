"""A handoff night's part of the night (the backend itself is ``backends/handoff.py``): its files go
in the project, a night that needs answers stops for them as a round rather than a failure, and
the one that finishes says how many rounds it took."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from skillopt_sleep.backends.handoff import HandoffBackend
from skillopt_sleep.backends.models import Models
from skillopt_sleep.config import Config
from skillopt_sleep.paths import project_dirs
from skillopt_sleep.types import NightReport


def handoff_in_project(config: Config, project: Path) -> Config:
    """A handoff night keeps its prompt and answer files in the project, where the person's agent
    works, unless the config names a folder."""
    if "handoff" not in {config.backend_for(role).split(":", 1)[0].strip().lower() for role in ("target", "optimizer")}:
        return config
    options = {name: dict(values) for name, values in config.models.backend_options.items()}
    options.setdefault("handoff", {}).setdefault("dir", str(project_dirs(project).root / "handoff"))
    return config.replace(backend_options=options)


def handoffs(models: Models) -> list[HandoffBackend]:
    """The night's handoff backends, each once (target and optimizer may share one)."""
    backends: dict[int, object] = {id(c.backend): c.backend for c in (models.target, models.optimizer)}
    return [b for b in backends.values() if isinstance(b, HandoffBackend)]


def stop_for_answers(report: NightReport, models: Models) -> str:
    """Mark the report as a night stopped for answers and return what to tell the person. Nothing
    is staged or recorded; the harvest is not committed, so the next run reads the same sessions
    and asks the same calls (answered ones from their files)."""
    backends = handoffs(models)
    waiting = sum(backend.stopped(report.night_id) for backend in backends)
    where = ", ".join(str(backend.prompts) for backend in backends) or "the handoff folder"
    report.status = "handoff"
    report.calls, report.usage = models.calls(), models.usage()
    report.notes.append(f"stopped for answers: {waiting} prompt(s) wait in {where}")
    report.finished = datetime.now(timezone.utc)
    return (
        f"{waiting} prompt(s) wait in {where}: answer each in answers/<same name> "
        "(a fresh sub-agent per prompt), then run the same command again"
    )


def waiting_prompts(models: Models) -> list[Path]:
    """The prompt files still without an answer: the list the person's agent works through."""
    return [backend.prompts / f"{key}.md" for backend in handoffs(models) for key in backend.waiting()]
