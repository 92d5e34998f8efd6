from __future__ import annotations

import pytest

from skillopt_sleep.gate.decide import GateConfig, decide, futile, significant_harm, wants_more
from skillopt_sleep.types import GateDecision

LOW = [0.2, 0.4, 0.2, 0.4, 0.3, 0.3]
HIGH = [0.9, 1.0, 0.9, 1.0, 1.0, 0.9]
SAME = [0.5, 0.75, 0.5, 0.75, 0.5, 0.75]


def by_id(decision: GateDecision) -> dict:
    return {d.task_id: d for d in decision.per_task}


def test_clear_improvement_is_accepted():
    base = {"a": LOW, "b": LOW, "c": SAME}
    cand = {"a": HIGH, "b": HIGH, "c": SAME}
    d = decide(base, cand)
    assert d.accepted is True and d.action == "accept" and d.reasons == []
    assert d.candidate > d.baseline
    deltas = by_id(d)
    assert deltas["a"].delta == pytest.approx(sum(HIGH) / 6 - sum(LOW) / 6, abs=1e-4)
    assert deltas["c"].delta == 0.0
    assert not any(x.regressed for x in d.per_task)
    assert (deltas["a"].n_baseline, deltas["a"].n_candidate) == (6, 6)
    assert d.statistic["lower_bound"] > 0
    assert d.statistic["gain"] == pytest.approx((2 * deltas["a"].delta) / 3, abs=1e-3)


def test_equal_scores_are_rejected_below_min_gain():
    base = {"a": SAME, "b": HIGH}
    d = decide(base, {k: list(v) for k, v in base.items()})
    assert d.accepted is False and d.action == "reject"
    assert any("below the minimum" in r for r in d.reasons)
    assert d.baseline == d.candidate


def test_gain_below_min_gain_is_rejected_even_when_certain():
    base = {"a": [0.5] * 200, "b": [0.5] * 200}
    cand = {"a": [0.51] * 200, "b": [0.52] * 200}  # all but certain, and tiny
    d = decide(base, cand, GateConfig(min_gain=0.05))
    assert not d.accepted and any("below the minimum" in r for r in d.reasons)
    assert decide(base, cand, GateConfig(min_gain=0.01)).accepted


def test_one_task_regressing_rejects_even_if_mean_improves():
    base = {"a": LOW, "b": LOW, "c": LOW, "d": [1.0, 1.0, 0.9, 1.0, 1.0, 0.9]}
    cand = {"a": HIGH, "b": HIGH, "c": HIGH, "d": [0.2, 0.3, 0.2, 0.3, 0.2, 0.3]}
    d = decide(base, cand)
    assert d.candidate > d.baseline and d.statistic["gain"] > 0
    assert d.accepted is False and d.action == "reject"
    assert by_id(d)["d"].regressed is True
    assert [x.task_id for x in d.per_task if x.regressed] == ["d"]
    assert any(r.startswith("task d regressed") for r in d.reasons)


def test_zero_variance_drop_counts_as_regression():
    # 4 unanimous samples are not proof (the variance is shrunk towards that of a 0/1 score) ...
    d = decide({"a": LOW, "b": LOW, "c": [1.0] * 4}, {"a": HIGH, "b": HIGH, "c": [0.75] * 4})
    assert by_id(d)["c"].regressed is False and "c" in wants_more(d)
    # ... 12 are
    base = {"a": LOW, "b": LOW, "c": [1.0] * 12}
    cand = {"a": HIGH, "b": HIGH, "c": [0.75] * 12}
    d = decide(base, cand)
    assert by_id(d)["c"].regressed is True
    assert not d.accepted
    assert any("task c regressed" in r for r in d.reasons)


def test_regression_tolerance_forgives_small_drops():
    base = {"a": LOW, "b": LOW, "c": [1.0] * 40}
    cand = {"a": HIGH, "b": HIGH, "c": [0.95] * 40}
    assert not decide(base, cand).accepted
    d = decide(base, cand, GateConfig(regression_tolerance=0.1))
    assert by_id(d)["c"].regressed is False
    assert d.accepted


