"""Settings: defaults < user config file < project config file < environment < command line.

Settings live in sections (``Config.models``, ``.budgets``, ``.documents``, ``.harvest``,
``.learning``, ``.gate``), each declared once with its default; every setting's name is unique across
them, so the environment, the command line and ``Config(k=3)`` name a setting without its section.
Config files are TOML (``config.toml`` in the user config dir and in ``<project>/.skillopt-sleep/``),
grouped in sections (``[learning]`` then ``k = 3``) or flat (``k = 3``); a key the engine does not
know, one in a section not its own, or a value of the wrong type is a clear error naming the file.
Environment: ``SKILLOPT_SLEEP_<SETTING>`` for any setting (e.g. ``SKILLOPT_SLEEP_BACKEND``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Mapping

import msgspec

from skillopt_sleep.backend_spec import BACKEND_NAMES, BackendSpecError, parse_spec
from skillopt_sleep.errors import EXIT_CONFIG, EXIT_USAGE, UserError
from skillopt_sleep.files import read_regular
from skillopt_sleep.paths import TRANSCRIPT_SOURCES, project_dirs, user_dirs


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

    agent: str = "auto"  # claude | codex | auto
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
    gemini_home: str | None = None
    opencode_home: str | None = None
    pi_home: str | None = None
    min_recurrence: int = 2
    miner: str = "auto"  # auto | heuristic | llm (auto: llm whenever the optimizer is a real model)
    split_seed: int = 0
    val_fraction: float = 0.34
    test_fraction: float = 0.0

    def homes(self) -> dict[str, Path]:
        """The data dirs set for agents (``<agent>_home``), by agent; the others read their default."""
        given = {name: getattr(self, f"{name}_home") for name in TRANSCRIPT_SOURCES}
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


Section = ModelSettings | BudgetSettings | DocumentSettings | HarvestSettings | LearningSettings | GateSettings

# Config's sections, by the names config files give them (``[learning]``)
SECTIONS: dict[str, type[Section]] = {
    "models": ModelSettings,
    "budgets": BudgetSettings,
    "documents": DocumentSettings,
    "harvest": HarvestSettings,
    "learning": LearningSettings,
    "gate": GateSettings,
}

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

    def __init__(
        self,
        *,
        models: ModelSettings | None = None,
        budgets: BudgetSettings | None = None,
        documents: DocumentSettings | None = None,
        harvest: HarvestSettings | None = None,
        learning: LearningSettings | None = None,
        gate: GateSettings | None = None,
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


# the most of a config file it reads: a real one is a few hundred bytes
CONFIG_READ_LIMIT = 1024 * 1024

# Locations (read by paths.py) and the agent plugins' hook runner's own knobs, which it passes
# down to the engine it starts: none of them is an engine setting.
ENV_NOT_SETTINGS = frozenset(
    {
        "SKILLOPT_SLEEP_HOME",
        "SKILLOPT_SLEEP_PYTHON",
        # the plugin launcher's: where it sets the engine up, and its own path
        "SKILLOPT_SLEEP_ENGINE_DIR",
        "SKILLOPT_SLEEP_LAUNCHER",
    }
)


def _declared(hint: Any) -> tuple[Any, bool]:
    """A setting's type without ``None``, and whether ``None`` is allowed."""
    args = typing.get_args(hint)
    if type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0], True
    return hint, False


# Every setting's type, resolved from the annotations (``from __future__ import annotations``
# leaves them as strings): the type itself, and whether it may be None.
_TYPES = {
    name: _declared(hint)
    for cls in SECTIONS.values()
    for name, hint in typing.get_type_hints(cls).items()
    if name in SECTION_OF
}
_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}
_EXPECTED = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list of strings",
    dict: "a table",
}


def _coerce(key: str, value: Any, where: str) -> Any:
    """A setting's value as its declared type (msgspec converts and checks), from a config file's
    value or from text (the environment, the command line: booleans in words, lists
    comma-separated); else one line naming the setting and what it must be."""
    wanted, optional = _TYPES[key]
    kind = typing.get_origin(wanted) or wanted
    if value is None:
        if optional:
            return None
        raise UserError(f"{where}: {key} may not be empty", EXIT_CONFIG)
    if isinstance(value, str) and kind is bool:
        value = _WORDS.get(value.lower(), value)
    elif isinstance(value, str) and kind is list:
        value = [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, bool) and kind in (int, float):
        raise UserError(f"{where}: {key} must be a number, got {value!r}", EXIT_CONFIG)
    try:  # numbers may come as text or as a whole float; nothing else is converted
        return msgspec.convert(value, wanted, strict=kind not in (int, float))
    except msgspec.ValidationError:
        raise UserError(f"{where}: {key} must be {_EXPECTED[kind]}, got {value!r}", EXIT_CONFIG) from None


