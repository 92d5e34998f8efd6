"""The records a night passes from stage to stage (DESIGN §2).

Plain dataclasses, JSON round-trippable through ``to_dict`` / ``from_dict``. Datetimes are
always timezone-aware UTC and serialise as ISO-8601 strings.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeVar

T = TypeVar("T")

TASKS_FORMAT = "skillopt_sleep.tasks.v1"
SPLITS = ("train", "val", "test")
EDIT_TARGETS = ("skill", "memory")
EDIT_OPS = ("add", "replace", "delete", "insert_after", "replace_line", "delete_line")  # *_line: opted-in skills


_FROMISOFORMAT_READS_Z = sys.version_info >= (3, 11)


def utc(dt: datetime) -> datetime:
    """Return ``dt`` as an aware UTC datetime (naive input is taken to be UTC)."""
    if dt.tzinfo is None:
        return dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


def parse_time(value: Any) -> datetime | None:
    """Parse an ISO-8601 timestamp (``Z`` suffix allowed) into aware UTC, or None.

    A time that exists only in another zone (``0001-01-01T00:00:00+01:00`` is before year 1 in
    UTC) is None too: it cannot be compared with anything.
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        try:
            return utc(value)
        except OverflowError:
            return None
    if not isinstance(value, str):
        return None
    if _FROMISOFORMAT_READS_Z and len(value) == 24 and value[23] == "Z":  # as both agents write times
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            when = None
        if when is not None and when.tzinfo is timezone.utc:
            return when
    text = value.strip()
    if text.endswith("Z") or text.endswith("z"):
        text = text[:-1] + "+00:00"
    try:
        return utc(datetime.fromisoformat(text))
    except (ValueError, OverflowError):
        return None


def time_of_day(text: str) -> tuple[int, int] | None:
    """``"HH:MM"`` (``"7:05"`` too) as (hour, minute), or None when it is not a time of day."""
    hour, sep, minute = text.strip().partition(":")
    if sep and hour.isdigit() and minute.isdigit() and len(minute) == 2:
        h, m = int(hour), int(minute)
        if 0 <= h < 24 and 0 <= m < 60:
            return h, m
    return None


def format_time(dt: datetime | None) -> str | None:
    if dt is None:
        return None
    return utc(dt).isoformat().replace("+00:00", "Z")


def _to_jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_time(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_jsonable(v) for v in value]
    return value


class Record:
    """Mixin: ``to_dict`` / ``from_dict`` for the dataclasses below."""

    _time_fields: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return _to_jsonable(self)

    @classmethod
    def from_dict(cls: type[T], data: dict[str, Any]) -> T:
        if not isinstance(data, dict):
            raise ValueError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        kwargs = {k: v for k, v in data.items() if k in names}
        for name in getattr(cls, "_time_fields", ()):
            if name in kwargs:
                kwargs[name] = parse_time(kwargs[name])
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise ValueError(f"{cls.__name__}: {exc}") from None


@dataclass
class Feedback(Record):
    """A user's reaction to the previous assistant reply."""

    polarity: str  # "positive" | "negative"
    text: str
    prompt_index: int  # index in SessionDigest.user_prompts of the request it reacts to


@dataclass
class SessionDigest(Record):
    source: str  # the agent, as in paths.TRANSCRIPT_SOURCES
    session_id: str
    project: str  # absolute cwd
    path: str  # transcript file
    branch: str | None = None
    started: datetime | None = None
    ended: datetime | None = None
    user_prompts: list[str] = field(default_factory=list)
    assistant_finals: list[str] = field(default_factory=list)
    tools_used: list[str] = field(default_factory=list)
    skills_used: list[str] = field(default_factory=list)
    files_touched: list[str] = field(default_factory=list)
    feedback: list[Feedback] = field(default_factory=list)
    n_user_turns: int = 0
    n_assistant_turns: int = 0

    _time_fields = ("started", "ended")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionDigest:
        digest = super().from_dict(data)
        digest.feedback = [f if isinstance(f, Feedback) else Feedback.from_dict(f) for f in digest.feedback]
        return digest


@dataclass
class TaskRecord(Record):
    """A self-contained, checkable task (upstream ``skillopt_sleep.tasks.v1`` fields)."""

    id: str
    intent: str
    project: str = ""
    context_excerpt: str = ""
    system: str = ""  # the output contract given to the model
    attempted_solution: str = ""
    outcome: str = "unknown"  # success | failure | unknown
    reference_kind: str = "rule"  # exact | rubric | rule | none
    reference: str = ""
    judge: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    source_sessions: list[str] = field(default_factory=list)
    split: str = "train"  # train | val | test
    origin: str = "real"  # real | dream
    derived_from: str | None = None
    skill_hint: str | None = None
    recurrence: int = 1  # how many times this kind of request was seen
    kind: str = ""  # what kind of work, in the requests' words ("release notes"); scope.py
    agent: str = ""  # the agent whose session the request came from (paths.TRANSCRIPT_SOURCES); "" when not mined


def kind_of(task: TaskRecord) -> str:
    """The kind a task is counted and grouped under: its mined kind, else its skill hint, else itself."""
    return task.kind or task.skill_hint or task.id


