"""Within-task correlation: a latent propensity per task and check (probit-normal), so repeated
answers to one task agree more than answers to different tasks, while the pass rate over tasks stays
what the knobs say.

Each check of a task carries a standard normal ``z``. A check whose marginal chance is ``p`` passes
with probability ``Phi(Phi^-1(p) * sqrt(1 + s2) + sqrt(s2) * z)``, ``s2 = corr / (1 - corr)``: on the
latent scale ``Y = Phi^-1(p) * sqrt(1 + s2) + sqrt(s2) * z + e`` (``e`` standard normal per answer,
pass iff ``Y > 0``) two answers to one task correlate by ``s2 / (1 + s2) = corr``, and since
``E_z[Phi(a + b z)] = Phi(a / sqrt(1 + b^2))`` the chance over tasks is exactly ``p``. At ``corr = 1``
the limit is taken: the check passes on every answer iff ``z > -Phi^-1(p)``.

``z`` is keyed by the task and the check, never by the answer's sample and never by the answer
itself. ``drift`` is the share of its variance redrawn whenever the documents change
(``z = sqrt(1 - drift) * z_task + sqrt(drift) * z_task_documents``): at 0 a task's difficulty
persists across document sets, at 1 every document set reshuffles which tasks are hard.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from statistics import NormalDist

STANDARD = NormalDist()
Draw = Callable[..., random.Random]
Chance = Callable[[object, float], float]


def check_corr(corr: float, drift: float) -> None:
    """Refuse knob values outside 0..1 with a one-line reason."""
    for name, value in (("corr", corr), ("drift", drift)):
        if not isinstance(value, (int, float)) or math.isnan(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"sim knob {name}={value} must be within 0..1")


def latent(draw: Draw, task_id: object, check: object, documents: str, drift: float = 0.0) -> float:
    """The standard normal propensity of one check of one task (``draw(*parts)`` gives a seeded
    generator, e.g. ``SimKnobs.rng``)."""
    z = draw("latent", task_id, check).gauss(0.0, 1.0)
    if drift:
        fresh = draw("latent", task_id, check, documents).gauss(0.0, 1.0)
        z = math.sqrt(1.0 - drift) * z + math.sqrt(drift) * fresh
    return z


def propensity(p: float, corr: float, z: float) -> float:
    """The chance one answer passes a check of marginal chance ``p``, for a task whose latent is ``z``."""
    if corr == 0 or p <= 0.0 or p >= 1.0:
        return p  # independence; a check that cannot (or must) pass stays so on every task
    threshold = STANDARD.inv_cdf(p)
    if corr >= 1.0:
        return 1.0 if z > -threshold else 0.0
    s2 = corr / (1.0 - corr)
    return STANDARD.cdf(threshold * math.sqrt(1.0 + s2) + math.sqrt(s2) * z)


def independent(check: object, p: float) -> float:
    return p


def task_chance(draw: Draw, corr: float, drift: float, task_id: object, documents: str) -> Chance:
    """``chance(check, p)``: the probability one answer to this task, under these documents, passes
    ``check`` whose chance over tasks is ``p`` — ``p`` itself when ``corr`` is 0."""
    if not corr:
        return independent

    def chance(check: object, p: float) -> float:
        return propensity(p, corr, latent(draw, task_id, check, documents, drift))

    return chance
