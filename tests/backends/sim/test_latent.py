"""Within-task correlation in the simulator (``corr``, ``drift``; backends/sim/latent.py): repeated
answers to one task agree more than answers to different tasks, the pass rate over tasks stays what
the knobs say, and off it changes nothing. Every test is seeded, so each outcome is deterministic;
each bound is one an independent (or a biased) simulator would miss."""

from __future__ import annotations

import hashlib
import json
import math
from statistics import NormalDist

import pytest

from skillopt_sleep.checks import judges
from skillopt_sleep.backends import BackendSpecError, make_backend
from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.sim import SimBackend, SimKnobs
from skillopt_sleep.backends.sim.latent import check_corr, propensity

TOKEN = "Refs: ACME-1"
CHECKS = [judges.validate_check({"op": "contains", "arg": TOKEN})]
PLAIN = "# project\n\n- Write plain English.\n"  # covers nothing: every answer passes with ``base``
OTHER = "# project\n\n- Keep the tone friendly.\n"  # a different document set, still covering nothing
TASKS = 1500


def answer(
    backend: SimBackend,
    task_id: str,
    sample: int,
    documents: str = PLAIN,
    checks: list[dict] | None = None,
    kind: str = "rule",
) -> str:
    task = {
        "id": task_id,
        "intent": "Write the commit message for the retry fix.",
        "judge": {"kind": kind, "checks": checks or CHECKS},
        "reference": TOKEN,
    }
    completion = backend.complete(
        Request(
            purpose="attempt", system="sys", user="u", sample=sample, payload={"task": task, "documents": documents}
        )
    )
    assert completion.ok
    return completion.text


def passes(backend: SimBackend, task_id: str, sample: int, documents: str = PLAIN, kind: str = "rule") -> int:
    return int(TOKEN in answer(backend, task_id, sample, documents, kind=kind))


def agreement(pairs: list[tuple[int, int]]) -> float:
    return sum(a == b for a, b in pairs) / len(pairs)


# -- off changes nothing ---------------------------------------------------------------------------

MIXED = [
    judges.validate_check(c)
    for c in (
        {"op": "contains", "arg": TOKEN},
        {"op": "max_chars", "arg": 120},
        {"op": "section_present", "arg": "Testing"},
        {"op": "not_contains", "arg": "TODO"},
    )
]
CAPPED = '# project\n\n- Always include "Refs: ACME-1".\n- Keep answers under 100 characters.\n'


def transcript(backend: SimBackend) -> str:
    """Answers to rule- and reference-judged tasks, with and without covering lines and a length cap."""
    out = []
    for sample in range(30):
        for task_id in ("t1", "t2"):
            for documents in (PLAIN, CAPPED):
                for kind in ("rule", "llm"):
                    out.append(answer(backend, task_id, sample, documents, MIXED, kind))
    return json.dumps(out)


# sha256 of ``transcript`` under the default knobs and under verbose=700,leak=0.5, recorded from the
# simulator before the correlation knobs existed: turning them off must keep every answer byte-identical
BEFORE = {
    "default": "3f02e9f91e43dd9f8180da08d11d260c1a9334fcde524275fb6e7bb4f72c2852",
    "honest": "382f3b82cb61031c42b6d9c5481ae456d61b2008536d3d3409cab99cdd9822c2",
}


@pytest.mark.parametrize(("name", "spec"), [("default", "sim:corr=0"), ("honest", "sim:verbose=700,leak=0.5,corr=0")])
def test_corr_zero_keeps_every_answer(name, spec):
    backend = make_backend(spec)
    assert backend.knobs.honesty().get("corr") is None, "corr 0 is the default: not stated as on"
    assert hashlib.sha256(transcript(backend).encode()).hexdigest() == BEFORE[name]
    assert transcript(make_backend(spec + ",drift=1")) == transcript(backend), "drift does nothing without corr"


def test_corr_on_changes_answers_and_is_stated():
    backend = make_backend("sim:corr=0.5,drift=0.25")
    assert backend.knobs.honesty() == {"corr": 0.5, "drift": 0.25}
    assert backend.id.endswith(",corr=0.5,drift=0.25)")
    assert transcript(backend) != transcript(SimBackend())


# -- the model -------------------------------------------------------------------------------------


