"""What ``skillopt-sleep uninstall`` finds and removes: the nightly OS entry and schedule file, the
adoptions still in effect in every project the engine knows, each project's ``.skillopt-sleep/``,
the user-level config, state and cache directories, and the engine's leftovers in the temp
directory (night logs of the Claude Code plugin, sandboxes of calls whose process was killed).

The projects it knows are those in the schedule file, the sessions record the agents' hooks write,
the night history, and any named with ``--project``; only those holding a ``.skillopt-sleep/``
directory count. Adoptions are reverted newest first with ``adoption.revert``, which refuses a
file edited after adoption: then that project's ``.skillopt-sleep/`` (its ledger and backups) is
kept and the uninstall says why. A project whose lock is held (a night running) is left alone.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt_sleep import scheduler
from skillopt_sleep.staging import adoption
from skillopt_sleep.store import proposals as staged
from skillopt_sleep.errors import UserError
from skillopt_sleep.store.locks import ProjectLock, holder_path
from skillopt_sleep.paths import APP, PROJECT_DIR, project_dirs, user_dirs


@dataclass
class ProjectPlan:
    project: Path
    live: list[dict[str, Any]]  # adoptions still in effect, newest first

    @property
    def state_dir(self) -> Path:
        return project_dirs(self.project).root


@dataclass
class Plan:
    vias: list[str]  # the OS mechanisms whose entry is installed (or recorded)
    schedule_file: Path | None
    projects: list[ProjectPlan]
    user_dirs: list[Path]
    leftovers: list[Path] = field(default_factory=list)  # in the temp directory

    @property
    def adoptions(self) -> int:
        return sum(len(p.live) for p in self.projects)


@dataclass
class Outcome:
    done: list[str] = field(default_factory=list)  # one line per thing undone or removed
    kept: list[str] = field(default_factory=list)  # one line per thing left, with why

    def to_dict(self) -> dict[str, Any]:
        return {"done": self.done, "kept": self.kept}


# --------------------------------------------------------------------------- what there is


def _schedule() -> Any:
    from skillopt_sleep.scheduler.schedule_file import load_schedule

    try:
        return load_schedule()
    except UserError:  # a damaged schedule file is removed all the same
        return None


def known_projects(extra: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
    """Every project the engine has a record of (and ``extra``) that holds ``.skillopt-sleep/``."""
    from skillopt_sleep.store.sessions import projects_seen
    from skillopt_sleep.store.history import History

    named: list[str] = [str(p) for p in extra]
    current = _schedule()
    named += [entry.project for entry in (current.projects if current else [])]
    named += list(projects_seen())
    named += [str(n.get("project")) for n in History().nights() if isinstance(n.get("project"), str)]
    found: list[Path] = []
    for raw in named:
        path = Path(raw).expanduser().resolve()
        if path not in found and (path / PROJECT_DIR).is_dir() and not (path / PROJECT_DIR).is_symlink():
            found.append(path)
    return found


def installed_vias(platform: str | None = None) -> list[str]:
    """The OS mechanisms holding our nightly entry: the recorded one, else any that has it."""
    current = _schedule()
    supported = scheduler.supported_vias(platform)
    candidates = [current.via] if current and current.via in supported else list(supported)
    vias = []
    for via in candidates:
        try:
            if scheduler.make_mechanism(via, platform).installed():
                vias.append(via)
        except UserError:  # the tool is missing: nothing of ours can be installed with it
            continue
    return vias


def engine_dirs() -> list[Path]:
    """The user-level config, state and cache directories that exist (each once)."""
    dirs = user_dirs()
    out: list[Path] = []
    for path in (dirs.config, dirs.state, dirs.cache):
        if path.is_dir() and path not in out and _ours(path):
            out.append(path)
    return out


def _ours(path: Path) -> bool:
    """A directory named for the engine, or one of the three under ``SKILLOPT_SLEEP_HOME``: never
    a home directory or a shared parent, whatever the environment says."""
    relocated = os.environ.get("SKILLOPT_SLEEP_HOME")
    if relocated and path.parent == Path(relocated).expanduser().resolve():
        return True
    return APP in path.parts and path != Path.home()


# Temp entries the engine makes: a CLI call's sandbox (removed when the call ends; one outlives it
# only when the process was killed) and the log of a night started from the Claude Code plugin.
SANDBOX_PREFIX = "skillopt-sleep-cli-"
NIGHT_LOG_PREFIX = "skillopt-sleep-night-"
# A call ends within its timeout (600 s by default); a sandbox older than this belongs to no call.
SANDBOX_MIN_AGE = 6 * 3600.0


def temp_leftovers(directory: Path | None = None, now: float | None = None) -> list[Path]:
    """This user's night logs and dead call sandboxes in the temp directory (never a link)."""
    directory = directory or Path(tempfile.gettempdir())
    now = time.time() if now is None else now
    found = []
    try:
        entries = sorted(directory.iterdir())
    except OSError:
        return []
    for path in entries:
        try:
            info = path.lstat()
        except OSError:
            continue
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            continue
        if path.name.startswith(NIGHT_LOG_PREFIX) and stat.S_ISREG(info.st_mode):
            found.append(path)
        elif (
            path.name.startswith(SANDBOX_PREFIX)
            and stat.S_ISDIR(info.st_mode)
            and now - info.st_mtime > SANDBOX_MIN_AGE
        ):
            found.append(path)
    return found


