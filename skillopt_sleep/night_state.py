"""A running night's state, for ``status`` and for whoever follows a night started in the
background: ``<project>/.skillopt-sleep/night-state.json``, replaced atomically at most every
``EVERY`` seconds while the night runs, and once more when it ends.

    {"version": 1, "state": "running" | "finished" | "failed", "pid": 1234, "night_id": "...",
     "mode": "run", "phase": "gating 3 edit(s) on 8 val task(s)", "started": "<ISO time>",
     "updated": "<ISO time>", "elapsed_s": 81.0, "calls_done": 120, "calls_planned": 410,
     "eta_s": 196.0, "input_tokens": 30211, "output_tokens": 8012, "cost_usd": 0.21 | null,
     "payer": "api" | "login" | "none", "login": "claude" | "codex" | null,
     "log": "<path>" | null, "exit_code": null | 0.., "result": null | "<night status>"}

``calls_planned`` is the whole night's: the estimate made before it started (``estimate.py``), or
the calls asked for so far when that is more. ``cost_usd`` is what the budget counted for an API
backend; a CLI login is followed in calls and tokens. A state that says running whose process is
gone is a night that stopped without finishing (killed, the machine went down).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skillopt_sleep.files import atomic_write_text, read_json
from skillopt_sleep.paths import project_dirs
from skillopt_sleep.progress import CallProgress, _duration
from skillopt_sleep.sanitize import clean_obj, sanitize
from skillopt_sleep.types import format_time

NAME = "night-state.json"
EVERY = 2.0  # seconds between two writes of the state file
READ_LIMIT = 64 * 1024  # a state file bigger than this is not read


def state_path(project: Path) -> Path:
    return project_dirs(project).root / NAME


def log_dir(project: Path) -> Path:
    return project_dirs(project).root / "logs"


def _now() -> str:
    return format_time(datetime.now(timezone.utc)) or ""


class NightProgress(CallProgress):
    """The progress line for the whole night (calls done / planned, an ETA for the night), and
    the state file beside it. ``planned``: the estimate's calls (None: unknown, the calls asked
    for so far stand in)."""

    def __init__(
        self,
        project: Path,
        *,
        planned: int | None = None,
        payer: dict[str, Any] | None = None,
        mode: str = "run",
        log: str | None = None,
        show: bool = True,
        write: bool = True,
        every: float = EVERY,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.path = state_path(project)
        self.planned = planned
        self.payer = payer or {}
        self.show = show
        self.write = write
        self.every = every
        self.phase = "starting"
        self.night_id: str | None = None
        self._state: dict[str, Any] = {
            "version": 1,
            "state": "running",
            "pid": os.getpid(),
            "mode": mode,
            "started": _now(),
            "log": log,
            "exit_code": None,
            "result": None,
        }
        self._budget: Any = None
        self._begun = False  # a model call was made: from then on the state file is written
        self._written = float("-inf")
        self._write_lock = threading.Lock()

    # -- what the night tells it ------------------------------------------------------------

    def watch(self, models: Any) -> None:
        """The night's shared budget: tokens and cost so far."""
        self._budget = getattr(models.target, "budget", None)

    def on_phase(self, message: str) -> None:
        self.phase = message
        self.save()

    def done(self, n: int = 1) -> None:
        if self.show:
            super().done(n)
        else:
            with self._lock:
                self.completed += n
        self._begun = True
        self.save()

    def total(self) -> int:
        return max(self.planned or 0, self.expected, self.completed)

    def line(self, now: float | None = None) -> str:
        now = self._clock() if now is None else now
        elapsed = max(now - self._started, 1e-9)
        total = self.total()
        approx = "~" if self.planned is not None and self.expected < total else ""
        text = f"model calls {self.completed}/{approx}{total} for the night, {_duration(elapsed)}"
        left = total - self.completed
        if self.completed and left:
            text += f", ETA {_duration(left * elapsed / self.completed)}"
        return text

    # -- the state file ---------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        now = self._clock()
        elapsed = max(now - self._started, 0.0)
        total = self.total()
        eta = (total - self.completed) * elapsed / self.completed if self.completed else None
        budget, tokens, cost = self._budget, 0, None
        if budget is not None:
            tokens = int(getattr(budget, "tokens_used", 0))  # input + output
            cost = round(float(getattr(budget, "cost_used", 0.0)), 6) if self.payer.get("kind") == "api" else None
        return {
            **self._state,
            "night_id": self.night_id,
            "phase": self.phase,
            "updated": _now(),
            "elapsed_s": round(elapsed, 1),
            "calls_done": self.completed,
            "calls_planned": total,
            "eta_s": None if eta is None else round(eta, 1),
            "tokens": tokens,
            "cost_usd": cost,
            "payer": self.payer.get("kind"),
            "login": self.payer.get("login"),
        }

    def save(self, force: bool = False, create: bool = True) -> None:
        """Write the state file (at most every ``every`` seconds unless ``force``); a file that
        cannot be written costs the person the view, never the night. Nothing is written before
        the night's first model call unless the file is there already (a night started in the
        background): a night refused at the door leaves no file behind."""
        if not self.write or not (self._begun or self.path.exists()):
            return
        now = time.monotonic()
        with self._write_lock:
            if not force and now - self._written < self.every:
                return
            self._written = now
            if not create and not self.path.parent.is_dir():
                return  # a refused night removed the folder it made (footprint.py): keep it gone
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(self.path, json.dumps(clean_obj(self.snapshot())) + "\n")
            except OSError:
                pass

    def end(self, code: int, result: str | None, night_id: str | None = None) -> None:
        """The night is over: the last state, with how it ended."""
        self.night_id = night_id or self.night_id
        self._state.update(state="finished" if code == 0 else "failed", exit_code=code, result=result)
        self.save(force=True, create=False)