@dataclass
class Usage(Record):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


@dataclass
class Attempt(Record):
    task_id: str
    sample: int
    response: str
    hard: float  # 1.0 when every check passed
    soft: float  # fraction of checks passed
    fail_reasons: list[str] = field(default_factory=list)  # human-readable (prompts, reports)
    failed_checks: list[str] = field(default_factory=list)  # the failed rule checks as data (judges.check_id)
    tools_called: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Attempt:
        attempt = super().from_dict(data)
        if isinstance(attempt.usage, dict):
            attempt.usage = Usage.from_dict(attempt.usage)
        return attempt


@dataclass
class Edit(Record):
    target: str  # skill | memory
    op: str  # add | replace | delete | insert_after | replace_line | delete_line
    content: str = ""
    anchor: str = ""  # the rule (or, for *_line ops, the hand-written line) the edit acts on
    rationale: str = ""
    evidence: list[str] = field(default_factory=list)
    scope: str = ""  # the kind of work the rule is for, read after "When"; "" = every kind (scope.py)
    supersedes: str = ""  # a hand-written line this rule overrides, verbatim (documents/managed_block.py)
    # the rule checks it is meant to fix (judges.check_id): those that failed less often when it was
    # replayed on its own train tasks (lookahead.py); the gate tests its gain on them (gate.py).
    # Empty: not known, the gain is tested on the whole score
    targets: list[str] = field(default_factory=list)

    def describe(self) -> str:
        over = f" (supersedes {self.supersedes!r})" if self.supersedes else ""
        if self.op == "add":
            return f"{self.target}: add {self.content!r}{over}"
        if self.op in ("delete", "delete_line"):
            return f"{self.target}: {self.op} {self.anchor!r}"
        return f"{self.target}: {self.op} {self.anchor!r} -> {self.content!r}{over}"


@dataclass
class TaskDelta(Record):
    task_id: str
    baseline: float
    candidate: float
    delta: float
    n_baseline: int
    n_candidate: int
    regressed: bool = False


@dataclass
class GateDecision(Record):
    accepted: bool
    action: str  # accept | reject | skip
    baseline: float
    candidate: float
    per_task: list[TaskDelta] = field(default_factory=list)
    statistic: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GateDecision:
        decision = super().from_dict(data)
        decision.per_task = [d if isinstance(d, TaskDelta) else TaskDelta.from_dict(d) for d in decision.per_task]
        decision.edits = [e if isinstance(e, Edit) else Edit.from_dict(e) for e in decision.edits]
        return decision


@dataclass
class NightReport(Record):
    night_id: str
    project: str
    mode: str  # run | dry-run | demo
    status: str  # staged | no-change | no-tasks | failed | budget
    started: datetime | None = None
    finished: datetime | None = None
    backends: dict[str, str] = field(default_factory=dict)
    backend_choice: str | None = None  # what ``backend = "auto"`` picked, and why
    simulated: bool = False  # made by the sim backend for tasks nobody reviewed: not adoptable by default
    n_sessions: int = 0
    agents: dict[str, int] = field(default_factory=dict)  # sessions harvested per agent (paths.TRANSCRIPT_SOURCES)
    n_tasks: int = 0
    splits: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    baseline: float | None = None  # val score of the current documents
    candidate: float | None = None  # val score of the proposed documents
    train_baseline: float | None = None
    test_baseline: float | None = None
    test_candidate: float | None = None
    accepted_edits: list[Edit] = field(default_factory=list)
    rejected_edits: list[dict[str, Any]] = field(default_factory=list)  # {"edit", "reasons"}
    decisions: list[GateDecision] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)  # per purpose
    left_out: dict[str, int] = field(default_factory=dict)  # why -> replies not scored (scoring.py)
    usage: Usage = field(default_factory=Usage)
    staging_dir: str | None = None
    documents: dict[str, str] = field(default_factory=dict)  # role -> live path
    notes: list[str] = field(default_factory=list)
    task_index: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> kind, split, excerpt

    _time_fields = ("started", "finished")

    @property
    def accepted(self) -> bool:
        return bool(self.accepted_edits)

    def to_dict(self) -> dict[str, Any]:
        """The report as stored (report.json, history) and printed by ``--json``: model and
        transcript text in it never carries escape sequences, invisible characters or secrets."""
        from skillopt_sleep.redact import redact_obj
        from skillopt_sleep.sanitize import clean_obj

        data = super().to_dict()
        data["accepted"] = self.accepted
        return redact_obj(clean_obj(data))

    def redacted(self) -> NightReport:
        """A copy fit to show or write (report.md, report.html, the text ``run`` prints)."""
        return NightReport.from_dict(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NightReport:
        report = super().from_dict(data)
        report.accepted_edits = [e if isinstance(e, Edit) else Edit.from_dict(e) for e in report.accepted_edits]
        report.decisions = [d if isinstance(d, GateDecision) else GateDecision.from_dict(d) for d in report.decisions]
        if isinstance(report.usage, dict):
            report.usage = Usage.from_dict(report.usage)
        return report
