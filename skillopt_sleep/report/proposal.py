"""What a person reviews about one staged proposal: each proposed rule with its scope, the
evidence it came from and the per-task gain that justified it; the refused edits and why; and the
diff of each document's managed block.

``review`` prints this view as Markdown (``report/review.py``); ``report.html`` shows it beside
the project's score trend (``report/html.py``). Everything here is data; rendering sanitizes.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from skillopt_sleep.documents.managed_block import END, START
from skillopt_sleep.errors import EXIT_CONFLICT, UserError
from skillopt_sleep.paths import TRANSCRIPT_SOURCES
from skillopt_sleep.checks.judges import JudgeError, check_from_id, describe_check
from skillopt_sleep.report.night_numbers import nothing_learned, numbers, score_text
from skillopt_sleep.redact import redact, redact_obj
from skillopt_sleep.types import Edit, GateDecision, NightReport, TaskRecord
from skillopt_sleep.files import read_json

EXCERPT_CHARS = 160


@dataclass
class EvidenceTask:
    task_id: str
    kind: str  # the kind of recurring task (the miner's label), "unknown" when not recorded
    split: str
    excerpt: str  # the start of the request, redacted
    agent: str = ""  # whose session the request came from ("" for a tasks file or an older report)

    @property
    def origin(self) -> str:
        """``kind, split`` and, for a mined task, ``from <agent>``: what a reviewer reads beside it."""
        where = f", from {TRANSCRIPT_SOURCES.get(self.agent, (self.agent,))[0]}" if self.agent else ""
        return f"{self.kind}, {self.split}{where}"


@dataclass
class RuleView:
    edit: Edit
    scope: list[str]  # task kinds of its evidence (until rules carry their own scope)
    evidence: list[EvidenceTask]
    decisions: list[GateDecision]  # the gate decisions that tested it, accepted first


@dataclass
class RefusedView:
    edit: Edit | None
    reasons: list[str]
    scope: list[str]
    evidence: list[EvidenceTask]


@dataclass
class DocumentDiff:
    role: str
    live_path: str
    diff: str  # unified diff of the managed block, redacted; "" when not recorded


@dataclass
class ProposalView:
    report: NightReport
    state: str  # staged | adopted | reverted
    staging_dir: str
    rules: list[RuleView] = field(default_factory=list)
    refused: list[RefusedView] = field(default_factory=list)
    documents: list[DocumentDiff] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        report = self.report
        return {
            "night_id": report.night_id,
            "project": report.project,
            "state": self.state,
            "status": report.status,
            "simulated": report.simulated,
            "backends": report.backends,
            "backend_choice": report.backend_choice,
            "staging_dir": self.staging_dir,
            "report_html": str(Path(self.staging_dir) / "report.html"),
            "val": {"baseline": report.baseline, "candidate": report.candidate},
            "numbers": [{"measure": k, "value": v} for k, v in numbers(report)],
            "calls": dict(report.calls),
            "usage": report.usage.to_dict(),
            "nothing_learned": nothing_learned(report) or None,
            "notes": list(report.notes),
            "rules": [
                {
                    "edit": r.edit.to_dict(),
                    "scope": r.scope,
                    "evidence": [asdict(e) for e in r.evidence],
                    "decisions": [d.to_dict() for d in r.decisions],
                }
                for r in self.rules
            ],
            "refused": [
                {
                    "edit": r.edit.to_dict() if r.edit else None,
                    "reasons": r.reasons,
                    "scope": r.scope,
                    "evidence": [asdict(e) for e in r.evidence],
                }
                for r in self.refused
            ],
            "documents": [asdict(d) for d in self.documents],
        }


_HEADLINE = ("gain", "lower_bound", "p_value", "se", "min_gain", "n_tasks")


# How every view (report.md, ``review``, report.html) heads the hand-written line a rule overrides.
OVERRIDES = "Overrides your hand-written line:"


@dataclass(frozen=True)
class TaskRow:
    """One val task of a gate decision, as every view's table shows it (text not yet escaped)."""

    task_id: str
    baseline: str  # "0.250 (n=4)"
    candidate: str
    gain: str  # "+0.500"
    regressed: bool


def task_rows(decision: GateDecision) -> list[TaskRow]:
    """The per-task table of a gate decision, the same in report.md, ``review`` and report.html."""
    return [
        TaskRow(
            d.task_id,
            f"{score_text(d.baseline)} (n={d.n_baseline})",
            f"{score_text(d.candidate)} (n={d.n_candidate})",
            f"{d.delta:+.3f}",
            d.regressed,
        )
        for d in decision.per_task
    ]


