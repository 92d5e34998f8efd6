"""Scoped rules: the kind phrase, the rendered "When <scope>, <rule>" form, and where a rule goes."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from skillopt_sleep.rules.scope import (
    ALL_KINDS,
    clean_scope,
    kind_from_label,
    render_scoped,
    scope_for_kind,
    scope_label,
    settle_scope,
    split_scoped,
)
from skillopt_sleep.types import Edit, TaskRecord


def tasks(**kinds: str) -> dict[str, TaskRecord]:
    return {tid: TaskRecord(id=tid, intent=f"request {tid}", kind=kind) for tid, kind in kinds.items()}


def test_kind_from_a_mining_label():
    assert kind_from_label("release-notes") == "release notes"
    assert kind_from_label("Commit_message") == "commit message"
    assert kind_from_label("") == ""


@pytest.mark.parametrize(
    "raw, cleaned",
    [
        ("writing a commit message", "writing a commit message"),
        ("When writing a commit message,", "writing a commit message"),
        ("  for  release, notes ", "release notes"),
        ("all kinds", ""),
        ("", ""),
        ("Any", ""),
    ],
)
def test_clean_scope(raw: str, cleaned: str):
    assert clean_scope(raw) == cleaned


def test_render_and_split_scoped():
    rule = render_scoped("writing a commit message", 'End with a "Refs: ACME-<n>" trailer.')
    assert rule == 'When writing a commit message, end with a "Refs: ACME-<n>" trailer.'
    assert split_scoped(rule) == ("writing a commit message", 'End with a "Refs: ACME-<n>" trailer.')
    assert render_scoped("", "Keep it short.") == "Keep it short."
    assert render_scoped("x", rule) == rule  # already scoped: not scoped twice
    assert render_scoped("working on docs", "README files use ATX headings.").startswith(
        "When working on docs, README files"
    )
    assert split_scoped("Never use floats for money.") == ("", "Never use floats for money.")


@given(
    scope=st.text(st.characters(whitelist_categories=("L",)), min_size=1, max_size=30),
    body=st.text(st.characters(whitelist_categories=("L",)), min_size=1, max_size=30),
)
def test_split_reads_back_what_render_wrote(scope: str, body: str):
    scope = clean_scope(scope)
    body = body[:1].upper() + body[1:]
    found, text = split_scoped(render_scoped(scope, body + " rule."))
    assert found == scope
    assert text.casefold() == (body + " rule.").casefold()


def test_the_optimizers_scope_wins_and_goes_to_the_skill():
    e = Edit(
        target="memory", op="add", content="End with a trailer.", scope="writing a commit message", evidence=["a", "b"]
    )
    settle_scope(e, tasks(a="commit message", b="release notes"))
    assert e.target == "skill" and e.scope == "writing a commit message"
    assert e.content == "When writing a commit message, end with a trailer."


def test_an_unscoped_rule_from_one_kind_is_scoped_to_it():
    e = Edit(target="memory", op="add", content='Always include "Refs:".', evidence=["a", "b"])
    settle_scope(e, tasks(a="commit message", b="commit message"))
    assert e.scope == scope_for_kind("commit message") and e.target == "skill"
    assert e.content == f'When {scope_for_kind("commit message")}, always include "Refs:".'


def test_an_unscoped_rule_across_kinds_goes_to_memory():
    e = Edit(target="skill", op="add", content="Money is Decimal.", evidence=["a", "b"])
    settle_scope(e, tasks(a="commit message", b="release notes"))
    assert e.scope == "" and e.target == "memory" and e.content == "Money is Decimal."


def test_a_scope_written_into_the_content_is_read_as_the_scope():
    e = Edit(target="memory", op="add", content="When fixing a bug, add a test.", evidence=["a", "b"])
    settle_scope(e, tasks(a="bug fix", b="release notes"))
    assert e.scope == "fixing a bug" and e.target == "skill" and e.content == "When fixing a bug, add a test."


def test_a_rule_from_tasks_that_say_nothing_of_their_kind_goes_to_the_skill():
    """Project memory is read for every kind of work: evidence that cannot show the rule is for
    every kind keeps it in the skill, whatever the optimizer asked."""
    e = Edit(target="memory", op="add", content="Keep it short.", evidence=["a", "zzz"])
    settle_scope(e, tasks(a=""))
    assert (e.target, e.scope, e.content) == ("skill", "", "Keep it short.")
    e = Edit(target="memory", op="add", content="Keep it short.", evidence=[])
    settle_scope(e, tasks(a=""))
    assert e.target == "skill"


def test_a_rule_from_one_skills_tasks_never_lands_in_memory():
    """Tasks of a task file that name their skill but no kind (the seed of one skill): a rule from
    them goes to the skill; from two skills' tasks it may go to memory."""
    one = {t: TaskRecord(id=t, intent="analyse", skill_hint="thorough-analyst") for t in ("a", "b")}
    e = Edit(
        target="memory", op="add", content="Keep every response short: at most 60 characters.", evidence=["a", "b"]
    )
    settle_scope(e, one)
    assert (e.target, e.scope) == ("skill", "")
    two = {
        "a": TaskRecord(id="a", intent="x", skill_hint="advisor"),
        "b": TaskRecord(id="b", intent="y", tags=["brief-writer"]),
    }
    e = Edit(target="skill", op="add", content="Money is Decimal.", evidence=["a", "b"])
    settle_scope(e, two)
    assert e.target == "memory"


def test_a_replace_keeps_the_document_of_its_anchor():
    e = Edit(target="memory", op="replace", anchor="Be brief.", content="Be brief and exact.", evidence=["a"])
    settle_scope(e, tasks(a=""))
    assert e.target == "memory"


def test_a_delete_is_left_alone():
    e = Edit(target="skill", op="delete", anchor="Keep it short.", evidence=["a"])
    settle_scope(e, tasks(a="commit message"))
    assert (e.target, e.scope, e.content) == ("skill", "", "")


def test_scope_label():
    assert scope_label(Edit(target="skill", op="add", content="x", scope="writing docs")) == "writing docs"
    assert scope_label(Edit(target="skill", op="add", content="When writing docs, be brief.")) == "writing docs"
    assert scope_label(Edit(target="memory", op="add", content="Be brief.")) == ALL_KINDS


def test_old_records_read_without_kind_or_scope():
    assert TaskRecord.from_dict({"id": "t", "intent": "x"}).kind == ""
    assert Edit.from_dict({"target": "skill", "op": "add", "content": "x"}).scope == ""
    e = Edit(target="skill", op="add", content="x", scope="writing docs")
    assert Edit.from_dict(e.to_dict()) == e


@pytest.mark.parametrize(
    "kind, scope",
    [
        ("commit message", "working on a commit message task"),
        ("endpoint docs", "working on an endpoint docs task"),
        ("api reference", "working on an api reference task"),
        ("user story", "working on a user story task"),
        ("", ""),
    ],
)
def test_the_default_scope_reads_as_english(kind, scope):
    assert scope_for_kind(kind) == scope
