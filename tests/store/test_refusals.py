from __future__ import annotations

from skillopt_sleep.store.refusals import RejectedLedger
from skillopt_sleep.types import Edit


def test_rejected_ledger_matches_normalised_rules_per_project(tmp_path):
    ledger = RejectedLedger()
    project = tmp_path / "p"
    refused = Edit("skill", "add", "- Always  write tests first.")
    ledger.add(project, refused, ["regressed t2"], "n1")
    assert ledger.contains(project, Edit("skill", "add", "always write tests first"))
    assert not ledger.contains(project, Edit("memory", "add", "always write tests first"))
    assert not ledger.contains(project, Edit("skill", "add", "always write docs first"))
    assert not ledger.contains(tmp_path / "other", Edit("skill", "add", "always write tests first"))
    fresh = RejectedLedger()  # another night reads it back from disk
    assert fresh.contains(project, Edit("skill", "add", "ALWAYS write tests first!"))
    assert fresh.entries(project)[0]["reasons"] == ["regressed t2"]


def test_the_ledger_catches_a_reworded_rule_but_not_a_different_number_or_a_negation(tmp_path):
    ledger = RejectedLedger()
    project = tmp_path / "p"
    ledger.add(
        project,
        Edit("skill", "add", "Keep commit subjects under 50 characters and cite the ticket"),
        ["the mean over all 4 val tasks fell"],
        "n1",
    )
    fresh = RejectedLedger()
    assert fresh.contains(
        project, Edit("skill", "add", "cite the ticket and keep commit subjects under 50 characters.")
    )
    assert not fresh.contains(
        project, Edit("skill", "add", "Keep commit subjects under 72 characters and cite the ticket")
    )
    assert not fresh.contains(
        project, Edit("skill", "add", "Never keep commit subjects under 50 characters and cite the ticket")
    )
    assert not fresh.contains(
        project, Edit("memory", "add", "Keep commit subjects under 50 characters and cite the ticket")
    )
