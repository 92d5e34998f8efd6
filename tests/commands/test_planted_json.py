"""A project cloned with planted, absurdly nested JSON under .skillopt-sleep/ (manifest, report,
journal, adoption ledger, lock holder) gets clear outcomes from every verb that reads it — never an
internal error."""

from __future__ import annotations

import pytest

from skillopt_sleep.cli import main

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def planted(tmp_path):
    project = tmp_path / "cloned"
    state = project / ".skillopt-sleep"
    night = state / "staging" / "n1"
    night.mkdir(parents=True)
    for name in ("manifest.json", "report.json"):
        (night / name).write_text(DEEP)
    (state / "journal.json").write_text(DEEP)
    (state / "adoptions.jsonl").write_text(DEEP + "\n")
    (state / "night.lock.holder.json").write_text(DEEP)
    (project / "CLAUDE.md").write_text("# Rules\n")
    return project


@pytest.mark.parametrize("verb", ["status", "adopt", "revert", "review", "notice"])
def test_verbs_reading_planted_deep_json_fail_clearly(planted, verb, capsys):
    code = main([verb, "--project", str(planted)])
    err = capsys.readouterr().err
    assert "internal error" not in err
    assert code in (0, 3, 6)
    assert (planted / "CLAUDE.md").read_text() == "# Rules\n"
