"""The whole night: harvest -> mine -> consolidate -> stage (what ``run``, ``dry-run`` and
``demo`` call).

State only advances when the night succeeds: the harvest checkpoints, the history and the
rejected-edit ledger are written after staging. A provider that keeps failing ends the night with
``UserError(EXIT_PROVIDER)`` before anything is staged or saved; a budget ends it with a partial
report and no adoption.
"""

from __future__ import annotations

import contextlib
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from collections.abc import Callable

from skillopt_sleep.backends.assembly import build_models
from skillopt_sleep.backends.auto import resolve_config
from skillopt_sleep.backends.base import AnswerPending, BudgetExceeded, ProviderError
from skillopt_sleep.backends.client import preflight
from skillopt_sleep.backends.evidence import EvidenceLog
from skillopt_sleep.backends.models import Models
from skillopt_sleep.store.call_journal import close_nights, interrupted_nights, open_journal
from skillopt_sleep.config import Config
from skillopt_sleep.learning.loop import LoopSettings, Outcome, consolidate
from skillopt_sleep.documents.containment import check_state_dir, described
from skillopt_sleep.documents.managed_block import DocumentSet, load_documents, whole_skill_opted_in
from skillopt_sleep.store.rule_evidence import EvidencePool
from skillopt_sleep.learning.edit_schedule import edit_budget
from skillopt_sleep.replay.dream import split_measurable
from skillopt_sleep.errors import EXIT_BUDGET, EXIT_CONFIG, EXIT_HANDOFF, EXIT_PROVIDER, EXIT_USAGE, UserError
from skillopt_sleep.footprint import Footprint
from skillopt_sleep.gather import Gathered, gather_tasks, miner_for
from skillopt_sleep.night_handoff import handoff_in_project, handoffs, stop_for_answers, waiting_prompts
from skillopt_sleep.paths import project_dirs, user_dirs
from skillopt_sleep.report.proposal import task_summaries
from skillopt_sleep.documents.context import context_notes
from skillopt_sleep.replay.scoring import left_out_notes
from skillopt_sleep.store.score_cache import ScoreCache
from skillopt_sleep.store.state_key import trust_notes
from skillopt_sleep.types import Edit, NightReport, TaskRecord
from skillopt_sleep.store.archive import TaskArchive
from skillopt_sleep.staging.adoption import adopt_locked, allowed_targets, hold_project
from skillopt_sleep.staging.stage import StagedFile, stage
from skillopt_sleep.store.history import History
from skillopt_sleep.store.refusals import RejectedLedger
from skillopt_sleep.learning.train_set import archive_tasks, widen_train

Progress = Callable[[str], None]


@dataclass
class NightOptions:
    project: Path
    config: Config
    mode: str = "run"  # run | dry-run | demo
    tasks_file: Path | None = None
    target_skill_path: Path | None = None
    since: datetime | None = None
    auto_adopt: bool = False
    progress: Progress = field(default=lambda msg: None)
    call_progress: Any = None  # a progress.CallProgress: per-call counts and ETA on stderr
    resume: bool = False  # continue the newest interrupted night of this project (call_journal.py)
    edit_whole_skill: bool = False  # --edit-whole-skill: this run may edit the skill's hand-written lines
    wrap_backend: Any = None  # put every backend behind another (the estimate's rehearsal: estimate.py)
    stores: list[Any] = field(default_factory=list)  # more call stores (estimate_answers.AnswerLog)
    # transcripts already read for this night (a sources.HarvestResult): the estimate's rehearsals
    # and the night after them share one read instead of one each (estimate.py)
    harvested: Any = None


def new_night_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(2)


def _agent(config: Config, sources: list[str]) -> str:
    if config.documents.agent != "auto":
        return config.documents.agent
    from skillopt_sleep.documents.agents import documents_agent

    return documents_agent(sources)


