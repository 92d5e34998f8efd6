"""scripts/bench_learning.py: its suite is deficient and has the traps it claims, its ceiling is
the ~0.90 the issue names, its harm audit finds a harmful rule and clears covering ones, and a
night through the engine's real path runs end to end."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from skillopt_sleep.documents.managed_block import load_documents

from tests.support.scripts import script_module


@pytest.fixture(scope="module")
def bench():
    yield from script_module("bench_learning")


def start(bench, tmp_path: Path, name: str):
    skill = next(s for s in bench.SUITE if s.name == name)
    docs = load_documents(bench.new_project(tmp_path, skill))
    test = [t for t in bench.make_tasks(skill, 1, True) if t.split == "test"]
    return skill, docs, test


def with_rules(docs, rules):
    return docs.with_document(docs.skill.with_rules(rules))


def test_the_suite_has_four_skills_with_several_kinds_each(bench):
    assert len(bench.SUITE) >= 4
    for skill in bench.SUITE:
        assert len(skill.kinds) >= 3 and all(kind.checks for kind in skill.kinds)


def test_tasks_are_new_each_night_and_test_tasks_never_change(bench):
    skill = bench.SUITE[0]
    one, two = bench.make_tasks(skill, 1, True), bench.make_tasks(skill, 2, True)
    ids = [t.id for t in one]
    assert len(ids) == len(set(ids))
    test = {t.id for t in one if t.split == "test"}
    assert test == {t.id for t in two if t.split == "test"}
    learn_one = {t.id for t in one if t.split != "test"}
    learn_two = {t.id for t in two if t.split != "test"}
    assert not learn_one & learn_two and not (learn_one | learn_two) & test
    assert {t.id for t in bench.make_tasks(skill, 2, False)} == set(ids)  # --same-tasks


@pytest.mark.parametrize("name", ["git-writing", "research-notes", "api-docs", "incident-comms"])
def test_each_skill_starts_deficient_and_its_ceiling_is_about_0_90(bench, tmp_path, name):
    skill, docs, test = start(bench, tmp_path, name)
    before = bench.test_scores(docs, test, 0, 16)["all"]
    ceiling = bench.test_scores(with_rules(docs, bench.oracle_rules(skill, docs)), test, 0, 16)["all"]
    assert before < 0.5, before
    assert 0.84 < ceiling < 0.96, ceiling


def test_the_research_skill_ceiling_needs_rules_that_supersede_its_hand_written_line(bench, tmp_path):
    skill, docs, test = start(bench, tmp_path, "research-notes")
    oracle = bench.oracle_rules(skill, docs)
    superseding = [r for r in oracle if "(supersedes: " in r]
    assert superseding and all("Do NOT look anything up" in r for r in superseding)
    plain = [r.split(" (supersedes: ")[0] for r in oracle]
    lookup = "dependency lookup"
    assert (
        bench.test_scores(with_rules(docs, oracle), test, 0, 32)[lookup]
        - bench.test_scores(with_rules(docs, plain), test, 0, 32)[lookup]
    ) > 0.15


def test_an_unscoped_include_rule_lowers_the_changelog_kind_of_the_git_skill(bench, tmp_path):
    skill, docs, test = start(bench, tmp_path, "git-writing")
    oracle = bench.oracle_rules(skill, docs)
    unscoped = [
        'Always include "Refs: ACME-" in the response.' if "Refs: ACME-" in r and "always include" in r else r
        for r in oracle
    ]
    assert unscoped != oracle
    scoped_docs, unscoped_docs = with_rules(docs, oracle), with_rules(docs, unscoped)
    assert bench.harmful_rules(scoped_docs, test, 0, 0.08) == []
    found = bench.harmful_rules(unscoped_docs, test, 0, 0.08)
    assert [f["rule"] for f in found] == ['Always include "Refs: ACME-" in the response.']
    assert list(found[0]["lowers"]) == ["changelog entry"]


def test_the_svg_chart_is_well_formed(bench):
    summaries = [
        {"skill": "a&b", "ceiling": 0.9, "per_night": {"engine": [0.2, 0.5, 0.8], "strict_mean": [0.2, 0.6, None]}}
    ]
    root = ET.fromstring(bench.svg_chart(summaries, 2, "knobs <x>"))
    assert root.tag.endswith("svg")
    assert len([e for e in root.iter() if e.tag.endswith("polyline")]) == 2


def test_the_policies_chart_draws_one_mean_line_per_policy(bench):
    summaries = [
        {"skill": "a", "fraction_of_ceiling": {"engine": [0.2, 0.9], "engine_capped_94": [0.2, 0.2]}},
        {"skill": "b", "fraction_of_ceiling": {"engine": [0.4, 1.0], "engine_capped_94": [0.4, None]}},
    ]
    root = ET.fromstring(bench.svg_policies_chart(summaries, 1, "knobs <x>"))
    lines = [e.get("points") for e in root.iter() if e.tag.endswith("polyline")]
    assert len(lines) == 2
    assert len(lines[0].split()) == 2 and len(lines[1].split()) == 2, (
        "a night with no value in one skill uses the others"
    )


def test_one_engine_night_and_one_strict_night_run_end_to_end(bench, monkeypatch, tmp_path):
    monkeypatch.setattr(bench, "AUDIT_SAMPLES", 2)
    monkeypatch.setattr(bench, "TEST_SAMPLES", 2)
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(tmp_path / "home"))
    for policy in ("engine", "engine_no_retire", "engine_capped", "strict_mean"):
        cap = 60 if policy == "engine_capped" else None
        out = bench.one_job((policy, "api-docs", 0, 1, 0.08, True, 12, 0, cap))
        assert out["policy"] == (f"engine_capped_{cap}" if cap else policy)
        assert [row["night"] for row in out["nights"]] == [0, 1]
        assert out["nights"][1]["calls"] > 0
        if cap is not None:
            assert out["nights"][1]["calls"] <= cap and out["nights"][1]["status"] != "budget"
        assert set(out["nights"][1]["test"]) == {"endpoint reference", "error message", "migration guide", "all"}


def test_a_shift_ends_the_first_kinds_work_and_begins_the_last_ones(bench):
    skill = next(s for s in bench.SUITE if s.name == "git-writing")
    names = [k.name for k in skill.kinds]
    assert bench.at_night(skill, 5, 0) == skill
    assert [k.name for k in bench.at_night(skill, 2, 3).kinds] == names[:-1]
    assert [k.name for k in bench.at_night(skill, 3, 3).kinds] == names[1:]
    assert {t.kind for t in bench.make_tasks(bench.at_night(skill, 3, 3), 3, True)} == set(names[1:])
