"""The records one night's learning loop returns (gate/outcome.py): an edit that did not make it is
a gate refusal that bans nothing unless said otherwise, and each outcome keeps its own lists."""

from __future__ import annotations

from pathlib import Path

from skillopt_sleep.documents.managed_block import load_documents
from skillopt_sleep.gate.outcome import Outcome, Rejection
from skillopt_sleep.types import Edit


def test_a_rejection_is_a_gate_refusal_that_bans_nothing_by_default() -> None:
    rejected = Rejection(Edit("memory", "add", "Always X."), ["no gain"])
    assert (rejected.stage, rejected.ban) == ("gate", False)


def test_an_outcome_with_nothing_accepted_is_the_input_and_its_own(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    docs = load_documents(tmp_path / "proj", "claude", "lookup")
    first, second = Outcome(docs), Outcome(docs)
    assert first.documents is docs and first.accepted == [] and first.baseline is None
    first.notes.append("a note")
    first.phases["dream"] = 3
    first.rejected.append(Rejection(Edit("memory", "add", "Y."), ["r"], stage="lookahead"))
    assert (second.notes, second.phases, second.rejected) == ([], {}, [])
