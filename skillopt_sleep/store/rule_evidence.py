"""Val evidence pooled across nights, so a re-proposed edit adds samples instead of re-rolling.

An edit the gate could not prove useful comes back on later nights. Re-testing it from scratch
gives it a fresh lottery ticket each night; instead its earlier val samples are kept and the new
night's samples are added to them, so its evidence only grows (the documents it is compared with
come back through the score cache, sample by sample). Samples are keyed by

  * the target model (another model answers differently),
  * the fingerprint of the documents the edit is applied to ("everything else"),
  * the edit, named by its normalised text, so a simple rewording finds the same record
    (``refusals.same_rule``),
  * the val task's normalised content (not its id: a re-mined task keeps its evidence).

Beside each score the pool keeps the rule checks that sample failed, so a re-tested rule's earlier
nights count toward the test on the checks it fixes (``Edit.targets``) as well as toward its score.

Records expire (``max_age``); an edit tested on ``max_nights`` nights without being accepted is
*settled* and not offered again. A re-test draws new samples only when the night brings something
new: a record remembers the val tasks (by content) it was last tested on, and an edit refused on
exactly tonight's val tasks is not tested again (``unchanged``) — more draws on the same question
would be the lottery ticket again, and a night where nothing changed should cost nothing. New or
changed val tasks, other base documents or another target model (another pool), or an expired
record open a re-test. Each extra night of testing spends a halving share of the gate's
false-accept rate (``alpha_share``), so repetition cannot wear the gate down. An edit accepted
before (a staged proposal not adopted yet) is not pooled: its re-test replays that night's draws
(``score_cache``) and costs nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from skillopt_sleep.files import atomic_write_text, parse_json, read_bytes_or_none
from skillopt_sleep.store.history import project_key
from skillopt_sleep.redact import redact
from skillopt_sleep.store.refusals import rule_text, same_rule
from skillopt_sleep.sanitize import clean_text
from skillopt_sleep.types import Edit, TaskRecord, format_time, parse_time

BASE = "base"  # an identity for the base documents themselves (not pooled by consolidate)
MAX_SAMPLES = 48  # per task and identity: older samples are dropped beyond this
RULE_FIELDS = ("content", "anchor", "scope", "supersedes", "targets")  # what a record keeps of a rule


def task_content_key(task: TaskRecord) -> str:
    """A val or train task's identity by what it asks and how it is judged, not by its id:
    case and spacing do not count."""

    def norm(text: str) -> str:
        return " ".join((text or "").casefold().split())

    blob = json.dumps(
        [norm(task.intent), norm(task.context_excerpt), norm(task.system), norm(task.reference), task.judge],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:24]


def val_set_key(tasks: list[TaskRecord]) -> str:
    """The val tasks of a night by content (order and ids do not count)."""
    blob = "\n".join(sorted(task_content_key(t) for t in tasks))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:24]


@dataclass
class EditRecord:
    """One edit's pooled history against one set of base documents and one target model."""

    target: str
    op: str
    text: str  # normalised rule text (``refusals.rule_text``)
    nights: int = 0  # nights it was gated on
    accepted: bool = False
    updated: datetime | None = None
    val_set: str = ""  # ``val_set_key`` of the val tasks of its last test ("" unknown)
    undecided: int = 0  # of ``nights``: nights a call cap stopped its test before a verdict
    # the whole rule as last gated (``Edit`` fields but its rationale and evidence ids), so a later
    # night can rebuild it and resume its test; None in a record written before it was kept
    rule: dict[str, Any] | None = None
    kinds: list[str] = field(default_factory=list)  # kinds of its evidence tasks (``types.kind_of``)
    lower_bound: float | None = None  # the gain's lower bound at its last look (best evidence first)
    last_undecided: bool = False  # its last night's test stopped for the cap before a verdict
    # the sequential test a cap stopped: looks taken so far, and the share of the false-accept
    # rate each look's part is taken of (``gate.sampling.resumed``); 0 / None: nothing to resume
    looks: int = 0
    share: float | None = None
    # its gain on its own val tasks was shown at its last look (``looks``): what a cap left
    # undecided is the night's rules measured together (``gate.together``), which a later night
    # goes on with, without judging that gain again
    own_passed: bool = False

    def edit(self) -> Edit:
        return Edit(self.target, self.op, content=self.text)

    def whole(self) -> Edit | None:
        """The rule as it was gated (``rule``), or None when the record does not keep it."""
        rule = self.rule
        if not isinstance(rule, dict) or not isinstance(rule.get("content"), str):
            return None
        targets = rule.get("targets")
        return Edit(
            self.target,
            self.op,
            content=rule["content"],
            anchor=str(rule.get("anchor", "") or ""),
            scope=str(rule.get("scope", "") or ""),
            supersedes=str(rule.get("supersedes", "") or ""),
            targets=[str(t) for t in targets] if isinstance(targets, list) else [],
        )

    def pending(self) -> bool:
        """Its last test ran out of calls before a verdict, and it was never accepted."""
        return not self.accepted and self.last_undecided


