"""What a night will cost, before any model call (``run --estimate``, and the first lines of
``run`` / ``dry-run``).

A night's calls follow from its plan — tonight's tasks and documents, K, the gate's sampling, the
call cap — and from how the model answers: a gate draws more samples while a verdict is uncertain,
a kind stops being dreamed once its tasks teach something. So the estimate does not add up a
formula beside the night; it *rehearses* the night: the night's own code runs on tonight's
harvested and mined tasks, read-only like ``dry-run``, with every model call answered by the
simulator at its default knobs (``backends/sim/knobs.py``) instead of the model. The calls the
rehearsal makes are the calls the plan makes when the model behaves like the simulator; answers the
score cache kept from earlier nights count as reused, as they will in the night itself, and a
question the optimizer was asked last night is answered as it answered then (``estimate_answers``).
Nothing is staged and no call reaches a model (the stand-in never calls the backend it stands for).

Then this project's own nights correct it: each ``run`` records what its rehearsal said and what
the night spent (``estimates.jsonl`` in the state dir); the median ratio of the last few nights
scales calls and tokens, and their measured pace (wall seconds per call) gives the minutes. Before
a project has a night, the pace is ``FIRST_PACE`` — a call through ``claude -p`` took about 5 s on
a developer machine, at ``concurrency`` calls at once — and tokens are the rehearsal's prompt
sizes at ~4 characters a token (a CLI login adds its own system prompt, which the first night's
correction then takes in).
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skillopt_sleep import estimate_answers
from skillopt_sleep.backends.base import Completion, can_offer_tools
from skillopt_sleep.backends.pricing import FREE
from skillopt_sleep.files import append_jsonl, read_jsonl
from skillopt_sleep.paths import TRANSCRIPT_SOURCES
from skillopt_sleep.store.history import project_key
from skillopt_sleep.types import NightReport, Usage, format_time

# The simulator's seeds, one rehearsal each, averaged: one rehearsal is one draw of how the gate's
# sampling goes (a night's calls vary by a third from one draw to the next); fixed, never the night's own
REHEARSAL_SEEDS = (0, 100, 200)
FIRST_PACE = 5.0  # seconds per call before a project has a night of its own: ``claude -p``, measured
PAST_NIGHTS = 5  # nights whose estimate-vs-actual ratios correct the next estimate
RATIO_BOUNDS = (0.2, 5.0)  # a past night further off than this says more about that night than the plan
LOG_NAME = "estimates.jsonl"


class StandIn:
    """A backend as the night sees it (its id, price, tools), answered by the simulator. Its id is
    the real one, so the score cache and the val evidence kept for the real model apply."""

    def __init__(self, real: Any, sim: Any, known: dict[str, Completion] | None = None):
        self.real, self.sim, self.known = real, sim, known or {}
        self.id = real.id
        self.offline = bool(getattr(real, "offline", False))
        self.price = FREE

    def can_offer_tools(self, names: tuple[str, ...]) -> bool:
        return can_offer_tools(self.real, names)

    def complete(self, request: Any) -> Completion:
        known = self.known.get(request.cache_key(self.id))
        if known is not None:  # asked last night too: answered as the model did (estimate_answers)
            return known
        if request.purpose == "mine" and (request.payload or {}).get("grouping"):
            # the simulator has no grouping behaviour: one call that merges nothing
            text = json.dumps({"same_kind": []})
            return Completion(
                text=text,
                model="rehearsal",
                usage=Usage(
                    input_tokens=(len(request.system) + len(request.user)) // 4 + 1, output_tokens=len(text) // 4 + 1
                ),
            )
        return self.sim.complete(request)


def _stand_in(real: Any, seed: int, known: dict[str, Completion]) -> StandIn:
    from skillopt_sleep.backends.sim import SimBackend, SimKnobs

    return StandIn(real, SimBackend(SimKnobs(seed=seed)), known)


@dataclass
class Rehearsal:
    """What the night's plan spends when the model behaves like the simulator."""

    calls: int
    input_tokens: int
    output_tokens: int
    by_phase: dict[str, int]
    backends: dict[str, str]
    splits: dict[str, int]
    sessions: int
    status: str
    seconds: float  # the rehearsal's own wall time
    target_price: Any = None  # the real target backend's price (``pricing.Price``; None: unknown or a login)
    harvested: Any = None  # the transcripts the rehearsals read, for the night that follows them

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "calls_by_phase": dict(self.by_phase),
        }