def gate_label(decision: GateDecision) -> str:
    """``"this rule alone"`` or ``"3 rules together"``: what a gate decision tested."""
    return "this rule alone" if len(decision.edits) == 1 else f"{len(decision.edits)} rules together"


def headline_statistic(decision: GateDecision) -> str:
    """The numbers a reviewer needs from a gate decision's statistic (the rest is in report.json)."""
    parts = []
    for key in _HEADLINE:
        value = decision.statistic.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if key == "p_value":  # an exact test's p (``gate.exact.exact_p``) is often far below 0.001
            parts.append(f"p={value:.2g}")
        else:
            parts.append(f"{key}={value:.3f}" if isinstance(value, float) else f"{key}={value}")
    return ", ".join(parts)


@dataclass(frozen=True)
class DecisionView:
    """One gate decision as every view shows it (text not yet escaped): what it tested, its
    verdict on which scores, the headline numbers, the reasons and the per-task table."""

    label: str  # "this rule alone"
    verdict: str  # "accepted" / "refused"
    scores: str  # "val 0.500 → 0.750"
    statistic: str  # "gain=0.250, lower_bound=0.100, ..." or ""
    reasons: list[str]
    rows: list[TaskRow]


def decision_view(decision: GateDecision) -> DecisionView:
    return DecisionView(
        gate_label(decision),
        "accepted" if decision.accepted else "refused",
        f"val {score_text(decision.baseline)} → {score_text(decision.candidate)}",
        headline_statistic(decision),
        list(decision.reasons),
        task_rows(decision),
    )


def deciding_decision(edit: Edit, decisions: list[GateDecision]) -> GateDecision | None:
    """The accepting gate decision that tested ``edit`` most directly (alone if it was)."""
    tested = [d for d in decisions if d.accepted and edit in d.edits]
    tested.sort(key=lambda d: len(d.edits))
    return tested[0] if tested else None


def why_accepted(edit: Edit, decisions: list[GateDecision], task_index: dict[str, dict[str, str]]) -> str:
    """One line saying why the gate kept a rule: the kinds whose val tasks moved, by how much,
    and the gate's headline figure ("" when no accepting decision is recorded)."""
    decision = deciding_decision(edit, decisions)
    if decision is None:
        return ""
    by_kind: dict[str, list[float]] = {}
    for d in decision.per_task:
        kind = (task_index.get(d.task_id) or {}).get("kind") or "unknown"
        by_kind.setdefault(kind, []).append(d.delta)
    moved = sorted(by_kind.items(), key=lambda kv: -sum(kv[1]) / len(kv[1]))
    parts = [
        f"{kind} {sum(ds) / len(ds):+.2f} on {len(ds)} task(s)" for kind, ds in moved if any(abs(x) > 1e-9 for x in ds)
    ]
    kinds = "; ".join(parts) or "no val task moved"
    gain = decision.statistic.get("gain")
    low = decision.statistic.get("lower_bound")
    figure = f"val {decision.baseline:.3f} -> {decision.candidate:.3f}"
    if isinstance(gain, (int, float)) and not isinstance(gain, bool):
        figure += f", gain {gain:+.3f}"
        if decision.statistic.get("gain_of") == "the checks it fixes" and edit.targets:
            figure += f" on what it fixes ({_checks(edit.targets)})"
    exact = decision.statistic.get("p_value")
    if isinstance(exact, (int, float)) and not isinstance(exact, bool):
        figure += f" (p {exact:.2g}, exact)"  # tested exactly (``gate.exact.exact_p``)
    elif isinstance(low, (int, float)) and not isinstance(low, bool):
        figure += f" (lower bound {low:+.3f})"
    if edit.targets and decision.statistic.get("gain_of") != "the checks it fixes":
        figure += f"; on its train tasks it fixed: {_checks(edit.targets)}"
    asked = asked_for(edit, task_index)
    if asked:
        figure += f'; asked for in a session: "{asked}"'
    return f"{gate_label(decision)}: {kinds}; {figure}"


def asked_for(edit: Edit, task_index: dict[str, Any]) -> str:
    """The person's complaint that asked for what the rule fixes (a check it targets, as stated in
    a session of its evidence), or "" when none is known."""
    for target in edit.targets:
        for task_id in edit.evidence:
            said = (task_index.get(task_id) or {}).get("said") if isinstance(task_index.get(task_id), dict) else None
            if isinstance(said, dict) and isinstance(said.get(target), str):
                return said[target]
    return ""


def _checks(targets: list[str]) -> str:
    """The checks a rule fixes, as a person reads them ("must contain ..."); an unreadable id as is."""
    out = []
    for target in targets:
        try:
            out.append(describe_check(check_from_id(target)))
        except (JudgeError, ValueError, KeyError, TypeError):
            out.append(target)
    return "; ".join(out)