@dataclass
class EvidencePool:
    """The pooled samples of one project for one (target model, base documents) pair.

    Load with ``EvidencePool.load``; ``consolidate`` reads and adds samples; the night calls
    ``save`` only when it succeeds (a dry run or a failed night changes nothing).
    """

    path: Path | None
    project: str
    model: str
    base: str  # fingerprint of the base documents
    max_age: timedelta = timedelta(days=30)
    max_nights: int = 4
    now: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    edits: dict[str, EditRecord] = field(default_factory=dict)  # identity -> record
    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # identity -> task key -> scores
    # identity -> task key -> the rule checks each of those samples failed (None: not known)
    failed: dict[str, dict[str, list[frozenset[str] | None]]] = field(default_factory=dict)
    _other: list[dict[str, Any]] = field(default_factory=list)  # records of other scopes, kept as read

    # -- identity ------------------------------------------------------------------------------

    def identity(self, edit: Edit) -> str:
        """The pooled identity of an edit: an earlier record of the same rule (or a rewording of
        it), else a new one named by its normalised text."""
        for ident, record in self.edits.items():
            if same_rule(edit, record.edit()):
                return ident
        text = rule_text(edit)
        return "edit:" + hashlib.sha256(f"{edit.target}\0{edit.op}\0{text}".encode()).hexdigest()[:24]

    def nights_tested(self, edit: Edit) -> int:
        record = self.edits.get(self.identity(edit))
        return record.nights if record else 0

    def accepted_before(self, edit: Edit) -> bool:
        """Accepted on an earlier night against these documents (staged, not yet adopted): its
        re-test is a replay of that night, not another try."""
        record = self.edits.get(self.identity(edit))
        return record is not None and record.accepted

    def alpha_share(self, edit: Edit) -> float:
        """The share of the gate's false-accept rate tonight's test of ``edit`` may spend: all of
        it on its first night, half on its second, a quarter on its third, ..."""
        return 0.5 ** self.nights_tested(edit)

    def unchanged(self, edit: Edit, val_set: str) -> bool:
        """Refused on an earlier night on these very val tasks (and, by the pool's scope, these
        documents and this model): tonight has nothing new to ask it, so it is not re-tested."""
        record = self.edits.get(self.identity(edit))
        return record is not None and not record.accepted and bool(val_set) and record.val_set == val_set

    def settled(self, edit: Edit) -> bool:
        """Tested to a verdict on ``max_nights`` nights and never accepted: not worth another night.
        Nights a call cap left it undecided do not count toward that, up to ``3 x max_nights``
        nights in all (each spends its share of the false-accept rate all the same)."""
        record = self.edits.get(self.identity(edit))
        return (
            record is not None
            and not record.accepted
            and (record.nights - record.undecided >= self.max_nights or record.nights >= 3 * self.max_nights)
        )

    # -- samples -------------------------------------------------------------------------------

    def stored(self, identity: str, task_key: str) -> list[float]:
        return list(self.samples.get(identity, {}).get(task_key, []))

    def stored_failed(self, identity: str, task_key: str) -> list[frozenset[str] | None]:
        """The failed checks of each of ``stored``'s samples (None where not known)."""
        scores = self.stored(identity, task_key)
        failed = self.failed.get(identity, {}).get(task_key) or []
        return list(failed) if len(failed) == len(scores) else [None] * len(scores)

    def record_samples(
        self, identity: str, task_key: str, scores: list[float], failed: list[frozenset[str] | None] | None = None
    ) -> None:
        """All samples this identity now has for the task (stored ones first), capped; ``failed``:
        the checks each failed, in the same order."""
        self.samples.setdefault(identity, {})[task_key] = list(scores)[-MAX_SAMPLES:]
        known = failed if failed is not None and len(failed) == len(scores) else [None] * len(scores)
        self.failed.setdefault(identity, {})[task_key] = list(known)[-MAX_SAMPLES:]

    def record_test(
        self,
        edit: Edit,
        accepted: bool,
        val_set: str = "",
        undecided: bool = False,
        kinds: list[str] | None = None,
        lower_bound: float | None = None,
        looks: int = 0,
        share: float | None = None,
        own_passed: bool = False,
    ) -> None:
        """A night's test of ``edit``; ``undecided``: a call cap stopped it before a verdict.
        ``kinds``: the kinds of its evidence tasks; ``lower_bound``: the gain's at its last look;
        ``own_passed``: undecided after its gain on its own tasks was shown (``EditRecord``).
        The whole rule is kept beside them, so a later night can resume it (``pending``)."""
        ident = self.identity(edit)
        record = self.edits.get(ident) or EditRecord(edit.target, edit.op, rule_text(edit))
        record.nights += 1
        record.undecided += int(undecided)
        record.last_undecided = undecided
        record.accepted = record.accepted or accepted
        record.updated = self.now
        record.val_set = val_set
        record.rule = _rule_of(edit)
        if kinds:
            record.kinds = sorted(set(kinds))
        record.lower_bound = lower_bound
        record.looks, record.share = (looks, share) if undecided else (0, None)
        record.own_passed = undecided and own_passed and looks > 0 and bool(share)
        self.edits[ident] = record

    def resume_at(self, edit: Edit) -> tuple[int, float] | None:
        """(looks taken, share) of ``edit``'s test a cap stopped after a look, to go on with."""
        record = self.edits.get(self.identity(edit))
        if record is None or not record.pending() or record.looks <= 0 or not record.share:
            return None
        return record.looks, record.share

    def own_passed(self, edit: Edit) -> bool:
        """Whether ``edit``'s resumed test already showed its gain on its own tasks."""
        record = self.edits.get(self.identity(edit))
        return record is not None and record.own_passed and self.resume_at(edit) is not None

    def hold(self, edit: Edit, kinds: list[str]) -> None:
        """A rule a capped night began to draw for but stopped before its gate's first look: kept
        pending with its samples, resumed first on a later night. No look, no verdict: it spent
        none of the false-accept rate, so the nights it was tested on do not change."""
        ident = self.identity(edit)
        record = self.edits.get(ident) or EditRecord(edit.target, edit.op, rule_text(edit))
        if record.accepted:
            return
        record.updated = self.now
        record.last_undecided = True
        record.rule = _rule_of(edit)
        record.kinds = sorted(set(kinds)) or record.kinds
        self.edits[ident] = record

    def pending(self) -> list[tuple[str, EditRecord]]:
        """Rules whose last test the cap stopped before a verdict, never accepted, that the record
        can rebuild: best evidence first (the highest lower bound of the gain at their last look)."""
        out = [(ident, r) for ident, r in self.edits.items() if r.pending() and r.whole() is not None]
        return sorted(
            out, key=lambda item: -(item[1].lower_bound if item[1].lower_bound is not None else float("-inf"))
        )

    # -- persistence ---------------------------------------------------------------------------

    @classmethod
    def load(
        cls, path: str | os.PathLike[str] | None, project: str | os.PathLike[str], model: str, base: str, **kwargs: Any
    ) -> EvidencePool:
        """The pool for this scope; records of other scopes are kept for ``save``; expired ones and
        an unreadable file are dropped (evidence is an optimisation, never a reason to fail)."""
        pool = cls(Path(path) if path is not None else None, project_key(project), model, base, **kwargs)
        raw = read_bytes_or_none(pool.path) if pool.path is not None else None
        try:
            data = parse_json(raw) if raw else {}
        except ValueError:
            data = {}
        entries = data.get("records") if isinstance(data, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            updated = parse_time(entry.get("updated"))
            if updated is None or pool.now - updated > pool.max_age:
                continue
            if (entry.get("project"), entry.get("model"), entry.get("base")) != (pool.project, model, base):
                pool._other.append(entry)
                continue
            try:
                pool._adopt(entry, updated)
            except (TypeError, ValueError, OverflowError):
                continue  # a hand-edited record: dropped, like an expired one
        pool._carry_pending()
        return pool

    def _carry_pending(self) -> None:
        """Rules a cap left undecided against other documents of this project and model (the
        documents changed since: a rule was adopted, or one reverted) come along as pending rules
        without their samples: tonight gates them first, as new tests against tonight's documents
        (samples drawn against other documents say nothing about these), instead of losing the
        rule an earlier night's reflection chose and paying for reflection again. Only a rule's
        newest record counts: one decided since, against any documents, stays decided."""
        newest: list[tuple[datetime, EditRecord, dict[str, Any]]] = []
        for entry in self._other:
            edit = entry.get("edit")
            updated = parse_time(entry.get("updated"))
            if (
                (entry.get("project"), entry.get("model")) != (self.project, self.model)
                or not isinstance(edit, dict)
                or updated is None
            ):
                continue
            try:
                record = _record_of(edit, updated)
            except (TypeError, ValueError, OverflowError):
                continue
            same = next((i for i, (_, r, _) in enumerate(newest) if same_rule(r.edit(), record.edit())), None)
            if same is None:
                newest.append((updated, record, edit))
            elif updated > newest[same][0]:
                newest[same] = (updated, record, edit)
        for _, record, _ in newest:
            rule = record.whole()
            if not record.pending() or rule is None or not record.kinds or self.identity(rule) in self.edits:
                continue
            # a new test: nothing tested, nothing spent against these documents
            self.edits[self.identity(rule)] = replace(
                record, nights=0, undecided=0, val_set="", looks=0, share=None, own_passed=False
            )

    def _adopt(self, entry: dict[str, Any], updated: datetime) -> None:
        ident = str(entry.get("identity", ""))
        scores = entry.get("samples")
        if not ident or not isinstance(scores, dict):
            return
        edit = entry.get("edit")
        if ident != BASE:
            if not isinstance(edit, dict):
                return
            self.edits[ident] = _record_of(edit, updated)
        self.samples[ident] = {
            str(k): [float(x) for x in v if isinstance(x, (int, float)) and 0.0 <= x <= 1.0][-MAX_SAMPLES:]
            for k, v in scores.items()
            if isinstance(v, list)
        }
        failed = entry.get("failed")
        self.failed[ident] = {}
        for key, kept in self.samples[ident].items():
            raw = failed.get(key) if isinstance(failed, dict) else None
            # a hand-edited list that does not line up with the scores is not guessed at
            if isinstance(raw, list) and len(raw) == len(kept):
                self.failed[ident][key] = [_checks(x) for x in raw]
            else:
                self.failed[ident][key] = [None] * len(kept)

    def save(self) -> None:
        if self.path is None:
            return
        stamp = format_time(self.now)
        records = list(self._other)
        # a rule held for a later night before anything was drawn for it has a record and no samples
        held: dict[str, dict[str, list[float]]] = {
            ident: {} for ident, r in self.edits.items() if ident not in self.samples and r.pending()
        }
        for ident, scores in {**self.samples, **held}.items():
            entry: dict[str, Any] = {
                "project": self.project,
                "model": self.model,
                "base": self.base,
                "identity": ident,
                "updated": stamp,
                "samples": scores,
            }
            failed = {
                key: [None if f is None else sorted(f) for f in self.failed.get(ident, {}).get(key, [])]
                for key in scores
            }
            if any(any(f is not None for f in fs) for fs in failed.values()):
                entry["failed"] = failed
            record = self.edits.get(ident)
            if record is not None:
                entry["edit"] = {
                    "target": record.target,
                    "op": record.op,
                    "text": record.text,
                    "nights": record.nights,
                    "accepted": record.accepted,
                    "val_set": record.val_set,
                    "undecided": record.undecided,
                }
                entry["edit"].update(_rule_fields(record))
                entry["updated"] = format_time(record.updated or self.now)
            elif ident != BASE:
                continue
            records.append(entry)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps({"version": 1, "records": records}, ensure_ascii=False))