def run_night(opts: NightOptions) -> NightReport:
    """Run one night; returns its report (already staged when mode is run/demo).

    A stateful night holds the project lock throughout (the same lock as adopt and revert), and
    on taking it first finishes any adoption a killed process left half done.
    """
    project = opts.project.expanduser().resolve()
    if not project.is_dir():
        raise UserError(f"project {project} is not a directory", EXIT_USAGE)
    opts.project = project
    # its state folder and every document a night may read or write resolve where they must,
    # before any model call
    check_state_dir(project)
    targets = allowed_targets(project, opts.config, opts.target_skill_path)
    if opts.mode not in ("run", "demo"):
        return stateless_night(opts)
    footprint = Footprint(project)
    night_id = new_night_id()
    with hold_project(project, "night", targets, night_id) as recovered:
        if recovered:
            opts.progress(recovered)
        resume_from = None
        if opts.resume:
            waiting = interrupted_nights(project)
            if waiting:
                resume_from = waiting[-1]
                # Continued under its own id, unless it was killed after staging its proposal:
                # then a new night uses its answers.
                if not (project_dirs(project).staging / resume_from).exists():
                    night_id = resume_from
                opts.progress(f"resuming the interrupted night {resume_from}")
            else:
                opts.progress("no interrupted night to resume: starting a new one")
        try:
            return _night(opts, night_id, True, History(), RejectedLedger(), resume_from)
        except NightStopped:
            raise
        except UserError:
            footprint.undo(night_id)  # refused before any work: leave the project as it was
            raise


def stateless_night(opts: NightOptions) -> NightReport:
    """A night that takes no lock and keeps nothing (a dry run; the estimate's rehearsal)."""
    return _night(opts, new_night_id(), False, History(), RejectedLedger())


def _auto_agents(opts: NightOptions) -> tuple[list[str], bool]:
    """The agents whose CLI ``backend = "auto"`` may use, and whether they come from harvested
    sessions (a cheap look at transcript heads; the harvest proper comes later)."""
    config = opts.config
    if config.documents.agent != "auto":
        return [config.documents.agent], False
    if opts.tasks_file is not None:
        return [], False
    from skillopt_sleep.sources import available_sources

    found = available_sources(opts.project, homes=config.harvest.homes())
    if config.harvest.source not in ("auto", "all"):
        found = [a for a in found if a == config.harvest.source]
    return found, True