# --------------------------------------------------------------------------- at night time


def task_summaries(tasks: list[TaskRecord]) -> dict[str, dict[str, Any]]:
    """What the report keeps about each task so a reviewer can see a rule's evidence."""
    out: dict[str, dict[str, Any]] = {}
    for task in tasks:
        kind = task.kind or task.skill_hint or (task.tags[0] if task.tags else "") or "unknown"
        excerpt = " ".join(redact(task.intent).split())
        if len(excerpt) > EXCERPT_CHARS:
            excerpt = excerpt[: EXCERPT_CHARS - 1].rstrip() + "…"
        out[task.id] = {"kind": kind, "split": task.split, "excerpt": excerpt}
        if task.agent:
            out[task.id]["agent"] = task.agent
        said = (task.judge or {}).get("said")
        if isinstance(said, dict) and said:
            out[task.id]["said"] = {str(k): " ".join(redact(str(v)).split())[:EXCERPT_CHARS] for k, v in said.items()}
    return out


def _block_lines(text: str) -> list[str]:
    start = text.find(START)
    end = text.find(END, start + len(START)) if start >= 0 else -1
    if start < 0 or end < 0:
        return []
    return text[start : end + len(END)].splitlines(keepends=True)


def managed_block_diff(path: str, baseline: bytes | None, proposed: bytes) -> str:
    """Unified diff of the managed block before and after (redacted; text outside the block is
    never shown: it is the user's and does not change)."""
    before = _block_lines((baseline or b"").decode("utf-8", "replace"))
    after = _block_lines(proposed.decode("utf-8", "replace"))
    label = f"{path} (managed block)"
    lines = difflib.unified_diff(before, after, fromfile=f"a/{label}", tofile=f"b/{label}")
    return redact("".join(line if line.endswith("\n") else line + "\n" for line in lines))


# --------------------------------------------------------------------------- at review time


def _evidence(ids: list[str], index: dict[str, Any]) -> tuple[list[str], list[EvidenceTask]]:
    tasks = []
    for task_id in ids:
        info = index.get(task_id)
        if not isinstance(info, dict):
            info = {}
        tasks.append(
            EvidenceTask(
                task_id=str(task_id),
                kind=str(info.get("kind") or "unknown"),
                split=str(info.get("split") or "?"),
                excerpt=str(info.get("excerpt") or ""),
                agent=str(info.get("agent") or ""),
            )
        )
    scope = sorted({t.kind for t in tasks})
    return scope, tasks


def _as_edit(value: Any) -> Edit | None:
    if isinstance(value, Edit):
        return value
    try:
        return Edit.from_dict(value)
    except ValueError:
        return None


def build_view(report: NightReport, manifest: dict[str, Any], state: str, staging_dir: str) -> ProposalView:
    view = ProposalView(report=report, state=state, staging_dir=staging_dir)
    for edit in report.accepted_edits:
        scope, evidence = _evidence(list(edit.evidence), report.task_index)
        tested = [d for d in report.decisions if edit in d.edits]
        tested.sort(key=lambda d: (not d.accepted, len(d.edits) != 1))
        view.rules.append(RuleView(edit=edit, scope=scope, evidence=evidence, decisions=tested))
    for item in report.rejected_edits:
        item = item if isinstance(item, dict) else {"edit": item}
        refused = _as_edit(item.get("edit"))
        scope, evidence = _evidence(list(refused.evidence) if refused else [], report.task_index)
        view.refused.append(
            RefusedView(
                edit=refused, reasons=[str(r) for r in item.get("reasons") or []], scope=scope, evidence=evidence
            )
        )
    for entry in manifest.get("files") or []:
        if isinstance(entry, dict):
            view.documents.append(
                DocumentDiff(
                    role=str(entry.get("role")),
                    live_path=str(entry.get("live_path")),
                    diff=str(entry.get("diff") or ""),
                )
            )
    return view


def load_view(proposal: dict[str, Any]) -> ProposalView:
    """The view of one proposal as ``store.proposals.list_proposals`` lists it (manifest + state)."""
    staging_dir = Path(proposal["staging_dir"])
    try:
        data = read_json(staging_dir / "report.json")
        report = NightReport.from_dict(redact_obj(data))  # read back like anything else shown
    except (OSError, ValueError) as exc:
        raise UserError(
            f"the report of night {proposal.get('night_id')} in {staging_dir} is "
            f"unreadable ({exc.__class__.__name__}); nothing to review",
            EXIT_CONFLICT,
        ) from None
    return build_view(report, proposal, str(proposal.get("state") or "staged"), str(staging_dir))
