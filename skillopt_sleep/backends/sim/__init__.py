"""``sim``: an offline, seeded, stochastic instruction-following simulator (DESIGN §4); what it
does and its knobs are in ``backend.py``, how it reads documents in ``reading.py``."""

from skillopt_sleep.backends.sim import optimizer, target, vary
from skillopt_sleep.backends.sim.backend import SimBackend, from_options
from skillopt_sleep.backends.sim.knobs import SimKnobs
from skillopt_sleep.backends.sim.optimizer import covering_rule, harmful_rule
from skillopt_sleep.backends.sim.reading import coverage
from skillopt_sleep.backends.sim.regex_gen import regex_example

__all__ = [
    "SimBackend",
    "SimKnobs",
    "coverage",
    "covering_rule",
    "from_options",
    "harmful_rule",
    "optimizer",
    "regex_example",
    "target",
    "vary",
]