def _night(
    opts: NightOptions,
    night_id: str,
    stateful: bool,
    history: History,
    ledger: RejectedLedger,
    resume_from: str | None = None,
) -> NightReport:
    report = NightReport(
        night_id=night_id,
        project=str(opts.project),
        mode=opts.mode,
        status="running",
        started=datetime.now(timezone.utc),
    )
    # A tasks file is checked before anything else (it needs no model) ...
    gathered = gather_tasks(opts) if opts.tasks_file is not None else None
    # ... then ``auto`` becomes a concrete backend, or the night stops here with the choices.
    agents, harvested = _auto_agents(opts)
    opts.config, choice = resolve_config(opts.config, agents, harvested=harvested)
    opts.config = handoff_in_project(opts.config, opts.project)
    if choice is not None:
        report.backend_choice = f"auto chose {choice.spec}: {choice.reason}"
        opts.progress(report.backend_choice)
    # The evidence log is only kept to be copied into the staged proposal, so only a stateful
    # night (which holds the project lock) writes one, in the project's scratch dir: removed on
    # every way out of here, and by the next lock holder if this process is killed.
    evidence_path = project_dirs(opts.project).tmp / f"evidence-{night_id}.jsonl" if stateful else None
    evidence = EvidenceLog(evidence_path) if evidence_path is not None else None
    journal = open_journal(opts.project, night_id) if stateful else None
    earlier = (
        open_journal(opts.project, resume_from, read_only=True)
        if stateful and resume_from not in (None, night_id)
        else None
    )
    scores = _score_cache(opts)
    carried = sum(j.loaded for j in (journal, earlier) if j is not None)
    if carried:
        report.notes.append(f"resumed: {carried} call(s) the interrupted night had finished are not made again")
    for note in trust_notes([s for s in (journal, earlier, scores) if s is not None]):
        report.notes.append(note)
        opts.progress(note)
    models: Models | None = None
    try:
        models = build_models(
            opts.config,
            evidence,
            wrap=opts.wrap_backend,
            stores=[s for s in (journal, earlier, scores) if s is not None] + list(opts.stores),
        )
        for note in models.notes:  # a local stall, named as such before any call
            opts.progress(note)
            report.notes.append(note)
        if gathered is not None and not gathered.reviewed and not models.offline:
            raise UserError(
                f"{opts.tasks_file} is not reviewed; real backends only replay a reviewed tasks file "
                '(check it, then set "reviewed": true)',
                EXIT_CONFIG,
            )
        # Rules a simulator wrote for transcripts (or tasks) nobody reviewed are not real findings.
        report.simulated = models.simulated and not (gathered is not None and gathered.reviewed)
        models.target.calls_progress = models.optimizer.calls_progress = opts.call_progress
        if hasattr(opts.call_progress, "watch"):  # night_state.NightProgress: tokens and cost so far
            opts.call_progress.watch(models)
        report.backends = {"target": models.target.id, "optimizer": models.optimizer.id}
        return _learn(opts, stateful, history, ledger, report, models, evidence, gathered)
    except ProviderError as exc:
        # A deadline (the night's or one call's) is a provider failure too: exit 4, nothing
        # staged, no state advanced; the next night re-reads the same transcripts.
        raise UserError(
            f"provider {exc.backend_id} failed ({exc.kind}): {exc.message}; nothing staged, no state advanced",
            EXIT_PROVIDER,
        ) from None
    except AnswerPending:
        assert models is not None  # only a call waits, and every call goes through the models
        # A round, not a failure: the person's agent answers the prompts and the same command goes on.
        message = stop_for_answers(report, models)
        for prompt in waiting_prompts(models):
            opts.progress(f"prompt: {prompt}")
        raise NightStopped(report, message, EXIT_HANDOFF) from None
    except BudgetExceeded as exc:
        assert models is not None  # only a call spends, and every call goes through the models
        report.status = "budget"
        report.calls, report.usage = models.calls(), models.usage()
        report.left_out = models.left_out()
        report.notes.append(f"stopped: {exc}; partial night, nothing staged or adopted")
        report.notes.extend(left_out_notes(report.left_out))
        report.notes.extend(models.spending_notes())
        report.finished = datetime.now(timezone.utc)
        if stateful:
            history.record(report)
        raise NightStopped(report, f"the night stopped: {exc}", EXIT_BUDGET) from None
    finally:
        if models is not None:
            models.close()  # no call of this night runs on, whatever ended it
        if scores is not None and stateful:
            _save(scores, "score cache", report)
        if opts.call_progress is not None:
            opts.call_progress.finish()
        if evidence is not None:
            evidence.close()
            with contextlib.suppress(OSError):
                evidence.path.unlink()


def _score_cache(opts: NightOptions) -> ScoreCache | None:
    days = opts.config.learning.score_cache_days
    if not days or days <= 0:
        return None
    return ScoreCache.load(project_dirs(opts.project).root / "scores.jsonl", max_age_days=days)


def _save(store: ScoreCache | EvidencePool, what: str, report: NightReport) -> None:
    """Keep a store for the next night: the score cache's answers (on every way out, since they
    were paid for) or the pool's val evidence. One that cannot be written costs calls (and, for
    the pool, a re-roll), never the night."""
    try:
        store.save()
    except OSError as exc:
        report.notes.append(f"{what} not saved ({store.path}: {exc.strerror or exc})")


def _learn(
    opts: NightOptions,
    stateful: bool,
    history: History,
    ledger: RejectedLedger,
    report: NightReport,
    models: Models,
    evidence: EvidenceLog | None,
    gathered: Gathered | None,
) -> NightReport:
    """The night's phases: preflight, tasks, documents, consolidate, stage (and adopt)."""
    _preflight(opts, models)
    gathered = _tasks(opts, report, models, gathered)
    tasks, docs = _measurable(report, gathered, models), _documents(opts, report, gathered)
    tasks = _widen(opts, report, models, tasks)
    if not any(t.split == "train" for t in tasks):
        report.status = "no-tasks"
        report.notes.append("no recurring, checkable tasks found: nothing to learn tonight")
        report.calls, report.usage = models.calls(), models.usage()
        return _finish(report, stateful, gathered, history)
    ledger_project = str(opts.project)
    pool = EvidencePool.load(user_dirs().edit_evidence, opts.project, models.target.id, docs.fingerprint())
    budget = edit_budget(opts.config.learning, history.nights(opts.project))
    if budget.note:
        report.notes.append(budget.note)
    outcome = consolidate(
        tasks,
        docs,
        models,
        LoopSettings.from_config(opts.config, budget.edits),
        already_refused=lambda e: ledger.contains(ledger_project, e),
        pool=pool,
        progress=opts.progress,
        archived_val=_archived_val(opts, pool),
    )
    if evidence is not None:
        evidence.close()
    _fill(report, outcome, models)
    report.status = ("staged" if stateful else "proposed") if outcome.accepted else "no-change"
    if stateful:
        _stage(opts, report, docs, outcome, history, ledger, evidence)
        _save(pool, "val evidence", report)
    return _finish(report, stateful, gathered, history)


