"""scripts/bench_versus.py on a tiny configuration: one seed, one night, the JSON's shape and sense.

This engine always runs (over HTTP to the world); the reference engine only when its virtualenv is
already built in the benchmark cache (building it downloads the package, too slow for a test).
``.ci/run`` builds it and sets ``SKILLOPT_REQUIRE_REFERENCE=1``: then a missing one is a failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_versus.py"
sys.path.insert(0, str(ROOT / "scripts"))

from bench_harvest import CACHE  # noqa: E402

REFERENCE_READY = (CACHE / "ref-skillopt-0.2.0" / ".installed").is_file()


def bench(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--nights", "1", "--seeds", "1", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def check_engine(report: dict, engine: str) -> None:
    summary = report["summary"][engine]
    assert [row["night"] for row in summary] == [0, 1]
    night = summary[1]
    assert night["calls"] > 0 and night["prompt_chars"] > 0
    assert 0.0 <= night["ground_truth"] <= 1.0
    assert set(night["adopted_total"]) == {"covering", "neutral", "harmful", "trade-off"}
    run = next(r for r in report["runs"] if r["engine"] == engine)
    row = run["nights"][1]
    assert sum(row["calls_by_purpose"].values()) == row["calls"]
    assert row["calls_by_purpose"].get("attempt", 0) > 0
    assert len(row["adopted"]["rules"]) == sum(
        row["adopted"][k] for k in ("covering", "neutral", "harmful", "trade-off")
    )
    assert 0.0 <= report["ground_truth_start"] <= report["ceiling"] <= 1.0


def test_this_engine_over_http_reports_calls_and_ground_truth():
    report = bench("--engines", "this")
    assert report["benchmark"] == "versus" and report["world"] == "default"
    assert report["seeds"] == [0] and report["nights"] == 1
    assert "HTTP" in report["engines"]["this"]["transport"] or "127.0.0.1" in report["engines"]["this"]["transport"]
    check_engine(report, "this")
    row = report["runs"][0]["nights"][1]
    # every call the engine counted reached the world over HTTP, and the world placed every prompt
    assert row["status"] in ("staged", "no-change")
    assert row["world_calls_by_purpose"] == row["calls_by_purpose"]
    assert "other" not in row["world_calls_by_purpose"]


def test_this_engine_through_handoff_prompts_the_world_answers_from_their_text():
    report = bench("--engines", "this", "--transport", "handoff")
    check_engine(report, "this")
    row = report["runs"][0]["nights"][1]
    assert row["status"] == "staged" and row["adopted"]["covering"] > 0, row
    assert row["adopted"]["harmful"] == 0
    # a prompt file is read back from its text alone: the world placed every one of them
    assert "other" not in row["calls_by_purpose"]
    assert row["rounds"] >= 3 and report["summary"]["this"][1]["rounds"] == row["rounds"]
    ahead = bench("--engines", "this", "--transport", "handoff", "--handoff-ahead", "3")
    assert ahead["handoff_ahead"] == 3
    assert ahead["runs"][0]["nights"][1]["rounds"] < row["rounds"]  # the next look's samples come along


def test_reference_engine_through_its_claude_backend():
    if not REFERENCE_READY:
        message = (
            "the reference engine's virtualenv is not built in the benchmark cache "
            "(run scripts/bench_versus.py once to build it)"
        )
        if os.environ.get("SKILLOPT_REQUIRE_REFERENCE") == "1":
            pytest.fail(message + "; SKILLOPT_REQUIRE_REFERENCE=1 makes this a failure")
        pytest.skip(message)
    report = bench("--engines", "reference")
    check_engine(report, "reference")
    row = report["runs"][0]["nights"][1]
    # the reference replays tasks and asks its optimizer; no prompt the world could not place
    assert row["calls_by_purpose"].get("reflect", 0) >= 1 and "other" not in row["calls_by_purpose"]


# ---- the trade-off and correlated worlds ----

from dataclasses import replace  # noqa: E402

import versus_world as vw  # noqa: E402
import versus_worlds_extra as extra  # noqa: E402

from skillopt_sleep.backends.base import Request  # noqa: E402

KINDS = [kind for kind, _, _ in vw.KINDS]
TOKENS = {kind: token for kind, _, token in vw.KINDS}


def expected_truth(rules: list[str]) -> float:
    """The trade-off world's ground truth worked out by hand from the rules (each scoped to the kind
    whose token it names, as this engine writes them): a kind whose token a rule asks for passes with
    follow, one asked against with 1 - follow, both a coin flip, else base; halved once per
    trade-off clause naming the kind."""
    follow, base = vw.KNOBS["follow"], vw.KNOBS["base"]
    total = 0.0
    for kind in KINDS:
        speaking = [r for r in rules if f'include "{TOKENS[kind]}"' in r]
        stances = {"never include" not in r.lower() for r in speaking}
        p = {frozenset({True}): follow, frozenset({False}): 1 - follow, frozenset({True, False}): 0.5}.get(
            frozenset(stances), base
        )
        halvings = sum(r.count(f"use the same layout for {extra.plural(kind)}") for r in rules)
        total += p * 0.5**halvings
    return total / len(KINDS)


def test_trade_off_rule_lowers_the_kind_it_names_wherever_it_is():
    knobs = vw.knobs_for(0)
    rule = extra.tradeoff_rule('Always include "Refs: ACME-" in the response.', "release note")
    assert rule == 'Always include "Refs: ACME-" in the response, and use the same layout for release notes.'
    scoped = "When working on a commit message task, " + rule[0].lower() + rule[1:]
    for line in (rule, scoped):
        docs = (
            vw.SKILL_TEXT
            + "\n<!-- SKILLOPT-SLEEP:LEARNED START -->\n- "
            + line
            + "\n<!-- SKILLOPT-SLEEP:LEARNED END -->\n"
        )
        by_kind = {t.kind: vw.task_probability(knobs, t, docs, "trade-off") for t in vw.world_tasks()}
        assert by_kind["commit message"] == pytest.approx(0.9)
        assert by_kind["release note"] == pytest.approx(0.15)  # base 0.3 halved, scoped or not
        assert by_kind["incident summary"] == pytest.approx(0.3)
        assert vw.classify(line, vw.world_tasks(), "trade-off") == "trade-off"
        assert vw.ground_truth(knobs, vw.world_tasks(), docs, "default") == pytest.approx(0.45)  # no effect elsewhere
    assert vw.classify('Always include "Refs: ACME-" in the response.', vw.world_tasks(), "trade-off") == "covering"


def test_both_engines_optimizers_propose_trade_offs_at_the_stated_rate():
    checks = [{"op": "contains", "arg": token} for token in TOKENS.values()]
    rules = [
        r for seed in range(200) for r in vw.proposed_rules(vw.knobs_for(seed), checks, "trade-off", 99, "p", seed)
    ]
    covering = [r for r in rules if r.startswith("Always include")]
    share = sum(bool(extra.victims(r, KINDS)) for r in covering) / len(covering)
    assert abs(share - extra.TRADEOFF) < 0.06, share
    assert not any(
        extra.victims(r, KINDS)
        for seed in range(50)
        for r in vw.proposed_rules(vw.knobs_for(seed), checks, "default", 99, "p", seed)
    )
    # this engine's reflect replies carry them too
    payload = {
        "mode": "failure",
        "max_edits": 8,
        "current_rules": {"all": []},
        "tasks": [
            {"task_id": t.id, "intent": t.intent, "failed_checks": list(t.checks)}
            for t in vw.world_tasks()
            if t.split == "train"
        ],
    }
    seen = 0
    for seed in range(40):
        request = Request("reflect", "", f"evidence {seed}", payload=payload)
        edits = json.loads(vw.world_reflect(vw.knobs_for(seed), "trade-off", request))["edits"]
        seen += sum(bool(extra.victims(e["content"], KINDS)) for e in edits)
    assert seen > 0


def test_trade_off_world_night_classifies_counts_and_scores_them():
    report = bench("--engines", "this", "--world", "trade-off", "--transport", "in-process")
    assert report["world"] == "trade-off"
    assert report["world_knobs"]["tradeoff"] == extra.TRADEOFF
    assert report["world_knobs"]["tradeoff_factor"] == extra.TRADEOFF_FACTOR
    check_engine(report, "this")
    row = report["runs"][0]["nights"][1]
    proposed = [r["rule"] for r in row["adopted"]["rules"]] + [r["rule"] for r in row["refused"]]
    assert any(extra.victims(r, KINDS) for r in proposed), proposed  # the engine was shown trade-offs
    for item in row["adopted"]["rules"]:
        assert (item["class"] == "trade-off") == bool(extra.victims(item["rule"], KINDS)), item
    assert row["adopted"]["trade-off"] == report["summary"]["this"][1]["adopted_total"]["trade-off"]
    final = [r["rule"] for r in report["runs"][0]["final_rules"]["rules"]]
    assert row["ground_truth"] == pytest.approx(expected_truth(final), abs=1e-4)


def test_correlated_answers_keep_the_knobs_pass_rate_over_tasks():
    knobs = vw.knobs_for(3, corr=0.8)
    task = vw.world_tasks()[0]
    chances = [vw.answer_probability(knobs, replace(task, id=f"t{i}"), vw.SKILL_TEXT, "default") for i in range(3000)]
    assert sum(chances) / len(chances) == pytest.approx(0.3, abs=0.02)
    assert sum(c < 0.05 or c > 0.95 for c in chances) > len(chances) / 2  # most tasks near always / never


def test_correlated_world_repeats_agree_more_than_independent_ones():
    correlated = bench("--engines", "this", "--world", "correlated", "--transport", "in-process")
    assert correlated["world_knobs"] == {"corr": extra.CORRELATED, "drift": 0.0}
    night = correlated["summary"]["this"][1]
    assert "ground_truth_tasks" in night and 0.0 <= night["ground_truth_tasks"] <= 1.0
    assert correlated["summary"]["this"][0]["ground_truth"] == correlated["ground_truth_start"]
    agree = correlated["repeat_agreement"]["this"]
    assert agree["pairs"] > 100
    # the same margin as the independent control's below: about three standard errors of an
    # agreement rate near 0.8 over some 600 pairs (which pairs there are follows the engine's draws)
    assert agree["measured"] > agree["if_independent"] + 0.05, agree
    independent = bench("--engines", "this", "--world", "correlated", "--corr", "0", "--transport", "in-process")
    agree = independent["repeat_agreement"]["this"]
    assert abs(agree["measured"] - agree["if_independent"]) < 0.05, agree
    assert "ground_truth_tasks" not in independent["summary"]["this"][1]