def rehearse(opts: Any, seeds: tuple[int, ...] = REHEARSAL_SEEDS) -> Rehearsal:
    """Run the night ``opts`` describes on the stand-in, once per seed, and average: read-only, no
    model call. A problem the night would stop on (a tasks file not reviewed, a bad backend spec)
    is raised the same way."""
    started = time.monotonic()
    if opts.tasks_file is None and opts.harvested is None:  # read once, for every rehearsal
        from skillopt_sleep.gather import read_transcripts

        opts = replace(opts, harvested=read_transcripts(replace(opts, progress=lambda message: None)))
    runs = [_rehearse_once(opts, seed) for seed in seeds]
    first, n = runs[0][0], len(runs)
    phases = sorted({k for report, _ in runs for k, v in report.calls.items() if v})
    return Rehearsal(
        calls=round(sum(sum(r.calls.values()) for r, _ in runs) / n),
        input_tokens=round(sum(_input(r.usage) for r, _ in runs) / n),
        output_tokens=round(sum(r.usage.output_tokens for r, _ in runs) / n),
        by_phase={k: v for k in phases if (v := round(sum(r.calls.get(k, 0) for r, _ in runs) / n))},
        backends=dict(first.backends),
        splits=dict(first.splits),
        sessions=first.n_sessions,
        status=first.status,
        seconds=time.monotonic() - started,
        harvested=opts.harvested,
        target_price=next((b.price for b in runs[0][1] if b.id == first.backends.get("target")), None),
    )


def _input(usage: Usage) -> int:
    return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens


def _rehearse_once(opts: Any, seed: int) -> tuple[NightReport, list[Any]]:
    from skillopt_sleep.night import NightStopped, stateless_night

    config = opts.config.replace(night_deadline=None, max_tokens=None, max_cost_usd=None, batch=False)
    real: list[Any] = []
    known = estimate_answers.load(opts.project)

    def stand_in(backend: Any) -> StandIn:
        real.append(backend)
        return _stand_in(backend, seed, known)

    dry = replace(
        opts,
        project=opts.project.expanduser().resolve(),
        config=config,
        mode="dry-run",
        progress=lambda message: None,
        call_progress=None,
        auto_adopt=False,
        resume=False,
        wrap_backend=stand_in,
        stores=[],
    )
    try:
        report = stateless_night(dry)
    except NightStopped as stopped:  # the call cap's backstop: the night stops there too
        report = stopped.report
    return report, real


# -- this project's past nights ------------------------------------------------------------------


def log_path() -> Path:
    from skillopt_sleep.paths import user_dirs

    return user_dirs().state / LOG_NAME


def record(project: Path, rehearsal: Rehearsal, report: NightReport) -> dict[str, Any]:
    """Keep what a finished night spent beside what its rehearsal said (uncorrected)."""
    usage = report.usage
    seconds = None
    if report.started is not None and report.finished is not None:
        seconds = round(max(0.0, (report.finished - report.started).total_seconds()), 3)
    entry = {
        "night_id": report.night_id,
        "project": project_key(project),
        "status": report.status,
        "finished": format_time(report.finished),
        "backend": report.backends.get("target"),
        "estimated": rehearsal.to_dict(),
        "actual": {
            "calls": sum(report.calls.values()),
            "input_tokens": _input(usage),
            "output_tokens": usage.output_tokens,
            "seconds": seconds,
        },
    }
    append_jsonl(log_path(), entry)
    return entry


