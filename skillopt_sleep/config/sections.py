"""The settings, each declared once in its section with its default and its comment, and
``Config``, which holds the seven sections and routes a flat setting name to its own."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt_sleep.paths import TRANSCRIPT_SOURCES, home_setting


@dataclass
class ModelSettings:
    """Which models answer, and how the night calls them."""

    backend: str = "auto"  # both roles unless target_backend / optimizer_backend are set (backends/auto.py)
    target_backend: str | None = None
    optimizer_backend: str | None = None
    model: str | None = None
    optimizer_model: str | None = None
    concurrency: int = 4
    retries: int = 5  # tries per model call for transient errors (429, 5xx, timeouts)
    retry_base_delay: float = 1.0  # seconds; doubles per try, Retry-After wins when given
    call_timeout: float | None = 300.0  # seconds per model call, wall time across all its tries
    night_deadline: float | None = 4 * 3600.0  # seconds for a whole night's model work
    batch: bool = False
    backend_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # [models.backend_options.sim] ...

    def backend_for(self, role: str) -> str:
        spec = self.target_backend if role == "target" else self.optimizer_backend
        return spec or self.backend

    def model_for(self, role: str) -> str | None:
        if role == "optimizer" and self.optimizer_model:
            return self.optimizer_model
        return self.model


@dataclass
class BudgetSettings:
    """What one night may spend."""

    max_tokens: int | None = None  # per-night token budget (input + output)
    max_cost_usd: float | None = None  # per-night cost budget
    # per-night provider calls: the night plans its phases to fit (fewer train samples, edits gated
    # one at a time, best first) and an edit still undecided when the calls run out is refused for
    # tonight without a ban, its samples kept for a later night; never accepted on less evidence.
    # Unset: DEFAULT_MODEL_CALLS when a model answers, none on the simulator (``Config.call_cap``); 0: none
    max_calls: int | None = None


@dataclass
class DocumentSettings:
    """What to evolve: which agent's documents, and how many rules they may hold."""

    agent: str = "auto"  # an agent of paths.TRANSCRIPT_SOURCES | auto (documents/agents.py: whose documents)
    skill_name: str = "skillopt-sleep-learned"
    user_level_skill: bool = False
    max_rules: int = 12
    retire_rules: bool = True  # a full document's new rule may take the line of a rule that no longer earns it
    retire_margin: float = 0.1  # ... when removing that rule costs the tasks it served less than this (retire.py)
    # skills whose hand-written lines a night may replace or delete (documents/managed_block.py); others get rules only
    edit_whole_skill: list[str] = field(default_factory=list)


@dataclass
class HarvestSettings:
    """Which transcripts are read, and how they become train, val and test tasks."""

    source: str = "auto"  # an agent of paths.TRANSCRIPT_SOURCES | auto | all
    claude_home: str | None = None  # each agent's data dir (default: the agent's own, e.g. ~/.claude)
    codex_home: str | None = None
    copilot_home: str | None = None
    cursor_home: str | None = None
    cursor_cli_home: str | None = None
    gemini_home: str | None = None
    opencode_home: str | None = None
    pi_home: str | None = None
    vscode_copilot_home: str | None = None
    min_recurrence: int = 2
    miner: str = "auto"  # auto | heuristic | llm (auto: llm whenever the optimizer is a real model)
    split_seed: int = 0
    val_fraction: float = 0.34
    test_fraction: float = 0.0

    def homes(self) -> dict[str, Path]:
        """The data dirs set for agents (``<agent>_home``), by agent; the others read their default."""
        given = {name: getattr(self, home_setting(name)) for name in TRANSCRIPT_SOURCES}
        return {name: Path(home).expanduser() for name, home in given.items() if home}


@dataclass
class LearningSettings:
    """The learning loop: dreaming the train tasks, reflecting, and how many edits a night proposes."""

    k: int = 4  # samples per train task
    k_agree: int = 2  # a train task stops after this many samples that all agree (0: always k)
    dream_kind_tasks: int = 3  # a kind stops being dreamed once this many of its train tasks teach something (0: all)
    max_edits: int = 4  # edits proposed per night (the schedule's first-night value)
    # candidates replayed on their train tasks per edit gated; those that fixed something there take
    # the night's slots first (1: replay only the max_edits best ranked)
    screen_pool: int = 2
    reflect_samples: int = 2  # readings of each reflect request: more proposals for one call each
    edit_schedule: str = "constant"  # constant | linear | cosine: the edit budget over nights (edit_schedule.py)
    edit_floor: int = 1  # edits per night once the schedule reaches its horizon
    edit_horizon: int = 10  # nights from max_edits down to edit_floor
    recall_k: int = 2  # past train tasks most like tonight's added to its train set (recall.py; 0: off)
    dream_factor: int = 0  # optimizer-written variants per train task (variants.py; 0: off)
    score_cache_days: float = 14.0  # reuse a target's answers to unchanged documents and tasks this long (0: never)


@dataclass
class GateSettings:
    """The gate: how many val samples decide an edit, and how sure it must be."""

    val_samples: int = 3  # samples per val task and document set, first round
    # samples the val tasks outside an edit's own kind start with in its gate, more only when the
    # gate asks; 0: as many as the edit's own tasks reached (fewer lets trade-offs pass more often)
    val_others_samples: int = 0
    max_val_samples: int = 12  # ceiling when the gate asks for more evidence
    # a rule's gain is tested on the checks it fixed on its train tasks, and its tasks' score must
    # rise too (at score_alpha 0.05 spent over the looks); false: on its tasks' score alone
    targeted_gain: bool = True
    min_gain: float = 0.02  # smallest mean val improvement worth a rule
    gain_alpha: float = 0.025  # chance of accepting an edit that does not really help
    regression_tolerance: float = 0.0  # a per-task drop below this is never a regression
    regression_alpha: float = 0.05  # chance, across all val tasks, of calling noise a regression