def _apply(config: Config, values: Mapping[str, Any], where: str, origins: dict[str, str] | None = None) -> None:
    """Set each flat-named setting in ``values`` in its section, recording where it was set."""
    for key, value in values.items():
        name = key.replace("-", "_")
        if name not in SECTION_OF:
            raise UserError(f"{where}: unknown setting {key!r}", EXIT_CONFIG)
        setattr(getattr(config, SECTION_OF[name]), name, _coerce(name, value, where))
        if origins is not None:
            origins[name] = where


def _flatten(values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A config file's settings by flat name: ``[learning]\nk = 3`` and a top-level ``k = 3`` both
    give ``k``, since every name is unique; a setting in a section not its own, an unknown section
    or a setting given twice is one line naming the file."""
    flat: dict[str, Any] = {}

    def put(name: str, value: Any) -> None:
        if name in flat:
            raise UserError(f"{where}: {name} is set twice", EXIT_CONFIG)
        flat[name] = value

    for key, value in values.items():
        name = key.replace("-", "_")
        if name in SECTION_OF:
            put(name, value)
            continue
        if name not in SECTIONS:
            kind = "section" if isinstance(value, dict) else "setting"
            raise UserError(
                f"{where}: unknown {kind} {key!r} (sections: {', '.join(SECTIONS)})"
                if kind == "section"
                else f"{where}: unknown setting {key!r}",
                EXIT_CONFIG,
            )
        if not isinstance(value, dict):
            raise UserError(f"{where}: [{key}] must be a section of settings, got {value!r}", EXIT_CONFIG)
        for inner, inner_value in value.items():
            inner_name = inner.replace("-", "_")
            home = SECTION_OF.get(inner_name)
            if home is None:
                raise UserError(f"{where}: unknown setting {inner!r} in [{key}]", EXIT_CONFIG)
            if home != name:
                raise UserError(f"{where}: {inner} belongs in [{home}], not [{key}]", EXIT_CONFIG)
            put(inner_name, inner_value)
    return flat


ENVIRONMENT, COMMAND_LINE = "environment", "command line"
_FLAGS = {"backend": "--backend", "optimizer_backend": "--optimizer-backend"}


def _setting(key: str, value: Any, where: str) -> str:
    """How a person wrote a setting, where they wrote it: ``backend = "gpt5" in <file>``."""
    if where == ENVIRONMENT:
        return f"SKILLOPT_SLEEP_{key.upper()}={value} in the environment"
    if where == COMMAND_LINE:
        return f"{_FLAGS.get(key, '--' + key.replace('_', '-'))} {value}"
    return f"{key} = {json.dumps(value)} {_place(where)}"


def check_backends(config: Config, origins: Mapping[str, str]) -> None:
    """Every backend setting names a backend (or ``auto``); else one line naming the setting and
    where it was set: usage (2) on the command line, config (3) in a file or the environment."""
    AUTO = "auto"  # the backend setting that picks one (backends/auto.py)

    for key in ("backend", "target_backend", "optimizer_backend"):
        value = getattr(config.models, key)
        if value is None or value.strip().lower() == AUTO:
            continue
        try:
            parse_spec(value)
        except BackendSpecError as exc:
            name = value.partition(":")[0].strip().lower()
            problem = (
                str(exc)
                if name in BACKEND_NAMES
                else f"{AUTO} takes no options"
                if name == AUTO
                else f"unknown backend (choose from {', '.join((AUTO, *BACKEND_NAMES))})"
            )
            where = origins.get(key, "defaults")
            raise UserError(
                f"{_setting(key, value, where)}: {problem}", EXIT_USAGE if where == COMMAND_LINE else EXIT_CONFIG
            ) from None


def read_config_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # the same parser, published as tomli for older Pythons
        import tomli as tomllib
    try:
        return tomllib.loads(read_regular(path, CONFIG_READ_LIMIT).decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"config file {path} is broken: {exc}", EXIT_CONFIG) from None


def validate(config: Config, origins: Mapping[str, str] | None = None) -> Config:
    models, budgets, documents, harvest = config.models, config.budgets, config.documents, config.harvest
    learning, gate = config.learning, config.gate
    checks = [
        (documents.agent in ("claude", "codex", "auto"), "agent must be claude, codex or auto"),
        (
            harvest.source in (*TRANSCRIPT_SOURCES, "auto", "all"),
            f"source must be one of {', '.join(TRANSCRIPT_SOURCES)}, auto or all",
        ),
        (harvest.miner in ("auto", "heuristic", "llm"), "miner must be auto, heuristic or llm"),
        (learning.k >= 1, "k must be at least 1"),
        (learning.k_agree >= 0, "k_agree must be >= 0 (0: every train task gets k samples)"),
        (learning.dream_kind_tasks >= 0, "dream_kind_tasks must be >= 0 (0: every train task is dreamed)"),
        (learning.score_cache_days >= 0, "score_cache_days must be >= 0 (0: no answers kept across nights)"),
        (gate.val_samples >= 1, "val_samples must be at least 1"),
        (
            0 < documents.retire_margin < 1,
            "retire_margin must be between 0 and 1 (the largest drop a retirement may cost)",
        ),
        (gate.max_val_samples >= gate.val_samples, "max_val_samples must be >= val_samples"),
        (
            0 <= gate.val_others_samples <= gate.max_val_samples,
            "val_others_samples must be within 0..max_val_samples (0: as many as the edit's own val tasks)",
        ),
        (models.concurrency >= 1, "concurrency must be at least 1"),
        (models.retries >= 1, "retries must be at least 1"),
        (models.call_timeout is None or models.call_timeout > 0, "call_timeout must be a positive number of seconds"),
        (
            models.night_deadline is None or models.night_deadline > 0,
            "night_deadline must be a positive number of seconds",
        ),
        (models.retry_base_delay >= 0, "retry_base_delay must be >= 0"),
        (learning.max_edits >= 1, "max_edits must be at least 1"),
        (1 <= learning.screen_pool <= 4, "screen_pool must be within 1..4"),
        (1 <= learning.reflect_samples <= 4, "reflect_samples must be within 1..4"),
        (
            learning.edit_schedule in ("constant", "linear", "cosine"),
            "edit_schedule must be constant, linear or cosine",
        ),
        (learning.edit_floor >= 1, "edit_floor must be at least 1"),
        (
            learning.edit_schedule == "constant" or learning.edit_floor <= learning.max_edits,
            "edit_floor must not exceed max_edits (the schedule decays from max_edits to edit_floor)",
        ),
        (learning.edit_horizon >= 1, "edit_horizon must be at least 1 night"),
        (learning.recall_k >= 0, "recall_k must be >= 0 (0: no past tasks recalled)"),
        (0 <= learning.dream_factor <= 5, "dream_factor must be within 0..5 (0: no dream variants)"),
        (
            0 <= harvest.val_fraction < 1
            and 0 <= harvest.test_fraction < 1
            and harvest.val_fraction + harvest.test_fraction < 1,
            "val_fraction + test_fraction must be < 1",
        ),
        (harvest.min_recurrence >= 1, "min_recurrence must be at least 1"),
        (0 < gate.regression_alpha < 1, "regression_alpha must be within (0, 1)"),
        (0 < gate.gain_alpha < 1, "gain_alpha must be within (0, 1)"),
        (budgets.max_tokens is None or budgets.max_tokens > 0, "max_tokens must be positive"),
        (budgets.max_cost_usd is None or budgets.max_cost_usd > 0, "max_cost_usd must be positive"),
        (budgets.max_calls is None or budgets.max_calls >= 0, "max_calls must be >= 0 (0: no cap)"),
    ]
    for ok, message in checks:
        if not ok:
            raise UserError(f"invalid setting{_where_set(message, origins or {})}: {message}", EXIT_CONFIG)
    return config


def _place(where: str) -> str:
    return {ENVIRONMENT: "in the environment", COMMAND_LINE: "on the command line"}.get(where, f"in {where}")


def _where_set(message: str, origins: Mapping[str, str]) -> str:
    """`` (k set in <file>)`` for each setting a check's message names that was set somewhere."""
    words = dict.fromkeys(word.strip(",.()") for word in message.split())
    places = [f"{key} set {_place(origins[key])}" for key in words if key in SECTION_OF and key in origins]
    return f" ({'; '.join(places)})" if places else ""


def load_config(
    project: Path | None = None, overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Config:
    config = Config()
    origins: dict[str, str] = {}
    user_file = user_dirs().config_file
    _apply(config, _flatten(read_config_file(user_file), str(user_file)), str(user_file), origins)
    if project is not None:
        project_file = project_dirs(project).config_file
        _apply(config, _flatten(read_config_file(project_file), str(project_file)), str(project_file), origins)
    env = os.environ if env is None else env
    env_values = {
        key[len("SKILLOPT_SLEEP_") :].lower(): value
        for key, value in env.items()
        if key.startswith("SKILLOPT_SLEEP_") and key not in ENV_NOT_SETTINGS
    }
    for key in env_values:
        if key not in SECTION_OF:
            raise UserError(
                f"environment: SKILLOPT_SLEEP_{key.upper()} is not a setting (settings: {', '.join(sorted(SECTION_OF))})",
                EXIT_CONFIG,
            )
    _apply(config, env_values, ENVIRONMENT, origins)
    _apply(config, {k: v for k, v in (overrides or {}).items() if v is not None}, COMMAND_LINE, origins)
    check_backends(config, origins)
    return validate(config, origins)


def config_problem(project: Path | None = None) -> str | None:
    """Why this project's settings do not load, in one line (None when they do): for ``status``
    and the session notice, which report a broken config instead of failing."""
    try:
        load_config(project)
    except UserError as exc:
        return exc.message
    return None