def past_nights(project: Path) -> list[dict[str, Any]]:
    key = project_key(project)
    return [
        e
        for e in read_jsonl(log_path())
        if e.get("project") == key and isinstance(e.get("estimated"), dict) and isinstance(e.get("actual"), dict)
    ]


def _ratio(entries: list[dict[str, Any]], name: str) -> float | None:
    ratios = []
    for e in entries:
        est, act = e["estimated"].get(name), e["actual"].get(name)
        if isinstance(est, (int, float)) and isinstance(act, (int, float)) and est > 0 and act > 0:
            ratios.append(min(RATIO_BOUNDS[1], max(RATIO_BOUNDS[0], act / est)))
    return statistics.median(ratios) if ratios else None


def _pace(entries: list[dict[str, Any]]) -> float | None:
    paces = [
        e["actual"]["seconds"] / e["actual"]["calls"]
        for e in entries
        if isinstance(e["actual"].get("seconds"), (int, float))
        and isinstance(e["actual"].get("calls"), int)
        and e["actual"]["calls"] > 0
    ]
    return statistics.median(paces) if paces else None


@dataclass
class Correction:
    nights: int = 0
    calls: float = 1.0
    input_tokens: float = 1.0
    output_tokens: float = 1.0
    seconds_per_call: float | None = None  # wall seconds per call (concurrency included)

    @classmethod
    def of(cls, project: Path, backend: str | None) -> Correction:
        """From this project's last nights on the same target backend (another model's pace and
        reply lengths say little about this one's)."""
        entries = [e for e in past_nights(project) if e.get("backend") == backend][-PAST_NIGHTS:]
        if not entries:
            return cls()
        return cls(
            len(entries),
            _ratio(entries, "calls") or 1.0,
            _ratio(entries, "input_tokens") or 1.0,
            _ratio(entries, "output_tokens") or 1.0,
            _pace(entries),
        )


# -- the estimate --------------------------------------------------------------------------------


@dataclass
class Estimate:
    calls: int
    input_tokens: int
    output_tokens: int
    minutes: float
    cost_usd: float | None  # SDK backends with a known price; None on a CLI login or the simulator
    payer: dict[str, Any]
    rehearsal: Rehearsal
    correction: Correction
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        r, c = self.rehearsal, self.correction
        return {
            "ok": True,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "minutes": round(self.minutes, 1),
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 4),
            "payer": self.payer,
            "plan": {
                "sessions": r.sessions,
                "tasks": r.splits,
                "backends": r.backends,
                "status": r.status,
                "calls_by_phase": r.by_phase,
            },
            "rehearsal": r.to_dict(),
            "correction": {
                "nights": c.nights,
                "calls": round(c.calls, 3),
                "input_tokens": round(c.input_tokens, 3),
                "output_tokens": round(c.output_tokens, 3),
                "seconds_per_call": None if c.seconds_per_call is None else round(c.seconds_per_call, 3),
            },
            "notes": list(self.notes),
        }


def payer_of(backend_id: str | None, price: Any = None) -> dict[str, Any]:
    """Who pays for the target's calls: an API account (priced), a CLI login, or nobody."""
    spec = (backend_id or "").split(":", 1)
    name = spec[0].split("(", 1)[0]
    model = spec[1] if len(spec) > 1 else ""
    if name == "sim":
        return {
            "kind": "none",
            "backend": backend_id,
            "login": None,
            "text": "the simulator answers: no model, nothing to pay",
        }
    login = name.removesuffix("-cli")
    if name.endswith("-cli") and login in TRANSCRIPT_SOURCES:  # an agent's CLI on its own login
        who = TRANSCRIPT_SOURCES[login][0]
        return {
            "kind": "login",
            "backend": backend_id,
            "login": login,
            "text": f"your {who} login (the `{login}` CLI): its plan's usage limits, no separate bill",
        }
    return {
        "kind": "api",
        "backend": backend_id,
        "login": None,
        "price_known": price is not None,
        "text": f"the API account of {name} (billed per token)"
        + ("" if price else f"; no price known for {model or 'its model'}"),
    }


