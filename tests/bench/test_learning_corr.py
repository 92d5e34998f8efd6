"""scripts/bench_learning.py --corr: every job runs once per within-task correlation, the target it
runs is the sim with that ``corr``, and each run and summary row states its world."""

from __future__ import annotations

import pytest

from skillopt_sleep.backends import make_backend

from tests.support.scripts import script_module


@pytest.fixture(scope="module")
def bench():
    yield from script_module("bench_learning")


def test_a_job_runs_and_states_its_corr(bench, monkeypatch, tmp_path):
    monkeypatch.setattr(bench, "AUDIT_SAMPLES", 2)
    monkeypatch.setattr(bench, "TEST_SAMPLES", 2)
    monkeypatch.setattr(bench, "CORR", [None, 0.0])
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(tmp_path / "home"))
    plain = bench.one_job(("engine", "api-docs", 0, 1, 0.08, True, 12, 0, None))
    assert "corr" not in plain and make_backend(bench.spec(0)).knobs.corr == 0
    runs = [bench.one_job(("engine", "api-docs", 0, 1, 0.08, True, 12, 0, None, c)) for c in (0.0, 0.8)]
    assert make_backend(bench.spec(0)).knobs.corr == 0.8, "the job's target is the correlated sim"
    assert [r["corr"] for r in runs] == [0.0, 0.8]
    assert {k: v for k, v in runs[0].items() if k not in ("corr", "wall_s")} == {
        k: v for k, v in plain.items() if k != "wall_s"
    }, "corr 0 is the independent sim"
    assert runs[1]["nights"] != runs[0]["nights"] or runs[1]["ceiling"] != runs[0]["ceiling"]
    rows = bench.summarise_worlds(runs, 1, [0.0, 0.8])
    assert [(r["corr"], r["skill"]) for r in rows] == [(0.0, "api-docs"), (0.8, "api-docs")]
    assert [r["ceiling"] for r in rows] == [r["ceiling"]["all"] for r in runs], "each world's own ceiling"


def test_drift_reaches_the_target(bench, monkeypatch):
    monkeypatch.setattr(bench, "CORR", [0.8, 1.0])
    knobs = make_backend(bench.spec(3)).knobs
    assert (knobs.corr, knobs.drift) == (0.8, 1.0)
    monkeypatch.setattr(bench, "CORR", [None, 0.0])
    assert ",corr=" not in bench.spec(3) and ",drift=" not in bench.spec(3)


@pytest.mark.parametrize(
    "argv",
    [
        ["--corr", "1.5"],
        ["--corr", "0.5", "0.5"],
        ["--corr", "0", "0.8", "--svg", "x.svg"],
        ["--drift", "0.5"],
        ["--corr", "0.8", "--drift", "2"],
    ],
)
def test_bad_corr_is_refused(bench, argv, capsys):
    assert bench.main(["--nights", "1", "--seeds", "1", *argv]) == 2
    assert "--corr takes distinct values within 0..1" in capsys.readouterr().err