def make_plan(extra_projects: Iterable[str | os.PathLike[str]] = (), platform: str | None = None) -> Plan:
    from skillopt_sleep.scheduler.schedule_file import schedule_path

    projects = []
    for project in known_projects(extra_projects):
        live = [g for g in staged.adoptions(project) if not g["reverted"]]
        projects.append(ProjectPlan(project, list(reversed(live))))
    target = schedule_path()
    return Plan(
        installed_vias(platform), target if target.exists() else None, projects, engine_dirs(), temp_leftovers()
    )


def describe(plan: Plan, revert_documents: bool) -> list[str]:
    """The plan, one line per thing it would undo or remove."""
    lines = [f"remove the nightly {via} entry" for via in plan.vias]
    if plan.schedule_file:
        lines.append(f"remove {plan.schedule_file}")
    for item in plan.projects:
        for group in item.live:
            files = ", ".join(str(f.get("path")) for f in group["files"])
            verb = "revert" if revert_documents else "keep as they are (--keep-documents)"
            lines.append(f"{verb} night {group['night_id']} in {item.project}: {files}")
        lines.append(f"remove {item.state_dir}")
    lines += [f"remove {path}" for path in [*plan.user_dirs, *plan.leftovers]]
    return lines


# --------------------------------------------------------------------------- doing it


def unschedule(plan: Plan, outcome: Outcome, platform: str | None = None) -> None:
    from skillopt_sleep.scheduler.schedule_changes import remove_schedule

    for via in plan.vias:
        try:
            if scheduler.make_mechanism(via, platform).uninstall():
                outcome.done.append(f"removed the nightly {via} entry")
        except UserError as exc:
            outcome.kept.append(f"the nightly {via} entry: {exc.message}")
    if plan.schedule_file and remove_schedule(plan.schedule_file):
        outcome.done.append(f"removed {plan.schedule_file}")


def clear_project(item: ProjectPlan, revert_documents: bool, outcome: Outcome) -> None:
    """Revert the project's adoptions (newest first), then remove its ``.skillopt-sleep/``; keep
    the directory when a revert was refused or a night holds the lock."""
    if revert_documents:
        for group in item.live:
            night = str(group["night_id"])
            try:
                result = adoption.revert(item.project, night)
            except UserError as exc:
                outcome.kept.append(f"{item.state_dir} (its ledger and backups): {exc.message}")
                return
            restored = ", ".join(f"{f['action']} {f['path']}" for f in result.files)
            outcome.done.append(f"reverted night {night} in {item.project}: {restored}")
    lock = ProjectLock(project_dirs(item.project).lock, "uninstall")
    try:
        lock.acquire()
    except UserError as exc:
        outcome.kept.append(f"{item.state_dir}: {exc.message}")
        return
    try:
        for child in item.state_dir.iterdir():  # everything but the lock we hold
            if child not in (lock.path, holder_path(lock.path)):
                _remove(child)
    finally:
        lock.release()
    for leftover in (holder_path(lock.path), lock.path):
        _remove(leftover)
    try:
        item.state_dir.rmdir()
    except OSError as exc:
        outcome.kept.append(f"{item.state_dir}: {exc.strerror or exc}")
        return
    outcome.done.append(f"removed {item.state_dir}")


def remove_engine_dirs(plan: Plan, outcome: Outcome) -> None:
    for path in [*plan.user_dirs, *plan.leftovers]:
        _remove(path)
        if path.exists():
            outcome.kept.append(f"{path}: could not be removed")
        else:
            outcome.done.append(f"removed {path}")
    relocated = os.environ.get("SKILLOPT_SLEEP_HOME")
    if relocated:
        try:
            Path(relocated).expanduser().resolve().rmdir()  # only when nothing else is in it
        except OSError:
            pass


def _remove(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass
    except OSError:
        shutil.rmtree(path, ignore_errors=True)


def carry_out(plan: Plan, revert_documents: bool, platform: str | None = None) -> Outcome:
    """Unschedule first (no night may start meanwhile), then each project, then the user dirs."""
    outcome = Outcome()
    unschedule(plan, outcome, platform)
    for item in plan.projects:
        clear_project(item, revert_documents, outcome)
    remove_engine_dirs(plan, outcome)
    return outcome