# the OS mechanisms a schedule may use (``via``); scheduler/registry.py builds each by this name
SCHEDULE_VIAS = ("cron", "systemd", "launchd", "schtasks")


@dataclass
class ScheduleSettings:
    """The nightly entry ``schedule`` installs, when its flags do not say (a flag wins). ``at``,
    ``via`` and ``env_file`` belong to the one entry that runs every project's nights, so only the
    user config file or the environment may set them (``PER_USER``); a project sets ``auto_adopt``."""

    at: str | None = None  # local time HH:MM; unset: the time already scheduled, else 03:00
    via: str | None = None  # one of SCHEDULE_VIAS; unset: the one already scheduled, else the OS's own
    env_file: str | None = None  # KEY=VALUE file (mode 0600) the job reads API keys from; unset: as scheduled
    auto_adopt: bool = False  # a scheduled night adopts this project's accepted edits right away


Section = (
    ModelSettings
    | BudgetSettings
    | DocumentSettings
    | HarvestSettings
    | LearningSettings
    | GateSettings
    | ScheduleSettings
)

# Config's sections, by the names config files give them (``[learning]``)
SECTIONS: dict[str, type[Section]] = {
    "models": ModelSettings,
    "budgets": BudgetSettings,
    "documents": DocumentSettings,
    "harvest": HarvestSettings,
    "learning": LearningSettings,
    "gate": GateSettings,
    "schedule": ScheduleSettings,
}

# the schedule's settings a project's config file may not set: one entry serves every project
PER_USER = ("at", "via", "env_file")

# Every setting's section. A setting's name is unique across sections, so the environment, the
# command line, a flat config file and ``Config(k=3)`` can name it without its section.
SECTION_OF: dict[str, str] = {f.name: section for section, cls in SECTIONS.items() for f in dataclasses.fields(cls)}


@dataclass(init=False, slots=True)
class Config:
    """Every setting, in its section (``config.learning.k``). Built from sections, or from flat
    setting names (``Config(k=3, backend="sim")``), each routed to its section."""

    models: ModelSettings
    budgets: BudgetSettings
    documents: DocumentSettings
    harvest: HarvestSettings
    learning: LearningSettings
    gate: GateSettings
    schedule: ScheduleSettings

    def __init__(
        self,
        *,
        models: ModelSettings | None = None,
        budgets: BudgetSettings | None = None,
        documents: DocumentSettings | None = None,
        harvest: HarvestSettings | None = None,
        learning: LearningSettings | None = None,
        gate: GateSettings | None = None,
        schedule: ScheduleSettings | None = None,
        **settings: object,
    ) -> None:
        unknown = sorted(set(settings) - set(SECTION_OF))
        if unknown:
            raise TypeError(f"Config() got an unexpected keyword argument {unknown[0]!r}")
        given: dict[str, Section | None] = {
            "models": models,
            "budgets": budgets,
            "documents": documents,
            "harvest": harvest,
            "learning": learning,
            "gate": gate,
            "schedule": schedule,
        }
        for section, cls in SECTIONS.items():
            base = given[section]
            part = cls() if base is None else dataclasses.replace(base)  # a copy: the caller's stays as it was
            for name, value in settings.items():
                if SECTION_OF[name] == section:
                    setattr(part, name, value)
            setattr(self, section, part)

    def replace(self, **settings: object) -> Config:
        """A copy with the named settings changed (flat names, as ``Config(...)`` takes them)."""
        return Config(
            models=self.models,
            budgets=self.budgets,
            documents=self.documents,
            harvest=self.harvest,
            learning=self.learning,
            gate=self.gate,
            schedule=self.schedule,
            **settings,
        )

    def backend_for(self, role: str) -> str:
        return self.models.backend_for(role)

    def model_for(self, role: str) -> str | None:
        return self.models.model_for(role)

    def call_cap(self) -> int | None:
        """The night's cap on provider calls: ``max_calls`` when set (0: no cap); unset,
        ``DEFAULT_MODEL_CALLS`` whenever a role is answered by a model (every backend but the
        offline simulator, ``sim``), and none on the simulator alone."""
        if self.budgets.max_calls is not None:
            return self.budgets.max_calls or None
        simulated = all(
            self.models.backend_for(role).split(":", 1)[0].strip().lower() == "sim" for role in ("target", "optimizer")
        )
        return None if simulated else DEFAULT_MODEL_CALLS


def settings_of(config: Config) -> dict[str, Any]:
    """Every setting by its flat name, copied (a schedule records a project's config this way, and
    ``Config(**settings_of(config))`` reads it back: the names are unique across sections)."""
    return {name: value for section in SECTIONS for name, value in dataclasses.asdict(getattr(config, section)).items()}


# A cost guard, not a plan: the first nights of the bench projects (20 to 30 tasks) make 190 to 380
# calls, so it binds only on a larger project, whose night then plans to fit it and resumes what
# it left undecided on the next night (docs/benchmarks.md, "A default cap for model backends")
DEFAULT_MODEL_CALLS = 400
