"""The managed block (documents/managed_block.py): created and edited without touching a byte of
the hand-written text around it, edits by anchor, the rule budget and length cap, new skills, the
documents' paths and what is refused. Also whole-document awareness: the optimizer's view of both
documents, rules that supersede a hand-written line, and line edits of a skill its owner opted
in."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from skillopt_sleep.documents.handwritten import split_supersedes
from skillopt_sleep.documents.optimizer_view import optimizer_payload, optimizer_view
from skillopt_sleep.documents.managed_block import (
    AGENTS_MD_LIMIT,
    DEFAULT_SKILL_NAME,
    END,
    START,
    DocumentSet,
    EditRefused,
    Limits,
    apply_edit,
    clean_rule,
    document_paths,
    load_documents,
    new_skill_text,
    whole_skill_opted_in,
)
from skillopt_sleep.errors import EXIT_CONFIG, UserError
from skillopt_sleep.types import Edit

HAND = "# Acme\n\nUse tabs. Run `make test` before pushing.\n"


def add(target: str, content: str) -> Edit:
    return Edit(target=target, op="add", content=content)


def project_with(tmp_path: Path, memory: bytes | None = None, name: str = "CLAUDE.md") -> Path:
    if memory is not None:
        (tmp_path / name).write_bytes(memory)
    return tmp_path


def with_rules(docs: DocumentSet, target: str, rules: list[str]) -> DocumentSet:
    for r in rules:
        docs = apply_edit(docs, add(target, r))
    return docs


# -- the managed block ---------------------------------------------------------------------------


def test_block_is_created_at_the_end_when_missing(tmp_path: Path):
    docs = load_documents(project_with(tmp_path, HAND.encode()))
    assert docs.memory.rules() == []
    out = apply_edit(docs, add("memory", "Always run the linter."))
    text = out.memory.text
    assert text.startswith(HAND)
    assert text.rstrip("\n").endswith(END)
    assert text.index(START) > len(HAND) - 1
    assert out.memory.rules() == ["Always run the linter."]
    assert docs.memory.text == HAND  # documents are immutable values


def test_block_in_an_empty_or_missing_file(tmp_path: Path):
    docs = load_documents(tmp_path)
    assert docs.memory.original is None and docs.memory.text == ""
    out = apply_edit(docs, add("memory", "Rule one."))
    assert out.memory.text.startswith(START)
    assert out.memory.rules() == ["Rule one."]
    assert out.memory.changed


def test_hand_text_around_an_existing_block_is_byte_identical(tmp_path: Path):
    before = "# Top\n\nintro text  \n\n"
    after = "\n## Later\n\ntrailing   hand text\n\n\n"
    block = f"{START}\n## Learned rules\n\n- Old rule.\n{END}"
    (tmp_path / "CLAUDE.md").write_text(before + block + after, encoding="utf-8")
    docs = load_documents(tmp_path)
    assert docs.memory.rules() == ["Old rule."]
    out = apply_edit(
        apply_edit(docs, add("memory", "New rule.")), Edit("memory", "replace", "Newer rule.", anchor="Old rule.")
    )
    text = out.memory.text
    assert text.startswith(before + START)
    assert text.endswith(END + after)
    assert out.memory.rules() == ["Newer rule.", "New rule."]


def test_crlf_file_keeps_its_bytes_and_line_endings(tmp_path: Path):
    raw = b"# Acme\r\n\r\nHand-written: keep\r\nthis exactly.  \r\n"
    docs = load_documents(project_with(tmp_path, raw))
    out = apply_edit(apply_edit(docs, add("memory", "Rule A.")), add("memory", "Rule B."))
    data = out.memory.encoded()
    assert data.startswith(raw)
    assert b"\n" not in data.replace(b"\r\n", b"")  # no bare LF introduced
    assert out.memory.rules() == ["Rule A.", "Rule B."]
    # edit again inside the now-existing block: prefix still identical
    again = apply_edit(out, Edit("memory", "delete", anchor="Rule A."))
    assert again.memory.encoded().startswith(raw)
    assert again.memory.rules() == ["Rule B."]


def test_crlf_file_with_block_in_the_middle(tmp_path: Path):
    before = b"# Title\r\n\r\n"
    after = b"\r\n## Hand section\r\nkeep me\r\n"
    raw = before + START.encode() + b"\r\n- Keep.\r\n" + END.encode() + after
    docs = load_documents(project_with(tmp_path, raw))
    out = apply_edit(docs, add("memory", "Added."))
    data = out.memory.encoded()
    assert data.startswith(before + START.encode())
    assert data.endswith(END.encode() + after)
    assert out.memory.rules() == ["Keep.", "Added."]


def test_unchanged_documents_are_not_changed(tmp_path: Path):
    docs = load_documents(project_with(tmp_path, HAND.encode()))
    assert docs.memory.changed is False
    assert docs.skill.changed is True  # a new SKILL.md does not exist yet


# -- edit ops ------------------------------------------------------------------------------------


@pytest.fixture
def three(tmp_path: Path) -> DocumentSet:
    docs = load_documents(project_with(tmp_path, HAND.encode()))
    return with_rules(docs, "skill", ["First rule.", "Second rule about commits.", "Third rule."])


def test_replace(three: DocumentSet):
    out = apply_edit(three, Edit("skill", "replace", "Second rule, sharper.", anchor="second rule about commits."))
    assert out.skill.rules() == ["First rule.", "Second rule, sharper.", "Third rule."]


def test_replace_by_substring_anchor(three: DocumentSet):
    out = apply_edit(three, Edit("skill", "replace", "Commits: be brief.", anchor="about commits"))
    assert out.skill.rules() == ["First rule.", "Commits: be brief.", "Third rule."]


def test_delete(three: DocumentSet):
    out = apply_edit(three, Edit("skill", "delete", anchor="First rule."))
    assert out.skill.rules() == ["Second rule about commits.", "Third rule."]


def test_insert_after(three: DocumentSet):
    out = apply_edit(three, Edit("skill", "insert_after", "Rule 1b.", anchor="First rule."))
    assert out.skill.rules() == ["First rule.", "Rule 1b.", "Second rule about commits.", "Third rule."]
    out = apply_edit(three, Edit("skill", "insert_after", "Last.", anchor="Third rule."))
    assert out.skill.rules()[-1] == "Last."


def test_exact_anchor_wins_over_substring(tmp_path: Path):
    docs = with_rules(load_documents(tmp_path), "memory", ["Use pytest fixtures.", "Use pytest."])
    out = apply_edit(docs, Edit("memory", "delete", anchor="Use pytest."))
    assert out.memory.rules() == ["Use pytest fixtures."]


@pytest.mark.parametrize("op", ["replace", "delete", "insert_after"])
@pytest.mark.parametrize("anchor", ["no such rule", "", "   "])
def test_unknown_anchor_is_refused(three: DocumentSet, op: str, anchor: str):
    with pytest.raises(EditRefused, match="anchor"):
        apply_edit(three, Edit("skill", op, "Something.", anchor=anchor))


def test_edits_touch_only_their_target(three: DocumentSet):
    out = apply_edit(three, add("memory", "Memory rule."))
    assert out.skill == three.skill
    assert out.memory.rules() == ["Memory rule."]


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (Edit("docs", "add", "x"), "unknown edit target"),
        (Edit("skill", "append", "x"), "unknown edit op"),
    ],
)
def test_unknown_target_or_op(three: DocumentSet, edit: Edit, needle: str):
    with pytest.raises(EditRefused, match=needle):
        apply_edit(three, edit)


def test_edits_apply_in_order_and_each_refusal_names_its_reason(three: DocumentSet):
    docs = apply_edit(three, add("skill", "Fourth rule."))
    with pytest.raises(EditRefused, match="rule already present"):
        apply_edit(docs, add("skill", "first RULE."))
    with pytest.raises(EditRefused, match="anchor 'nope' is not a rule in the managed block"):
        apply_edit(docs, Edit("skill", "delete", anchor="nope"))
    docs = apply_edit(docs, add("memory", "M."))
    assert docs.skill.rules()[-1] == "Fourth rule." and docs.memory.rules() == ["M."]


def test_duplicate_add_is_refused_case_insensitively(three: DocumentSet):
    with pytest.raises(EditRefused, match="already present"):
        apply_edit(three, add("skill", "  - THIRD   rule. "))


@pytest.mark.parametrize("op", ["insert_after", "replace"])
def test_no_duplicate_rules_through_other_ops(three: DocumentSet, op: str):
    with pytest.raises(EditRefused):
        apply_edit(three, Edit("skill", op, "third rule.", anchor="First rule."))


# -- budgets and caps ----------------------------------------------------------------------------


def test_rule_budget(tmp_path: Path):
    docs = load_documents(tmp_path, max_rules=3)
    docs = with_rules(docs, "skill", ["R1.", "R2.", "R3."])
    with pytest.raises(EditRefused, match="budget of 3 rules"):
        apply_edit(docs, add("skill", "R4."))
    with pytest.raises(EditRefused, match="budget"):
        apply_edit(docs, Edit("skill", "insert_after", "R1b.", anchor="R1."))
    # replace and delete keep working at the budget; the other document has its own budget
    assert apply_edit(docs, Edit("skill", "replace", "R2'.", anchor="R2.")).skill.rules() == ["R1.", "R2'.", "R3."]
    assert len(apply_edit(docs, Edit("skill", "delete", anchor="R3.")).skill.rules()) == 2
    assert apply_edit(docs, add("memory", "M1.")).memory.rules() == ["M1."]


def test_rule_length_cap():
    limits = Limits(max_rule_chars=40)
    assert clean_rule("x" * 40, limits) == "x" * 40
    with pytest.raises(EditRefused, match="longer than 40"):
        clean_rule("x" * 41, limits)


def test_rule_length_cap_applies_in_apply_edit(tmp_path: Path):
    docs = load_documents(tmp_path)
    with pytest.raises(EditRefused, match="longer than"):
        apply_edit(docs, add("skill", "word " * 100))


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("  Keep   it\n short.  ", "Keep it short."),
        ("- Use tabs.", "Use tabs."),
        ("* Use tabs.", "Use tabs."),
        ("3. Use tabs.", "Use tabs."),
        ("2) Use tabs.", "Use tabs."),
        ("Use `make test` before pushing.", "Use `make test` before pushing."),
    ],
)
def test_clean_rule_normalises(raw: str, clean: str):
    assert clean_rule(raw, Limits()) == clean


@pytest.mark.parametrize(
    "content",
    [
        "",
        "   \n ",
        START,
        f"Nice rule {END} then hand text",
        "see skillopt-sleep:learned:end",
        "<!-- hidden --> rule",
        "rule -->",
        "## Heading injection",
        "# Title",
        "- # heading after a bullet",
        "1. ### numbered heading",
        "--- frontmatter",
        "Use ```python fences```",
        "Rule\n```\ncode\n```",
    ],
)
def test_injection_and_empty_rules_are_refused(tmp_path: Path, content: str):
    with pytest.raises(EditRefused):
        clean_rule(content, Limits())
    docs = load_documents(tmp_path)
    with pytest.raises(EditRefused):
        apply_edit(docs, add("memory", content))


def test_a_refused_edit_leaves_the_documents_alone(three: DocumentSet):
    before = three.skill.encoded()
    with pytest.raises(EditRefused):
        apply_edit(three, add("skill", "<!-- x -->"))
    assert three.skill.encoded() == before


def test_agents_md_is_capped_at_32_kib_for_codex(tmp_path: Path):
    rule = "A rule long enough to matter: " + "y" * 120
    # room for the block with one such rule, but not two
    probe = apply_edit(load_documents(tmp_path, agent="codex"), add("memory", rule))
    overhead = len(probe.memory.encoded())
    filler = "x" * (AGENTS_MD_LIMIT - overhead - 2) + "\n"
    (tmp_path / "AGENTS.md").write_text(filler, encoding="utf-8")
    docs = load_documents(tmp_path, agent="codex")
    assert docs.memory.path.name == "AGENTS.md"
    assert docs.memory.limits.max_bytes == AGENTS_MD_LIMIT
    out = apply_edit(docs, add("memory", rule))
    assert len(out.memory.encoded()) <= AGENTS_MD_LIMIT
    with pytest.raises(EditRefused, match=f"exceed {AGENTS_MD_LIMIT} bytes"):
        apply_edit(out, add("memory", rule.replace("A rule", "Another rule")))
    # the skill document has no byte cap
    assert docs.skill.limits.max_bytes is None


def test_claude_md_has_no_byte_cap(tmp_path: Path):
    (tmp_path / "CLAUDE.md").write_text("x" * (AGENTS_MD_LIMIT + 10), encoding="utf-8")
    docs = load_documents(tmp_path, agent="claude")
    assert docs.memory.limits.max_bytes is None
    assert apply_edit(docs, add("memory", "Fine.")).memory.rules() == ["Fine."]


def test_max_rules_setting_reaches_both_documents(tmp_path: Path):
    docs = load_documents(tmp_path, agent="codex", max_rules=5)
    assert docs.skill.limits.max_rules == 5 and docs.memory.limits.max_rules == 5


# -- SKILL.md ------------------------------------------------------------------------------------


def frontmatter(text: str) -> dict:
    """The ``key: value`` lines of a SKILL.md frontmatter (plain YAML scalars only)."""
    assert text.startswith("---\n")
    head, sep, _ = text[4:].partition("\n---\n")
    assert sep, "frontmatter is not closed"
    meta = {}
    for line in head.splitlines():
        key, colon, value = line.partition(": ")
        assert colon and key.strip() == key and key not in meta, line
        # a plain scalar: nothing YAML would read as structure
        assert value and value[0] not in "'\"[{&*!|>%@`#-" and ": " not in value and " #" not in value, line
        meta[key] = value
    return meta


def test_new_skill_has_valid_frontmatter(tmp_path: Path):
    docs = load_documents(tmp_path, skill_name="commit-rules")
    assert docs.skill.original is None
    meta = frontmatter(docs.skill.text)
    assert meta["name"] == "commit-rules" == docs.skill.path.parent.name
    assert isinstance(meta["description"], str) and 0 < len(meta["description"]) <= 1024
    # frontmatter survives adding rules
    out = apply_edit(docs, add("skill", "Rule."))
    assert frontmatter(out.skill.text) == meta
    assert out.skill.rules() == ["Rule."]


def test_new_skill_default_name(tmp_path: Path):
    docs = load_documents(tmp_path)
    assert docs.skill.path.parent.name == DEFAULT_SKILL_NAME
    assert frontmatter(docs.skill.text)["name"] == DEFAULT_SKILL_NAME


@pytest.mark.parametrize("name", ["a", "commit-rules", "x1-y2", "a" * 64])
def test_new_skill_text_uses_a_valid_name(name: str):
    assert frontmatter(new_skill_text(name))["name"] == name


@pytest.mark.parametrize("name", ["Commit", "a_b", "-a", "a-", "a--b", "a" * 65, ""])
def test_new_skill_text_never_writes_an_invalid_name(name: str):
    got = frontmatter(new_skill_text(name))["name"]
    assert got == DEFAULT_SKILL_NAME


def test_existing_skill_is_read_not_replaced(tmp_path: Path):
    path = tmp_path / ".claude" / "skills" / DEFAULT_SKILL_NAME / "SKILL.md"
    path.parent.mkdir(parents=True)
    raw = b"---\nname: skillopt-sleep-learned\ndescription: mine\n---\n\nHand body.\n"
    path.write_bytes(raw)
    docs = load_documents(tmp_path)
    assert docs.skill.original == raw and docs.skill.text == raw.decode()
    assert apply_edit(docs, add("skill", "R.")).skill.encoded().startswith(raw)


# -- paths ---------------------------------------------------------------------------------------


def test_document_paths_claude(tmp_path: Path):
    skill, memory = document_paths(tmp_path, "claude")
    assert memory == tmp_path / "CLAUDE.md"
    assert skill == tmp_path / ".claude" / "skills" / DEFAULT_SKILL_NAME / "SKILL.md"


def test_document_paths_codex(tmp_path: Path):
    skill, memory = document_paths(tmp_path, "codex", skill_name="my-rules")
    assert memory == tmp_path / "AGENTS.md"
    assert skill == tmp_path / ".agents" / "skills" / "my-rules" / "SKILL.md"


def test_document_paths_explicit_skill(tmp_path: Path):
    explicit = tmp_path / "elsewhere" / "SKILL.md"
    assert document_paths(tmp_path, "codex", skill_path=explicit) == (explicit, tmp_path / "AGENTS.md")
    assert document_paths(tmp_path, "claude", skill_path=explicit) == (explicit, tmp_path / "CLAUDE.md")


def test_document_paths_user_level(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    fake_home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(fake_home))
    monkeypatch.setenv("USERPROFILE", str(fake_home))
    project = tmp_path / "proj"
    skill, memory = document_paths(project, "claude", user_level_skill=True)
    assert skill == fake_home / ".claude" / "skills" / DEFAULT_SKILL_NAME / "SKILL.md"
    assert memory == project / "CLAUDE.md"
    skill, _ = document_paths(project, "codex", user_level_skill=True)
    assert skill == fake_home / ".agents" / "skills" / DEFAULT_SKILL_NAME / "SKILL.md"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"agent": "auto"}, "unknown agent"),
        ({"agent": "nobody"}, "unknown agent"),
        ({"agent": "claude", "skill_name": "Bad Name"}, "skill name"),
        ({"agent": "claude", "skill_name": "x" * 65}, "skill name"),
    ],
)
def test_document_paths_errors(tmp_path: Path, kwargs: dict, needle: str):
    with pytest.raises(UserError, match=needle) as info:
        document_paths(tmp_path, **kwargs)
    assert info.value.code == EXIT_CONFIG


# -- broken files --------------------------------------------------------------------------------


def test_non_utf8_file_is_a_user_error(tmp_path: Path):
    (tmp_path / "CLAUDE.md").write_bytes(b"# caf\xe9\n")
    with pytest.raises(UserError, match="not UTF-8") as info:
        load_documents(tmp_path)
    assert info.value.code == EXIT_CONFIG
    assert "CLAUDE.md" in info.value.message


def test_start_marker_without_end_is_a_user_error(tmp_path: Path):
    (tmp_path / "CLAUDE.md").write_text(f"# x\n{START}\n- dangling\n", encoding="utf-8")
    with pytest.raises(UserError, match="1 skillopt-sleep start and 0 end marker") as info:
        load_documents(tmp_path)  # refused before any work, naming the file
    assert info.value.code == EXIT_CONFIG and "CLAUDE.md" in info.value.message


def test_end_marker_only_before_start_is_a_user_error(tmp_path: Path):
    (tmp_path / "CLAUDE.md").write_text(f"{END}\n# x\n{START}\n- r\n", encoding="utf-8")
    with pytest.raises(UserError):
        load_documents(tmp_path).memory.rules()


# -- what the target sees ------------------------------------------------------------------------


def test_prompt_prefix_and_fingerprint(tmp_path: Path):
    docs = load_documents(project_with(tmp_path, HAND.encode()))
    prefix = docs.prompt_prefix()
    assert 'role="memory"' in prefix and 'role="skill"' in prefix
    assert prefix.index('role="memory"') < prefix.index('role="skill"')
    assert "make test" in prefix
    out = apply_edit(docs, add("skill", "Always sign off."))
    assert "Always sign off." in out.prompt_prefix()
    assert out.fingerprint() != docs.fingerprint()
    assert load_documents(tmp_path).fingerprint() == docs.fingerprint()


# ---------------------------------------------------------------- hostile documents

PROSE_WITH_MARKERS = (
    "# Project\n\nskillopt-sleep keeps its rules between `" + START + "` and `" + END + "`; "
    "do not edit inside.\n\n```\n" + START + "\n- an example rule\n" + END + "\n```\n\nMore prose.\n"
)


def test_markers_quoted_in_prose_or_a_fence_are_text(tmp_path: Path):
    (tmp_path / "CLAUDE.md").write_text(PROSE_WITH_MARKERS, encoding="utf-8")
    docs = load_documents(tmp_path)
    assert docs.memory.rules() == []
    new = apply_edit(docs, add("memory", "Always run the tests.")).memory.text
    assert new.startswith(PROSE_WITH_MARKERS)  # the prose and the fence are untouched
    assert new[len(PROSE_WITH_MARKERS) :].count(START) == 1
    assert load_documents_from_text(tmp_path, new).memory.rules() == ["Always run the tests."]


def load_documents_from_text(root: Path, text: str):
    (root / "CLAUDE.md").write_text(text, encoding="utf-8")
    return load_documents(root)


@pytest.mark.parametrize(
    "text",
    [
        f"{START}\n- a\n{END}\n{START}\n- b\n{END}\n",  # two blocks
        f"{END}\n- a\n{START}\n",  # end before start
        f"# x\n- a\n{END}\n",  # an end alone
    ],
)
def test_an_ambiguous_block_is_refused_before_any_work(tmp_path: Path, text: str):
    (tmp_path / "CLAUDE.md").write_text(text, encoding="utf-8")
    with pytest.raises(UserError, match="ambiguous") as info:
        load_documents(tmp_path)
    assert info.value.code == EXIT_CONFIG
    assert (tmp_path / "CLAUDE.md").read_text(encoding="utf-8") == text


def test_a_read_only_document_gets_no_edit(tmp_path: Path):
    path = tmp_path / "CLAUDE.md"
    path.write_text("# frozen\n", encoding="utf-8")
    path.chmod(0o444)
    try:
        docs = load_documents(tmp_path)
        assert docs.memory.read_only
        with pytest.raises(EditRefused, match="read-only"):
            apply_edit(docs, add("memory", "Always run the tests."))
        assert apply_edit(docs, add("skill", "Always run the tests.")).skill.rules() == ["Always run the tests."]
    finally:
        path.chmod(0o644)


# -- whole-document awareness --------------------------------------------------------------------

FORBID = "Do NOT look anything up, search, or use any tools."

SKILL = f"---\nname: lookup\ndescription: answers\n---\n# Lookup\n\n- {FORBID}\n- Answer briefly.\n"


def docs_for(tmp_path: Path, skill: str = SKILL, whole: bool = False, memory: str | None = None):
    root = tmp_path / "proj"
    path = root / ".claude" / "skills" / "lookup" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(skill.encode("utf-8"))
    if memory is not None:
        (root / "CLAUDE.md").write_text(memory, encoding="utf-8")
    return load_documents(root, "claude", "lookup", whole_skill=whole)


def test_a_rule_may_supersede_an_exact_hand_written_line(tmp_path: Path) -> None:
    docs = docs_for(tmp_path)
    edit = Edit("skill", "add", "Search the project docs before answering.", supersedes=f"  - {FORBID} ")
    after = apply_edit(docs, edit)
    rule = after.skill.rules()[-1]
    assert rule == f'Search the project docs before answering. (supersedes: "- {FORBID}")'
    assert split_supersedes(rule) == ("Search the project docs before answering.", f"- {FORBID}")
    assert FORBID in after.skill.text  # the line itself stays: only whole-skill editing removes it


@pytest.mark.parametrize(
    "wanted", ["Do NOT look anything up", "- Answer briefly", "name: lookup", "- never written here"]
)
def test_a_supersede_of_a_line_that_is_not_there_verbatim_is_refused(tmp_path: Path, wanted: str) -> None:
    with pytest.raises(EditRefused, match="not a hand-written line"):
        apply_edit(docs_for(tmp_path), Edit("skill", "add", "Search first.", supersedes=wanted))


def test_a_supersede_of_a_line_holding_a_secret_is_refused(tmp_path: Path) -> None:
    secret_line = "password = hunter2-Secret-Value-123"
    docs = docs_for(tmp_path, skill=SKILL + secret_line + "\n")
    with pytest.raises(EditRefused, match="secret"):
        apply_edit(docs, Edit("skill", "add", "Search first.", supersedes=secret_line))


def test_line_edits_need_the_skill_opted_in(tmp_path: Path) -> None:
    edit = Edit("skill", "replace_line", "Search the docs first.", anchor=f"- {FORBID}")
    with pytest.raises(EditRefused, match="whole-skill editing is off"):
        apply_edit(docs_for(tmp_path), edit)
    with pytest.raises(EditRefused, match="whole-skill editing is off"):
        apply_edit(
            docs_for(tmp_path / "m", memory=f"- {FORBID}\n", whole=True),
            Edit("memory", "delete_line", anchor=f"- {FORBID}"),
        )
    after = apply_edit(docs_for(tmp_path / "on", whole=True), edit)
    assert after.skill.text == SKILL.replace(FORBID, "Search the docs first.")
    assert after.skill.rules() == []


def test_delete_line_and_ambiguous_or_missing_anchors(tmp_path: Path) -> None:
    docs = docs_for(tmp_path, whole=True)
    after = apply_edit(docs, Edit("skill", "delete_line", anchor=FORBID.join(["- ", ""])))
    assert after.skill.text == SKILL.replace(f"- {FORBID}\n", "")
    twice = docs_for(tmp_path / "2", skill=SKILL + f"- {FORBID}\n", whole=True)
    with pytest.raises(EditRefused, match="ambiguous"):
        apply_edit(twice, Edit("skill", "delete_line", anchor=f"- {FORBID}"))
    with pytest.raises(EditRefused, match="not a hand-written line"):
        apply_edit(docs, Edit("skill", "delete_line", anchor="Do NOT"))


def test_a_read_only_skill_is_never_edited_even_when_opted_in(tmp_path: Path) -> None:
    docs = docs_for(tmp_path, whole=True)
    frozen = replace(docs, skill=replace(docs.skill, read_only=True))
    with pytest.raises(EditRefused, match="read-only"):
        apply_edit(frozen, Edit("skill", "delete_line", anchor=f"- {FORBID}"))


def test_a_replacement_line_that_would_hide_the_block_end_is_refused(tmp_path: Path) -> None:
    docs = apply_edit(docs_for(tmp_path, whole=True), Edit("skill", "add", "Answer briefly and cite."))
    with pytest.raises(EditRefused, match="managed block"):
        apply_edit(docs, Edit("skill", "replace_line", "~~~", anchor="# Lookup"))


def test_whole_skill_opt_in_by_flag_or_by_name() -> None:
    assert whole_skill_opted_in("lookup", ["lookup"]) and whole_skill_opted_in("lookup", [], flag=True)
    assert not whole_skill_opted_in("lookup", ["other"])


def test_a_skill_rule_may_supersede_a_line_of_the_memory_file(tmp_path: Path) -> None:
    docs = docs_for(tmp_path, memory="# Project\n\nNever run the test suite.\n")
    after = apply_edit(docs, Edit("skill", "add", "Run the tests.", supersedes="Never run the test suite."))
    assert after.skill.rules() == ['Run the tests. (supersedes: "Never run the test suite.")']


def test_no_line_of_a_secret_that_spans_lines_is_shown_or_quoted(tmp_path: Path) -> None:
    body = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0"
    key = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\n"
    docs = docs_for(tmp_path, skill=SKILL + key, whole=True)
    assert body not in optimizer_view(docs)
    assert body not in " ".join(optimizer_payload(docs)["skill"]["hand_written"])
    with pytest.raises(EditRefused, match="secret"):
        apply_edit(docs, Edit("skill", "add", "Search first.", supersedes=body))
    with pytest.raises(EditRefused, match="secret"):
        apply_edit(docs, Edit("skill", "delete_line", anchor=body))