def _checks(value: Any) -> frozenset[str] | None:
    """One stored sample's failed checks: a list of check ids, else not known."""
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return frozenset(value)
    return None


def _rule_of(edit: Edit) -> dict[str, Any]:
    """What a record keeps of a rule (``RULE_FIELDS``)."""
    return {name: list(edit.targets) if name == "targets" else getattr(edit, name) for name in RULE_FIELDS}


def _rule_fields(record: EditRecord) -> dict[str, Any]:
    """What a record keeps of the whole rule, for ``save`` (cleaned and redacted like every text
    the engine writes)."""
    out: dict[str, Any] = {"last_undecided": record.last_undecided, "kinds": [_clean(k) for k in record.kinds]}
    if record.rule is not None:
        out["rule"] = {k: [_clean(t) for t in v] if isinstance(v, list) else _clean(v) for k, v in record.rule.items()}
    if record.lower_bound is not None:
        out["lower_bound"] = record.lower_bound
    if record.looks and record.share:
        out["looks"], out["share"] = record.looks, record.share
        if record.own_passed:
            out["own_passed"] = True
    return out


def _record_of(edit: dict[str, Any], updated: datetime) -> EditRecord:
    """A saved record's ``edit`` part read back (the caller drops one that does not parse)."""
    record = EditRecord(
        str(edit.get("target", "")),
        str(edit.get("op", "")),
        str(edit.get("text", "")),
        int(edit.get("nights", 0) or 0),
        bool(edit.get("accepted")),
        updated,
        str(edit.get("val_set", "") or ""),
        int(edit.get("undecided", 0) or 0),
    )
    _whole_rule(record, edit)
    return record


