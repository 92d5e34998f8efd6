"""The documents as the optimizer is shown them (documents/optimizer_view.py)."""

from __future__ import annotations

import os
from pathlib import Path

from skillopt_sleep.documents.managed_block import load_documents
from skillopt_sleep.documents.optimizer_view import optimizer_payload, optimizer_view
from tests.documents.test_managed_block import FORBID, SKILL, docs_for


def test_the_optimizer_sees_hand_written_text_of_both_documents(tmp_path: Path) -> None:
    docs = docs_for(tmp_path, memory="# Project\n\nUse Decimal for money.\n")
    view = optimizer_view(docs)
    assert FORBID in view and "Use Decimal for money." in view
    assert 'name="SKILL.md" role="skill"' in view and "supersedes" in view
    assert "whole-skill editing is on" not in view


def test_the_view_is_redacted_cleaned_and_bounded(tmp_path: Path) -> None:
    secret = "sk-ant-api03-" + "A" * 90
    long_tail = "word " * 5000
    docs = docs_for(tmp_path, skill=SKILL + f"token {secret}\n\x1b[31mred\x1b[0m\n" + long_tail)
    view = optimizer_view(docs, max_chars=2000)
    assert secret not in view and "\x1b" not in view
    assert "more characters of SKILL.md not shown" in view
    assert len(view) < 2000 + 1000


def test_the_view_says_what_a_night_may_do(tmp_path: Path) -> None:
    assert "whole-skill editing is on" in optimizer_view(docs_for(tmp_path, whole=True))
    docs = docs_for(tmp_path / "ro")
    os.chmod(docs.skill.path, 0o444)
    try:
        frozen = load_documents(tmp_path / "ro" / "proj", "claude", "lookup", whole_skill=True)
        assert "read-only" in optimizer_view(frozen)
    finally:
        os.chmod(docs.skill.path, 0o644)


def test_the_payload_lists_hand_written_lines(tmp_path: Path) -> None:
    payload = optimizer_payload(docs_for(tmp_path, whole=True))
    assert payload["skill"]["hand_written"] == ["# Lookup", f"- {FORBID}", "- Answer briefly."]
    assert payload["skill"]["whole_skill"] is True and payload["memory"]["whole_skill"] is False
