"""The simulator's knobs (backends/sim/knobs.py): validated, read from a spec's options, the
honesty knobs off by default and named in the backend's id only when on, and the follow rate that
``overload`` decays."""

from __future__ import annotations

import pytest

from skillopt_sleep.backends import BackendSpecError, make_backend
from skillopt_sleep.backends.sim import SimBackend, SimKnobs, from_options


@pytest.mark.parametrize(
    "knobs",
    [{"follow": 1.5}, {"follow": -0.1}, {"base": 2}, {"correct": -1}, {"harmful": 1.01}, {"latency": -1}],
)
def test_knobs_are_validated(knobs):
    with pytest.raises(ValueError):
        SimKnobs(**knobs)


def test_from_options_rejects_unknown_options():
    with pytest.raises(ValueError, match="folow") as info:
        from_options({"folow": 0.9}, None)
    assert "follow" in str(info.value)  # lists the known ones


def test_from_options_coerces_values():
    backend = from_options({"follow": "0.5", "base": 0, "seed": "7", "down": 0}, None)
    assert backend.knobs == SimKnobs(follow=0.5, base=0.0, seed=7, down=False)
    assert "follow=0.5" in backend.id and "seed=7" in backend.id


def test_from_options_rejects_bad_values():
    with pytest.raises(ValueError):
        from_options({"follow": "lots"}, None)
    with pytest.raises(ValueError):
        from_options({"follow": 3}, None)


def test_spec_strings():
    backend = make_backend("sim:follow=0.8,base=0.1,seed=3")
    assert backend.knobs == SimKnobs(follow=0.8, base=0.1, seed=3)
    assert make_backend("sim:down=0").knobs.down is False
    assert make_backend("sim:down=1").knobs.down is True
    with pytest.raises(BackendSpecError, match="bogus"):
        make_backend("sim:bogus=1")
    with pytest.raises(BackendSpecError):
        make_backend("sim:follow=7")


# -- honesty knobs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "knobs", [{"leak": 1.5}, {"leak": -0.1}, {"overload": 2}, {"conflict": -1}, {"verbose": -5}, {"free_rules": -1}]
)
def test_honesty_knobs_are_validated(knobs):
    with pytest.raises(ValueError):
        SimKnobs(**knobs)


def test_honesty_knobs_default_off_and_the_id_names_only_those_on():
    assert SimKnobs().honesty() == {}
    assert SimBackend().id == "sim(follow=0.9,base=0.15,correct=0.6,harmful=0.2,seed=0)"
    backend = make_backend("sim:leak=0.5,verbose=600,overload=0.02,free_rules=4,conflict=0.3")
    assert backend.knobs.honesty() == {"leak": 0.5, "verbose": 600, "overload": 0.02, "free_rules": 4, "conflict": 0.3}
    assert backend.id.endswith(",leak=0.5,verbose=600,overload=0.02,free_rules=4,conflict=0.3)")
    assert make_backend("sim:leak=off").knobs.leak is None


def test_effective_follow_formula():
    knobs = SimKnobs(follow=0.9, overload=0.05, free_rules=8)
    assert knobs.effective_follow(8) == pytest.approx(0.9)
    assert knobs.effective_follow(12) == pytest.approx(0.9 * 0.95**4)