def _archived_val(opts: NightOptions, pool: EvidencePool) -> list[tuple[str, TaskRecord]] | None:
    """The project's archived val tasks, for the rules a capped night resumes (``consolidate``);
    an archive that cannot be read costs that evidence, never the night."""
    if opts.config.call_cap() is None or not pool.pending():
        return None
    try:
        return [(e.key, e.task) for e in TaskArchive().entries(opts.project) if e.split == "val"]
    except (OSError, UserError):
        return None


def _widen(opts: NightOptions, report: NightReport, models: Models, tasks: list[TaskRecord]) -> list[TaskRecord]:
    """Tonight's tasks plus recalled past tasks and dream variants, all train (learning/train_set.py)."""
    if not any(t.split == "train" for t in tasks):
        return tasks
    widened = widen_train(
        tasks,
        models,
        opts.project,
        recall_k=opts.config.learning.recall_k,
        dream_factor=opts.config.learning.dream_factor,
    )
    report.notes.extend(widened.notes)
    report.task_index.update(task_summaries(widened.tasks))
    return tasks + widened.tasks


def _preflight(opts: NightOptions, models: Models) -> None:
    """One tiny call per distinct backend: an expired key or a dead server is reported tonight,
    before any work, even on a night with nothing to learn."""
    opts.progress(f"preflight: {models.target.id}")
    preflight(models.target)
    if models.optimizer.backend is not models.target.backend:
        preflight(models.optimizer)


def _tasks(opts: NightOptions, report: NightReport, models: Models, gathered: Gathered | None) -> Gathered:
    """The night's tasks: from the tasks file already read, or harvested and mined now."""
    config = opts.config
    judge_maker = grouper = None
    if gathered is None:
        miner = miner_for(config, models)
        if miner == "llm":
            from skillopt_sleep.mining.llm import LlmMiner
            from skillopt_sleep.mining.llm_groups import LlmGrouper

            judge_maker = LlmMiner(models.optimizer)
            grouper = LlmGrouper(models.optimizer)
        if config.harvest.miner == "auto":
            report.notes.append(
                f"miner: {miner} (auto: " + ("the optimizer is a real model)" if miner == "llm" else "the simulator)")
            )
        gathered = gather_tasks(opts, judge_maker, grouper)
    if judge_maker is not None and judge_maker.unusable:
        report.notes.append(
            f"LLM miner: {judge_maker.unusable} reply(ies) not JSON after one repair; "
            "the heuristic checks alone judge those kinds"
        )
    if judge_maker is not None and judge_maker.rejected:
        report.notes.append(
            "LLM miner checks rejected as invalid: " + ", ".join(f"{k} ({v})" for k, v in judge_maker.rejected.items())
        )
    report.n_sessions = gathered.n_sessions
    report.agents = dict(gathered.agents)
    report.skipped = gathered.skipped
    report.notes.extend(gathered.notes)
    return gathered


def _measurable(report: NightReport, gathered: Gathered, models: Models) -> list[TaskRecord]:
    """The tasks this target can be scored on (the rest are named in a note)."""
    tasks, unmeasurable = split_measurable(gathered.tasks, models.target)
    if unmeasurable:
        report.notes.append(
            f"{len(unmeasurable)} task(s) left out of the score: their checks need a tool call and "
            f"{models.target.id} cannot offer tools ({', '.join(t.id for t in unmeasurable)})"
        )
    report.n_tasks = len(tasks)
    report.task_index = task_summaries(tasks)
    report.splits = {s: sum(1 for t in tasks if t.split == s) for s in ("train", "val", "test")}
    return tasks


