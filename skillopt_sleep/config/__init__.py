"""Settings: defaults < user config file < project config file < environment < command line.

Settings live in sections (``Config.models``, ``.budgets``, ``.documents``, ``.harvest``,
``.learning``, ``.gate``, ``.schedule``), each declared once with its default; every setting's name
is unique across them, so the environment, the command line and ``Config(k=3)`` name a setting
without its section.
Config files are TOML (``config.toml`` in the user config dir and in ``<project>/.skillopt-sleep/``),
grouped in sections (``[learning]`` then ``k = 3``) or flat (``k = 3``); a key the engine does not
know, one in a section not its own, or a value of the wrong type is a clear error naming the file.
Environment: ``SKILLOPT_SLEEP_<SETTING>`` for any setting (e.g. ``SKILLOPT_SLEEP_BACKEND``).
"""

from skillopt_sleep.config.checks import check_backends, validate
from skillopt_sleep.config.load import ENV_NOT_SETTINGS, config_problem, load_config, read_config_file
from skillopt_sleep.config.sections import (
    DEFAULT_MODEL_CALLS,
    PER_USER,
    SCHEDULE_VIAS,
    SECTION_OF,
    SECTIONS,
    BudgetSettings,
    Config,
    DocumentSettings,
    GateSettings,
    HarvestSettings,
    LearningSettings,
    ModelSettings,
    ScheduleSettings,
    settings_of,
)

__all__ = [
    "DEFAULT_MODEL_CALLS",
    "ENV_NOT_SETTINGS",
    "PER_USER",
    "SCHEDULE_VIAS",
    "SECTION_OF",
    "SECTIONS",
    "BudgetSettings",
    "Config",
    "DocumentSettings",
    "GateSettings",
    "HarvestSettings",
    "LearningSettings",
    "ModelSettings",
    "ScheduleSettings",
    "check_backends",
    "config_problem",
    "load_config",
    "read_config_file",
    "settings_of",
    "validate",
]