@pytest.mark.parametrize("corr", [0.0, 0.3, 0.8, 0.95, 1.0])
@pytest.mark.parametrize("p", [0.02, 0.15, 0.3, 0.5, 0.9, 0.99])
def test_the_chance_over_tasks_is_exactly_p(p, corr):
    """E over z of the task's propensity, by quadrature on a fine grid of z: the knob's p."""
    normal, step = NormalDist(), 0.001
    grid = [-9 + step * (i + 0.5) for i in range(int(18 / step))]
    mean = sum(propensity(p, corr, z) * normal.pdf(z) * step for z in grid)
    assert mean == pytest.approx(p, abs=2e-4 if corr == 1.0 else 1e-6)


def test_impossible_and_certain_checks_stay_so_on_every_task():
    for z in (-5.0, -1.0, 0.0, 1.0, 5.0):
        assert propensity(0.0, 0.8, z) == 0.0 and propensity(1.0, 0.8, z) == 1.0
        assert propensity(0.3, 0.0, z) == 0.3


def test_repeats_of_a_task_agree_more_than_different_tasks_and_the_rate_holds():
    """corr 0.8 at base 0.15: two answers to one task agree far more often (0.883 by the model: the
    latent-scale correlation 0.8) than answers to two tasks of the same chance (p^2 + (1-p)^2 = 0.745,
    as under independence); over TASKS tasks the pass rate stays within 0.03 of 0.15 (its standard
    error here is under 0.01, that of an agreement under 0.012)."""
    correlated, independent = make_backend("sim:corr=0.8"), make_backend("sim:corr=0")
    for backend, within_at_least, within_at_most in ((correlated, 0.84, 0.93), (independent, 0.70, 0.79)):
        draws = [(passes(backend, f"t{i}", 0), passes(backend, f"t{i}", 1)) for i in range(TASKS)]
        within = agreement(draws)
        across = agreement([(draws[i][0], draws[i + 1][0]) for i in range(0, TASKS - 1, 2)])
        rate = sum(a + b for a, b in draws) / (2 * TASKS)
        assert rate == pytest.approx(0.15, abs=0.03)
        assert within_at_least <= within <= within_at_most, (backend.id, within)
        assert across == pytest.approx(0.745, abs=0.04), (backend.id, across)


def test_a_judged_task_is_correlated_too():
    backend = make_backend("sim:corr=0.8")
    draws = [(passes(backend, f"t{i}", 0, kind="llm"), passes(backend, f"t{i}", 1, kind="llm")) for i in range(TASKS)]
    assert 0.84 <= agreement(draws) <= 0.93
    assert sum(a + b for a, b in draws) / (2 * TASKS) == pytest.approx(0.15, abs=0.03)


def task_rates(backend: SimBackend, documents: str, tasks: int = 400, samples: int = 6) -> list[float]:
    return [sum(passes(backend, f"t{i}", s, documents) for s in range(samples)) / samples for i in range(tasks)]


def correlation(xs: list[float], ys: list[float]) -> float:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    cov = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return cov / math.sqrt(sum((x - mx) ** 2 for x in xs) * sum((y - my) ** 2 for y in ys))


def test_drift_decides_whether_a_hard_task_stays_hard_under_other_documents():
    """A task's pass rate under two document sets (same chance under both): strongly related at
    drift 0, unrelated at drift 1."""
    persistent, reshuffled = make_backend("sim:base=0.3,corr=0.8"), make_backend("sim:base=0.3,corr=0.8,drift=1")
    assert correlation(task_rates(persistent, PLAIN), task_rates(persistent, OTHER)) >= 0.6
    assert abs(correlation(task_rates(reshuffled, PLAIN), task_rates(reshuffled, OTHER))) <= 0.15


# -- refused values --------------------------------------------------------------------------------


@pytest.mark.parametrize("knobs", [{"corr": 1.5}, {"corr": -0.1}, {"corr": math.nan}, {"drift": 2.0}, {"drift": -1}])
def test_invalid_values_are_refused(knobs):
    name = next(iter(knobs))
    with pytest.raises(ValueError, match=f"sim knob {name}=.* must be within 0..1"):
        SimKnobs(**knobs)
    with pytest.raises(ValueError, match=f"sim knob {name}=.* must be within 0..1"):
        check_corr(knobs.get("corr", 0.0), knobs.get("drift", 0.0))


@pytest.mark.parametrize("spec", ["sim:corr=2", "sim:corr=lots", "sim:drift=-0.5"])
def test_a_bad_spec_is_one_clear_error(spec):
    with pytest.raises(BackendSpecError, match=r"^backend sim: "):
        make_backend(spec)