def _documents(opts: NightOptions, report: NightReport, gathered: Gathered) -> DocumentSet:
    config = opts.config
    docs = load_documents(
        opts.project,
        _agent(config, gathered.sources),
        config.documents.skill_name,
        opts.target_skill_path,
        max_rules=config.documents.max_rules,
        user_level_skill=config.documents.user_level_skill,
        whole_skill=whole_skill_opted_in(
            config.documents.skill_name, config.documents.edit_whole_skill, opts.edit_whole_skill
        ),
    )
    report.documents = {d.role: described(d.path) for d in docs.all()}
    report.notes.extend(context_notes(docs.context, docs.context_skipped))
    return docs


def _stage(
    opts: NightOptions,
    report: NightReport,
    docs: DocumentSet,
    outcome: Outcome,
    history: History,
    ledger: RejectedLedger,
    evidence: EvidenceLog | None,
) -> None:
    """Stage the proposal, record refused edits in the ledger, adopt when asked to."""
    ledger_project = str(opts.project)
    files = [
        StagedFile(role=new.role, live_path=new.path, baseline=old.original, proposed=new.encoded())
        for old, new in zip(docs.all(), outcome.documents.all(), strict=True)
        if new.text != old.text
    ]
    report.finished = datetime.now(timezone.utc)
    stage(
        opts.project,
        report,
        files,
        evidence=evidence.path if evidence else None,
        past_nights=history.nights(opts.project),
    )
    for item in report.rejected_edits:
        if item.get("ledger"):
            ledger.add(ledger_project, Edit.from_dict(item["edit"]), item["reasons"], report.night_id)
    if opts.auto_adopt and outcome.accepted and report.simulated:
        report.notes.append(
            "not auto-adopted: the proposal is simulated (sim backend); "
            "adopt it by hand with --allow-simulated if you mean to"
        )
    elif opts.auto_adopt and outcome.accepted:
        targets = allowed_targets(opts.project, opts.config, opts.target_skill_path)
        result = adopt_locked(opts.project, report.night_id, targets)
        report.notes.append(f"auto-adopted: {len(result.files)} file(s) written")


def _fill(report: NightReport, outcome: Outcome, models: Models) -> None:
    report.baseline, report.candidate = outcome.baseline, outcome.candidate
    report.train_baseline = outcome.train_baseline
    report.test_baseline, report.test_candidate = outcome.test_baseline, outcome.test_candidate
    report.accepted_edits = list(outcome.accepted)
    report.decisions = list(outcome.decisions)
    report.rejected_edits = [
        {"edit": item.edit.to_dict(), "reasons": list(item.reasons), "ledger": item.ban} for item in outcome.rejected
    ]
    report.calls, report.usage = models.calls(), models.usage()
    report.left_out = models.left_out()
    report.notes.extend(outcome.notes)
    report.task_index.update(task_summaries(outcome.earlier_val))  # so the gate table can name them
    report.notes.extend(left_out_notes(report.left_out))
    reused = sum(s.reused for s in models.stats)
    if reused:
        report.notes.append(
            f"{reused} answer(s) reused instead of drawn again (unchanged documents, "
            "tasks and model: kept from an earlier or an interrupted night)"
        )
    report.notes.extend(models.spending_notes())
    report.notes.extend(backend.finished() for backend in handoffs(models))
    report.notes.append("phases (requests issued): " + ", ".join(f"{k}={v}" for k, v in outcome.phases.items()))


def _finish(report: NightReport, stateful: bool, gathered: Gathered, history: History) -> NightReport:
    """A night that got here succeeded: advance the harvest checkpoints and record it."""
    report.finished = report.finished or datetime.now(timezone.utc)
    if stateful:
        if gathered.harvest is not None:
            gathered.harvest.commit()
        problem = archive_tasks(Path(report.project), gathered.tasks, report.night_id)
        if problem:
            report.notes.append(problem)
        history.record(report)
        close_nights(Path(report.project))
    return report


class NightStopped(UserError):
    """A night that ended early but produced a partial report (budget)."""

    def __init__(self, report: NightReport, message: str, code: int):
        super().__init__(message, code)
        self.report = report