def test_noisy_drop_is_not_a_regression():
    # one noisy task among many dips by a single sample: not evidence of harm
    base = {f"t{i}": LOW for i in range(5)}
    cand = {f"t{i}": HIGH for i in range(5)}
    base["noisy"] = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    cand["noisy"] = [1.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    d = decide(base, cand)
    assert by_id(d)["noisy"].delta < 0
    assert by_id(d)["noisy"].regressed is False
    assert d.accepted


def test_noisy_small_gain_is_not_distinguishable_from_noise():
    base = {"a": [0.0, 1.0, 0.0, 1.0], "b": [1.0, 0.0, 1.0, 0.0]}
    cand = {"a": [1.0, 0.0, 1.0, 1.0], "b": [1.0, 0.0, 1.0, 0.0]}
    d = decide(base, cand)
    assert d.statistic["gain"] >= GateConfig().min_gain
    assert not d.accepted and d.action == "reject"
    assert any("not distinguishable from noise" in r for r in d.reasons)
    assert d.statistic["lower_bound"] <= 0


def test_more_samples_of_the_same_gain_become_significant():
    noisy_b, noisy_c = [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 1.0]
    small = decide({"a": noisy_b}, {"a": noisy_c})
    large = decide({"a": noisy_b * 12}, {"a": noisy_c * 12})
    assert small.statistic["gain"] == pytest.approx(large.statistic["gain"])
    assert not small.accepted and large.accepted


@pytest.mark.parametrize(
    ("base", "cand", "train", "needle"),
    [
        ({}, {}, (), "no val tasks"),
        ({"a": [1.0]}, {"b": [1.0]}, (), "no val tasks"),
        ({"a": LOW, "b": LOW}, {"a": HIGH, "b": HIGH}, ["b", "z"], "val overlaps train (b)"),
    ],
)
def test_unvalidatable_nights_are_skipped(base, cand, train, needle):
    d = decide(base, cand, train_ids=train)
    assert d.accepted is False and d.action == "skip"
    assert any(needle in r for r in d.reasons)
    assert wants_more(d) == []


def test_missing_samples_are_an_error():
    with pytest.raises(ValueError, match="task a has no samples"):
        decide({"a": []}, {"a": [1.0]})


def test_only_tasks_scored_on_both_sides_count():
    d = decide({"a": LOW, "extra": [0.0]}, {"a": HIGH})
    assert [x.task_id for x in d.per_task] == ["a"]
    assert d.accepted


def test_decision_round_trips():
    d = decide({"a": LOW, "b": SAME}, {"a": HIGH, "b": SAME})
    again = GateDecision.from_dict(d.to_dict())
    assert again.to_dict() == d.to_dict()
    assert again.per_task[0].task_id == "a"


def test_a_single_sample_per_task_is_not_proof():
    base = {"a": [0.0], "b": [0.5], "c": [1.0]}
    cand = {"a": [1.0], "b": [0.5], "c": [1.0]}
    assert not decide(base, cand).accepted


def test_focus_tests_the_gain_on_the_tasks_the_edit_targets():
    base = {
        "commit-1": LOW,
        "commit-2": LOW,
        "notes-1": SAME,
        "notes-2": SAME,
        "notes-3": SAME,
        "notes-4": SAME,
        "notes-5": SAME,
        "notes-6": SAME,
    }
    cand = dict(base, **{"commit-1": [0.4, 0.6, 0.4, 0.6, 0.5, 0.5], "commit-2": [0.4, 0.6, 0.4, 0.6, 0.5, 0.5]})
    diluted = decide(base, cand, GateConfig(min_gain=0.1))
    assert not diluted.accepted  # averaged over all 8 tasks the gain is 0.05
    focused = decide(base, cand, GateConfig(min_gain=0.1), focus=["commit-1", "commit-2", "unknown"])
    assert focused.accepted
    assert focused.statistic["gain"] == pytest.approx(0.2, abs=1e-3)


def test_focus_does_not_excuse_a_regression_elsewhere():
    base = {"commit-1": LOW, "notes-1": [1.0] * 6}
    cand = {"commit-1": HIGH, "notes-1": [0.5] * 6}
    d = decide(base, cand, focus=["commit-1"])
    assert not d.accepted and by_id(d)["notes-1"].regressed


# -- wants_more ----------------------------------------------------------------------------------


def test_wants_more_when_the_gain_is_real_looking_but_not_significant():
    base = {"a": [0.0, 1.0, 0.0, 1.0], "b": [1.0, 0.0, 1.0, 0.0]}
    cand = {"a": [1.0, 0.0, 1.0, 1.0], "b": [1.0, 0.0, 1.0, 0.0]}
    cfg = GateConfig(looks=3)
    d = decide(base, cand, cfg, look=1)
    assert wants_more(d, cfg) == ["a", "b"]


def test_no_more_samples_for_a_clear_accept():
    d = decide({"a": LOW, "b": LOW}, {"a": HIGH, "b": HIGH})
    assert d.accepted and wants_more(d) == []


def test_no_more_samples_for_a_clear_non_improvement():
    d = decide({"a": SAME, "b": HIGH}, {"a": SAME, "b": HIGH})
    assert not d.accepted and wants_more(d) == []


def test_wants_more_for_an_apparent_but_unproven_drop():
    base = {"a": LOW, "b": LOW, "c": [1.0, 1.0, 0.5, 1.0, 1.0, 0.5]}
    cand = {"a": HIGH, "b": HIGH, "c": [0.5, 1.0, 0.5, 0.5, 1.0, 0.5]}
    d = decide(base, cand)
    assert by_id(d)["c"].delta < 0 and not by_id(d)["c"].regressed
    assert wants_more(d) == ["c"]


# -- trade-offs, alpha spending, futility, harm ---------------------------------------------------

A_LOW, A_MID = [0, 0, 0, 1] * 6, [1, 1, 0, 0] * 6
B_HIGH, B_MID = [1, 1, 1, 0] * 6, [1, 0, 1, 0] * 6


def test_a_gain_on_its_own_tasks_does_not_buy_a_fall_of_the_val_mean():
    base = {"a1": A_LOW, "a2": A_LOW, **{f"b{i}": B_HIGH for i in range(4)}}
    trade = {"a1": A_MID, "a2": A_MID, **{f"b{i}": B_MID for i in range(4)}}
    cfg = GateConfig(looks=3)
    d = decide(base, trade, cfg, focus=["a1", "a2"], look=3)
    assert d.statistic["lower_bound"] > 0, "the gain on its own tasks is significant"
    assert not any(t.regressed for t in d.per_task), "no single task's drop is significant"
    assert not d.accepted and any("mean over all 6 val tasks may fall" in r for r in d.reasons)
    kept = {"a1": A_MID, "a2": A_MID, **{f"b{i}": B_HIGH for i in range(4)}}
    assert decide(base, kept, cfg, focus=["a1", "a2"], look=3).accepted


def test_a_lucky_first_look_on_one_task_is_not_proof():
    cfg = GateConfig(looks=3)
    d = decide({"a": [0.0] * 4, "b": [1.0] * 4}, {"a": [1.0] * 4, "b": [1.0] * 4}, cfg, focus=["a"], look=1)
    assert not d.accepted
    assert "a" in wants_more(d, cfg)


def test_alpha_is_spent_over_the_looks_and_shared_by_the_nights_edits():
    cfg = GateConfig(gain_alpha=0.05, looks=3)
    parts = [cfg.alpha_for(1.0, look) for look in (1, 2, 3)]
    assert sum(parts) == pytest.approx(0.05)
    assert parts[0] < parts[1] < parts[2], "the first look, on the fewest samples, is the strictest"
    assert cfg.z_for(0.25, 3) > cfg.z_for(1.0, 3)
    assert cfg.alpha_for(0.25, None) == pytest.approx(0.05 * 0.25 / 3)
    base = {t: [0, 1, 0, 0] * 3 for t in "abcd"}
    cand = {t: [1, 1, 0, 0] * 3 for t in "abcd"}
    assert decide(base, cand, cfg, look=3).accepted
    assert not decide(base, cand, cfg, share=1e-6, look=3).accepted


@pytest.mark.parametrize("spending", [1.0, 1.5, 2.0, 3.0])
def test_every_spending_plan_spends_exactly_the_rate_strictest_first(spending: float):
    cfg = GateConfig(gain_alpha=0.025, looks=3, spending=spending)
    parts = [cfg.alpha_for(0.25, look) for look in (1, 2, 3)]
    assert sum(parts) == pytest.approx(0.025 * 0.25)
    assert parts[0] <= parts[1] <= parts[2]


def test_a_large_effect_is_decided_at_the_first_look():
    """A check going from never to mostly (9 of 12 samples) on three tasks at four samples each,
    one of a night's four rules: the default plan accepts it at the first look (exactly, p 3.6e-4);
    one that spends look³ needs a second."""
    base = {t: [0.0] * 4 for t in "abc"}
    cand = {t: [1.0, 1.0, 1.0, 0.0] for t in "abc"}
    first = decide(base, cand, GateConfig(looks=3), share=0.25, look=1)
    assert first.accepted and first.statistic["p_value"] == pytest.approx(3.64e-4)
    assert not decide(base, cand, GateConfig(looks=3, spending=3.0), share=0.25, look=1).accepted


def test_a_large_effect_with_one_miss_is_decided_at_the_first_look():
    """The commonest draw of a large effect at the first look of the default plan (4 looks of 3
    samples): every baseline sample fails and one of the nine candidate samples misses, p 5e-4.
    The default plan (look^1.5) spends 7.8e-4 of a fourth of ``gain_alpha`` there and accepts;
    one that spends look² (3.9e-4) takes a second look."""
    base = {t: [0.0] * 3 for t in "abc"}
    cand = {"a": [1.0] * 3, "b": [1.0] * 3, "c": [1.0, 1.0, 0.0]}
    first = decide(base, cand, GateConfig(looks=4), share=0.25, look=1)
    assert first.accepted and first.statistic["p_value"] == pytest.approx(5e-4)
    assert not decide(base, cand, GateConfig(looks=4, spending=2.0), share=0.25, look=1).accepted


def test_an_observed_loss_ends_the_sampling_at_once():
    cfg = GateConfig(looks=3)
    base = {t: [1, 0, 1, 0] for t in "abcdef"}
    cand = {t: [0, 0, 1, 0] for t in "abcdef"}
    d = decide(base, cand, cfg, look=1)
    assert futile(d, cfg) and wants_more(d, cfg) == []


def test_only_significant_harm_counts_as_harm():
    cfg = GateConfig(looks=3)
    noisy = decide({"a": [0, 1, 0, 1], "b": [1, 0, 1, 0]}, {"a": [0, 0, 0, 1], "b": [1, 0, 1, 0]}, cfg, look=1)
    assert not noisy.accepted and noisy.statistic["gain"] < 0
    assert not significant_harm(noisy), "one noisy reading of a loss is no evidence of harm"
    harmful = decide({t: [1.0] * 8 for t in "abcd"}, {t: [0.0, 0.0, 0.0, 1.0] * 2 for t in "abcd"}, cfg, look=1)
    assert significant_harm(harmful)
    assert any("fell" in r or "regressed" in r for r in harmful.reasons)


# the targeted gain: each sample of a two-check task, as (its score, whether the checked rule passed)
def _two_checks(target_passes: list[int], other_passes: list[int]) -> tuple[list[float], list[float]]:
    return ([(t + o) / 2 for t, o in zip(target_passes, other_passes, strict=True)], [float(t) for t in target_passes])


def test_a_rule_is_tested_on_the_checks_it_fixes_which_the_other_checks_noise_does_not_drown():
    # the fixed check: 1/8 -> 7/8 passes per task; the other check is a coin flip on both sides
    noise = [1, 0, 0, 1, 1, 0, 1, 0]
    b_score, b_check = _two_checks([0, 0, 0, 1, 0, 0, 0, 0], noise)
    c_score, c_check = _two_checks([1, 1, 1, 1, 0, 1, 1, 1], noise[::-1])
    base = {t: b_score for t in "abc"}
    cand = {t: c_score for t in "abc"}
    alpha = GateConfig(gain_alpha=0.0001)
    plain = decide(base, cand, alpha)
    targeted = decide(base, cand, alpha, targeted=({t: b_check for t in "abc"}, {t: c_check for t in "abc"}))
    assert targeted.statistic["gain_of"] == "the checks it fixes" and plain.statistic["gain_of"] == "the score"
    assert targeted.statistic["gain"] == pytest.approx(0.75) and plain.statistic["gain"] == pytest.approx(0.375)
    assert targeted.accepted and not plain.accepted, (plain.reasons, targeted.statistic)
    assert targeted.statistic["lower_bound"] > plain.statistic["lower_bound"]


def test_a_rule_that_fixes_its_check_by_breaking_another_of_the_task_is_refused():
    b_score, b_check = _two_checks([0, 0, 0, 0, 0, 0, 1, 0], [1, 1, 1, 1, 1, 1, 1, 0])
    c_score, c_check = _two_checks([1, 1, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0, 1, 0])
    base, cand = {t: b_score for t in "abc"}, {t: c_score for t in "abc"}
    d = decide(base, cand, targeted=({t: b_check for t in "abc"}, {t: c_check for t in "abc"}))
    assert d.statistic["lower_bound"] > 0, "its own check clearly gained"
    assert not d.accepted and any("own tasks' score" in r for r in d.reasons), d.reasons


def test_targeted_samples_count_only_on_focus_tasks_that_have_them():
    base = {"a": LOW, "b": LOW, "c": SAME}
    cand = {"a": HIGH, "b": HIGH, "c": SAME}
    none = decide(base, cand, focus={"a", "b"}, targeted=({}, {}))
    assert none.statistic["gain_of"] == "the score" and none.statistic == decide(base, cand, focus={"a", "b"}).statistic
    only_c = decide(base, cand, focus={"a", "b"}, targeted=({"c": [0.0] * 6}, {"c": [1.0] * 6}))
    assert only_c.statistic["gain_of"] == "the score", "c is not among the tasks the edit claims"


# -- a kind that falls as a whole ------------------------------------------------------------------
_B_BEFORE = [1.0] * 11 + [0.0]  # 11 of 12
_B_AFTER = [1.0] * 8 + [0.0] * 4  # 8 of 12
_HALF = [1.0] * 6 + [0.0] * 6


def _trade_off(b_after: list[float]) -> tuple[dict, dict, dict]:
    base = {"a0": [0.0] * 12, "a1": [0.0] * 12, "a2": [0.0] * 12, "b0": _B_BEFORE, "b1": _B_BEFORE, "b2": _B_BEFORE}
    cand = {"a0": _HALF, "a1": _HALF, "a2": _HALF, "b0": b_after, "b1": b_after, "b2": b_after}
    return base, cand, {tid: tid[0] for tid in base}


def test_a_kind_whose_tasks_each_drop_a_little_is_a_fall_of_the_kind():
    """Kind b's three tasks each drop from 11 of 12 to 8 of 12 while the rule lifts kind a: no
    task's drop passes the per-task test shared over six tasks, and the all-task mean rises, but
    the kind's tasks together fell (exact p 0.01 against 0.05 over two kinds): refused, as harm."""
    base, cand, kinds = _trade_off(_B_AFTER)
    blind = decide(base, cand, GateConfig(looks=4), focus={"a0", "a1", "a2"}, look=4)
    assert blind.accepted and not any(t.regressed for t in blind.per_task), "without kinds it passes"
    d = decide(base, cand, GateConfig(looks=4), focus={"a0", "a1", "a2"}, look=4, kinds=kinds)
    assert not d.accepted and d.statistic["fallen_kinds"] == ["b"]
    assert any(r.startswith("the 3 val tasks of kind b fell") for r in d.reasons), d.reasons
    assert significant_harm(d) and not significant_harm(blind)


def test_a_kind_that_holds_is_not_a_fall_and_a_kind_of_one_task_is_left_to_the_task_test():
    base, cand, kinds = _trade_off(_B_BEFORE)
    d = decide(base, cand, GateConfig(looks=4), focus={"a0", "a1", "a2"}, look=4, kinds=kinds)
    assert d.accepted and "fallen_kinds" not in d.statistic
    base, cand, _ = _trade_off(_B_AFTER)
    apart = {tid: tid for tid in base}  # every task a kind of its own
    assert decide(base, cand, GateConfig(looks=4), focus={"a0", "a1", "a2"}, look=4, kinds=apart).accepted


def test_a_kind_that_may_have_fallen_is_drawn_further_as_a_whole():
    """One task of kind b drops, the kind's other two do not: the task test draws only the one
    that dropped further, the kind test every task of the kind, so that a fall spread over the
    kind is measured where it would show."""
    base = {"a0": [0.0] * 3, "a1": [0.0] * 3, "a2": [0.0] * 3, "b0": [1.0] * 3, "b1": [1.0, 1.0, 0.0]}
    base["b2"] = [1.0, 1.0, 0.0]
    cand = {"a0": [1.0] * 3, "a1": [1.0] * 3, "a2": [1.0] * 3, "b0": [0.0] * 3, "b1": [1.0] * 3}
    cand["b2"] = [1.0, 1.0, 0.0]
    cfg = GateConfig(looks=4)
    alone = decide(base, cand, cfg, focus={"a0", "a1", "a2"}, look=1)
    assert wants_more(alone, cfg) == ["b0"]
    kinds = {tid: tid[0] for tid in base}
    d = decide(base, cand, cfg, focus={"a0", "a1", "a2"}, look=1, kinds=kinds)
    assert wants_more(d, cfg) == ["b0", "b1", "b2"]


def test_a_task_that_dropped_is_drawn_further_only_while_more_samples_could_show_it():
    """Near the ceiling, a small drop inside its error is not drawn to it, a large one is; the
    tasks of a kind that may have fallen are drawn as a whole however small each one's drop."""
    base = {"a0": [0.0] * 9, "a1": [0.0] * 9, "b0": [1.0] * 9, "b1": [1.0] * 8 + [0.0], "b2": [1.0] * 9}
    cand = {"a0": [1.0] * 9, "a1": [1.0] * 9, "b0": [1.0] * 8 + [0.0], "b1": [1.0] * 9, "b2": [1.0] * 9}
    cfg = GateConfig(looks=4)
    slight = decide(base, cand, cfg, focus={"a0", "a1"}, look=3)
    assert slight.statistic["suspect_tasks"] == ["b0"]
    assert wants_more(slight, cfg) == ["b0"], "no ceiling given: drawn as before"
    assert wants_more(slight, cfg, ceiling=9) == [], "at the ceiling's scale the drop could not be shown"
    cand["b0"] = [1.0] * 4 + [0.0] * 5
    large = decide(base, cand, cfg, focus={"a0", "a1"}, look=3)
    assert wants_more(large, cfg, ceiling=12) == ["b0"]
    base["b1"] = [1.0] * 9
    cand.update({"b0": [1.0] * 7 + [0.0] * 2, "b1": [1.0] * 8 + [0.0], "b2": [1.0] * 7 + [0.0] * 2})
    alone = decide(base, cand, cfg, focus={"a0", "a1"}, look=3)
    assert wants_more(alone, cfg, ceiling=12) == ["b0", "b2"], "task by task, b1's drop is too small"
    spread = decide(base, cand, cfg, focus={"a0", "a1"}, look=3, kinds={tid: tid[0] for tid in base})
    assert wants_more(spread, cfg, ceiling=12) == ["b0", "b1", "b2"], "a kind's tasks go on together"
