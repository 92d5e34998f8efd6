from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.documents.managed_block import DocumentSet, EditRefused, apply_edit, load_documents
from skillopt_sleep.rules.budget import apply_within_budget, fit_together
from skillopt_sleep.types import Edit

COMMIT = "When working on a commit message task, "
REFS = COMMIT + 'always include "Refs: ACME-" in the response.'
PATTERN = COMMIT + "make the subject line match the pattern ^(feat|fix): on its own line."
NOTES = 'When working on a release notes task, always include a section headed "Fixes".'


def full(tmp_path: Path, rules: list[str], max_rules: int = 2) -> DocumentSet:
    docs = load_documents(tmp_path, max_rules=max_rules)
    for rule in rules:
        docs = apply_edit(docs, Edit("skill", "add", rule))
    return docs


def add(content: str, **kw) -> Edit:
    return Edit("skill", "add", content, evidence=["commit-1"], rationale="seen failing", **kw)


def test_a_rule_for_a_full_document_is_merged_into_the_closest_rule_of_its_scope(tmp_path: Path) -> None:
    docs = full(tmp_path, [REFS, PATTERN])
    edit = add(COMMIT + 'never include "WIP" in the subject line.')
    with pytest.raises(EditRefused, match="budget of 2 rules"):
        apply_edit(docs, edit)
    merge, after = apply_within_budget(docs, edit)
    assert merge.op == "replace" and merge.anchor == PATTERN, "the rule sharing most words ('subject line')"
    assert merge.content == (
        COMMIT + "make the subject line match the pattern ^(feat|fix): on its own line; "
        'never include "WIP" in the subject line.'
    )
    assert after.skill.rules() == [REFS, merge.content]
    assert merge.evidence == ["commit-1"] and "holds its budget of 2 rules" in merge.rationale
    assert edit.op == "add", "the proposed edit is not changed in place"


def test_a_document_with_room_takes_the_rule_as_proposed(tmp_path: Path) -> None:
    docs = full(tmp_path, [REFS], max_rules=3)
    edit = add(PATTERN)
    assert apply_within_budget(docs, edit) == (edit, apply_edit(docs, edit))


@pytest.mark.parametrize(
    "content",
    [
        NOTES,  # no rule of its scope to merge with
        'Always include "Refs: ACME-" in every response.',  # unscoped: merging would carry it into one kind
        COMMIT + "mention " + "the affected module " * 11 + ".",  # the merged line would pass 300 chars
    ],
)
def test_a_rule_that_cannot_be_merged_stays_refused_for_the_budget(tmp_path: Path, content: str) -> None:
    docs = full(tmp_path, [REFS, PATTERN])
    with pytest.raises(EditRefused, match="budget"):
        apply_within_budget(docs, add(content))


def test_other_refusals_are_not_turned_into_merges(tmp_path: Path) -> None:
    docs = full(tmp_path, [REFS, PATTERN])
    with pytest.raises(EditRefused, match="not a hand-written line"):
        apply_within_budget(docs, add(COMMIT + "keep the body short.", supersedes="No such line."))


def test_edits_fit_together_best_first_until_the_budget_is_full(tmp_path: Path) -> None:
    docs = full(tmp_path, [REFS], max_rules=2)
    first, second = add(PATTERN), add(NOTES)
    kept, refused = fit_together(docs, [first, second])
    assert kept == [first] and [(e, "budget" in why) for e, why in refused] == [(second, True)]
