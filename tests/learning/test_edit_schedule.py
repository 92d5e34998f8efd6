import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillopt_sleep.config import LearningSettings, load_config
from skillopt_sleep.learning.edit_schedule import EditSchedule, edit_budget, learning_nights
from skillopt_sleep.errors import UserError


def test_constant_keeps_the_initial_budget():
    schedule = EditSchedule("constant", initial=4, floor=1, horizon=3)
    assert [schedule.edits_for(n) for n in range(6)] == [4, 4, 4, 4, 4, 4]


def test_linear_decays_to_the_floor_at_the_horizon_and_stays():
    schedule = EditSchedule("linear", initial=5, floor=1, horizon=4)
    assert [schedule.edits_for(n) for n in range(7)] == [5, 4, 3, 2, 1, 1, 1]


def test_cosine_starts_slow_and_ends_slow():
    schedule = EditSchedule("cosine", initial=9, floor=1, horizon=4)
    budgets = [schedule.edits_for(n) for n in range(6)]
    assert budgets == [9, 8, 5, 2, 1, 1]
    # cosine stays above linear in the first half of the horizon
    linear = EditSchedule("linear", initial=9, floor=1, horizon=4)
    assert budgets[1] > linear.edits_for(1)


@given(
    kind=st.sampled_from(["linear", "cosine"]),
    initial=st.integers(1, 12),
    floor=st.integers(1, 12),
    horizon=st.integers(1, 30),
    night=st.integers(0, 60),
)
def test_decay_is_bounded_and_never_rises(kind, initial, floor, horizon, night):
    if floor > initial:
        with pytest.raises(ValueError):
            EditSchedule(kind, initial, floor, horizon)
        return
    schedule = EditSchedule(kind, initial, floor, horizon)
    now, later = schedule.edits_for(night), schedule.edits_for(night + 1)
    assert floor <= later <= now <= initial
    assert schedule.edits_for(0) == initial
    assert schedule.edits_for(horizon + night) == floor


def test_bad_schedule_is_refused():
    with pytest.raises(ValueError, match="edit_schedule"):
        EditSchedule("exponential")
    with pytest.raises(ValueError, match="horizon"):
        EditSchedule("linear", horizon=0)


def test_only_learning_nights_advance_the_schedule():
    nights = [
        {"status": "staged", "mode": "run"},
        {"status": "no-tasks", "mode": "run"},
        {"status": "budget", "mode": "run"},
        {"status": "no-change", "mode": "demo"},
    ]
    assert learning_nights(nights) == 2


def test_budget_from_config_and_history():
    config = LearningSettings(edit_schedule="linear", max_edits=4, edit_floor=1, edit_horizon=3)
    nights = [{"status": "staged", "mode": "run"}] * 2
    budget = edit_budget(config, nights)
    assert budget.edits == 2
    assert "night 3" in budget.note and "linear" in budget.note
    constant = LearningSettings(edit_schedule="constant", max_edits=4, edit_floor=1, edit_horizon=3)
    assert edit_budget(constant, nights).edits == 4 and edit_budget(constant, nights).note == ""


def test_config_keys_are_validated(tmp_path):
    config = load_config(None, overrides={"edit_schedule": "cosine", "edit_floor": 2, "edit_horizon": 5}, env={})
    assert (config.learning.edit_schedule, config.learning.edit_floor, config.learning.edit_horizon) == ("cosine", 2, 5)
    with pytest.raises(UserError, match="edit_schedule must be"):
        load_config(None, overrides={"edit_schedule": "step"}, env={})
    with pytest.raises(UserError, match="edit_floor must not exceed"):
        load_config(None, overrides={"edit_schedule": "linear", "edit_floor": 9, "max_edits": 4}, env={})
