"""The checks a whole config must pass once it is read, each refusal one line that says where the
setting was set (a file, the environment, the command line)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from skillopt_sleep.backend_spec import BACKEND_NAMES, BackendSpecError, parse_spec
from skillopt_sleep.config.sections import SCHEDULE_VIAS, SECTION_OF, Config
from skillopt_sleep.errors import EXIT_CONFIG, EXIT_USAGE, UserError
from skillopt_sleep.paths import TRANSCRIPT_SOURCES
from skillopt_sleep.types import time_of_day


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


def validate(config: Config, origins: Mapping[str, str] | None = None) -> Config:
    models, budgets, documents, harvest = config.models, config.budgets, config.documents, config.harvest
    learning, gate, schedule = config.learning, config.gate, config.schedule
    checks = [
        (
            documents.agent in (*TRANSCRIPT_SOURCES, "auto"),
            f"agent must be one of {', '.join(TRANSCRIPT_SOURCES)} or auto",
        ),
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
        (
            schedule.at is None or time_of_day(schedule.at) is not None,
            "at must be a local time of day HH:MM (00:00 to 23:59)",
        ),
        (schedule.via is None or schedule.via in SCHEDULE_VIAS, f"via must be one of {', '.join(SCHEDULE_VIAS)}"),
        (schedule.env_file is None or schedule.env_file.strip() != "", "env_file must name a file"),
    ]
    for ok, message in checks:
        if not ok:
            raise UserError(f"invalid setting{_where_set(message, origins or {})}: {message}", EXIT_CONFIG)
    return config


def _place(where: str) -> str:
    return {ENVIRONMENT: "in the environment", COMMAND_LINE: "on the command line"}.get(where, f"in {where}")


def _where_set(message: str, origins: Mapping[str, str]) -> str:
    """`` (k set in <file>)`` for each setting a check's message names that was set somewhere: the
    setting it opens with, and any other it names with an underscore (so that "at least" does not
    name the schedule's ``at``)."""
    subject, _, rest = message.partition(" must ")
    words = dict.fromkeys(word.strip(",.()") for word in subject.split())
    words.update(dict.fromkeys(word.strip(",.()") for word in rest.split() if "_" in word))
    places = [f"{key} set {_place(origins[key])}" for key in words if key in SECTION_OF and key in origins]
    return f" ({'; '.join(places)})" if places else ""