def _whole_rule(record: EditRecord, edit: dict[str, Any]) -> None:
    """The fields ``_rule_fields`` wrote, read back; a record written without them, or with a
    malformed one, keeps its defaults (it is pooled as before, only never resumed on its own)."""
    rule = edit.get("rule")
    if (
        isinstance(rule, dict)
        and all(isinstance(v, str) for k, v in rule.items() if k != "targets")
        and isinstance(rule.get("targets", []), list)
    ):
        record.rule = {k: rule.get(k, [] if k == "targets" else "") for k in RULE_FIELDS}
    kinds = edit.get("kinds")
    if isinstance(kinds, list):
        record.kinds = [k for k in kinds if isinstance(k, str)]
    bound = edit.get("lower_bound")
    if isinstance(bound, (int, float)) and not isinstance(bound, bool) and math.isfinite(bound):
        record.lower_bound = float(bound)
    record.last_undecided = edit.get("last_undecided") is True
    looks, share = edit.get("looks"), edit.get("share")
    if (
        isinstance(looks, int)
        and not isinstance(looks, bool)
        and looks > 0
        and isinstance(share, (int, float))
        and not isinstance(share, bool)
        and 0 < share <= 1
    ):
        record.looks, record.share = looks, float(share)
        record.own_passed = edit.get("own_passed") is True


def _clean(text: Any) -> str:
    return redact(clean_text(text))