def estimate(opts: Any) -> Estimate:
    """Tonight's night as ``opts`` describes it, priced before any model call."""
    rehearsal = rehearse(opts)
    target = rehearsal.backends.get("target")
    correction = Correction.of(opts.project, target)
    payer = payer_of(target, rehearsal.target_price)
    calls = round(rehearsal.calls * correction.calls)
    tokens_in = round(rehearsal.input_tokens * correction.input_tokens)
    tokens_out = round(rehearsal.output_tokens * correction.output_tokens)
    pace = correction.seconds_per_call
    notes = []
    if pace is None:
        pace = 0.0 if payer["kind"] == "none" else FIRST_PACE / max(1, opts.config.models.concurrency)
        if payer["kind"] != "none":
            notes.append(
                f"minutes assume ~{FIRST_PACE:g} s a call, {opts.config.models.concurrency} at once, until this "
                "project has a night of its own"
            )
    if correction.nights:
        notes.append(
            f"corrected by this project's last {correction.nights} night(s): calls x{correction.calls:.2f}, "
            f"input tokens x{correction.input_tokens:.2f}, output tokens x{correction.output_tokens:.2f}"
        )
    else:
        notes.append("no earlier night of this project on this backend to correct it yet")
    cost = None
    if payer["kind"] == "api" and rehearsal.target_price is not None:
        cost = rehearsal.target_price.cost(Usage(input_tokens=tokens_in, output_tokens=tokens_out))
    if rehearsal.status == "no-tasks":
        notes.append("no recurring, checkable tasks tonight: the night would only check the backend")
    cap = opts.config.call_cap()
    if cap is not None:
        notes.append(
            f"capped at {cap:,} calls a night"
            + (
                " (the default when a model answers; max_calls = 0 lifts it)"
                if opts.config.budgets.max_calls is None
                else ""
            )
            + ": the night plans to fit it and resumes what it leaves undecided on the next night"
        )
    return Estimate(
        calls=calls,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        minutes=calls * pace / 60.0,
        cost_usd=cost,
        payer=payer,
        rehearsal=rehearsal,
        correction=correction,
        notes=notes,
    )


def minutes_text(minutes: float) -> str:
    if minutes < 1:
        return "under a minute"
    if minutes < 90:
        return f"about {minutes:.0f} min"
    return f"about {minutes / 60:.1f} h"


def render(est: Estimate) -> str:
    """The estimate as a person reads it."""
    r = est.rehearsal
    tasks = ", ".join(f"{n} {s}" for s, n in r.splits.items() if n) or "none"
    spend = (
        f"about ${est.cost_usd:.2f}"
        if est.cost_usd is not None
        else (
            "no bill (simulator)"
            if est.payer["kind"] == "none"
            else f"{est.calls:,} calls and ~{est.input_tokens + est.output_tokens:,} tokens"
            if est.payer["kind"] == "login"
            else "price unknown"
        )
    )
    lines = [
        f"estimate for tonight: ~{est.calls:,} model calls, ~{est.input_tokens:,} input + ~{est.output_tokens:,} "
        f"output tokens, {minutes_text(est.minutes)}",
        f"  paid by: {est.payer['text']}; {spend}",
        f"  from: {r.sessions} session(s), tasks {tasks}; calls by phase: "
        + (", ".join(f"{k} {v}" for k, v in r.by_phase.items()) or "none"),
    ]
    lines += [f"  {note}" for note in est.notes]
    return "\n".join(lines)


def one_line(est: Estimate) -> str:
    """The estimate in one progress line."""
    cost = f", about ${est.cost_usd:.2f}" if est.cost_usd is not None else ""
    return (
        f"estimate: ~{est.calls:,} model calls, ~{est.input_tokens + est.output_tokens:,} tokens{cost}, "
        f"{minutes_text(est.minutes)} ({est.payer['text'].split(':')[0]})"
    )