def write_starting(project: Path, pid: int, log: str, mode: str = "run") -> None:
    """The state of a night just started in the background, before its process writes its own."""
    path = state_path(project)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(
        path,
        json.dumps(
            clean_obj(
                {
                    "version": 1,
                    "state": "running",
                    "pid": pid,
                    "mode": mode,
                    "phase": "starting",
                    "started": _now(),
                    "updated": _now(),
                    "elapsed_s": 0.0,
                    "calls_done": 0,
                    "calls_planned": None,
                    "eta_s": None,
                    "tokens": 0,
                    "cost_usd": None,
                    "payer": None,
                    "login": None,
                    "log": log,
                    "exit_code": None,
                    "result": None,
                }
            )
        )
        + "\n",
    )


def read_state(project: Path) -> dict[str, Any] | None:
    """The state file, or None (none, unreadable, not a regular file, too big)."""
    path = state_path(project)
    try:
        data = read_json(path, READ_LIMIT)
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def alive(pid: Any) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return _not_zombie(pid)


def _not_zombie(pid: int) -> bool:
    """A child that exited but was not reaped yet still answers kill(0)."""
    with contextlib.suppress(OSError, IndexError):
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read(4096).rsplit(")", 1)[1].split()[0] != "Z"
    return True


def night_status(project: Path) -> dict[str, Any] | None:
    """The state file as ``status`` shows it: ``state`` becomes ``stopped`` when it says running
    but its process is gone."""
    data = read_state(project)
    if data is None:
        return None
    if data.get("state") == "running" and not alive(data.get("pid")):
        data = {**data, "state": "stopped"}
    return data


def format_night(data: dict[str, Any] | None) -> list[str]:
    """``status`` lines for the state file (none when there is none)."""
    if not data:
        return []
    state, log = data.get("state"), data.get("log")
    where = f"; log: {sanitize(str(log))}" if log else ""
    if state == "running":
        planned = data.get("calls_planned")
        calls = f"{data.get('calls_done', 0)}/{planned if planned else '?'} model calls"
        eta = data.get("eta_s")
        spent = (
            f"${data['cost_usd']:.4f} so far"
            if isinstance(data.get("cost_usd"), (int, float))
            else f"{data.get('tokens') or 0:,} tokens so far"
            + (f" on your {data['login']} login" if data.get("login") else "")
        )
        elapsed = data.get("elapsed_s") or 0
        return [
            f"  night running now (pid {data.get('pid')}): {sanitize(str(data.get('phase') or '?'))}",
            f"    {calls}, {_duration(float(elapsed))} elapsed"
            + (f", about {_duration(float(eta))} left" if isinstance(eta, (int, float)) else "")
            + f", {spent}{where}",
        ]
    if state == "stopped":
        return [
            f"  the last night (pid {data.get('pid')}, started {sanitize(str(data.get('started')))}) "
            f"stopped without finishing, after {data.get('calls_done', 0)} model calls{where}"
        ]
    code = data.get("exit_code")
    how = f"ended with exit {code}" if code else "finished"
    result = f" ({sanitize(str(data['result']))})" if data.get("result") else ""
    return [f"  last night {how}{result} at {sanitize(str(data.get('updated')))}{where}"]
