"""The hand-written part of a document: which lines a rule may supersede, and line edits that keep
every other byte (line endings, a byte-order mark, a missing final newline) as it was."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from skillopt_sleep.documents.managed_block import END, START, _find_block
from skillopt_sleep.documents.handwritten import (
    conflict_notes,
    delete_line,
    find_line,
    hand_written_lines,
    render_supersedes,
    replace_line,
    split_supersedes,
)
from skillopt_sleep.types import Edit


def lines_of(text: str) -> list[str]:
    return [line.content for line in hand_written_lines(text, _find_block(text), (START, END))]


SKILL = (
    "\ufeff---\r\nname: x\r\ndescription: d\r\n---\r\n# Search skill\r\n\r\n"
    "- Do NOT look anything up, search, or use any tools.\r\n"
    f"{START}\r\n## Learned\r\n\r\n- a rule\r\n{END}\r\nLast line, no newline: café"
)


def test_hand_written_lines_skip_frontmatter_block_markers_and_blanks() -> None:
    assert lines_of(SKILL) == [
        "# Search skill",
        "- Do NOT look anything up, search, or use any tools.",
        "Last line, no newline: café",
    ]


def test_find_line_is_exact_after_stripping() -> None:
    lines = hand_written_lines(SKILL, _find_block(SKILL), (START, END))
    assert find_line(lines, "  # Search skill ")
    assert not find_line(lines, "# Search")  # a fragment is not the line
    assert not find_line(lines, "- a rule")  # inside the managed block
    assert not find_line(lines, "name: x")  # frontmatter
    assert not find_line(lines, "")


def test_replace_line_keeps_list_marker_line_ending_and_the_rest() -> None:
    lines = hand_written_lines(SKILL, _find_block(SKILL), (START, END))
    target = find_line(lines, "- Do NOT look anything up, search, or use any tools.")[0]
    after = replace_line(SKILL, target, "Search the docs before answering.")
    assert after == SKILL.replace(
        "Do NOT look anything up, search, or use any tools.", "Search the docs before answering."
    )


def test_delete_line_removes_it_with_its_ending_and_keeps_a_missing_final_newline() -> None:
    lines = hand_written_lines(SKILL, _find_block(SKILL), (START, END))
    middle = find_line(lines, "- Do NOT look anything up, search, or use any tools.")[0]
    assert delete_line(SKILL, middle) == SKILL.replace("- Do NOT look anything up, search, or use any tools.\r\n", "")
    last = find_line(lines, "Last line, no newline: café")[0]
    assert delete_line(SKILL, last) == SKILL[: -len("\r\nLast line, no newline: café")]
    first = "\ufeffonly line"
    only = hand_written_lines(first, None, (START, END))[0]
    assert delete_line(first, only) == "\ufeff"  # the byte-order mark stays


def test_a_form_feed_or_line_separator_inside_a_line_is_text_not_a_break() -> None:
    text = "a\u2028b\nc\n"
    only = hand_written_lines(text, None, (START, END))[0]
    assert replace_line(text, only, "x") == "x\nc\n"


def test_supersedes_renders_and_parses_back() -> None:
    line = 'Never say "always" (really).'
    rendered = render_supersedes("When searching, use the search tool.", line)
    assert rendered == 'When searching, use the search tool. (supersedes: "Never say "always" (really).")'
    assert split_supersedes(rendered) == ("When searching, use the search tool.", line)
    assert split_supersedes("Use the tool.") == ("Use the tool.", None)


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=80))
def test_replace_then_the_same_line_back_is_the_identity(text: str) -> None:
    for line in hand_written_lines(text, None, (START, END)):
        body = text[line.start : line.end]
        stripped_prefix = line.prefix(text)
        rest = body[len(stripped_prefix) :]
        assert replace_line(text, line, rest) == text


def test_conflict_notes_name_the_overridden_line() -> None:
    notes = conflict_notes(
        [
            Edit("skill", "add", "Use the search tool.", supersedes="Do NOT use any tools."),
            Edit("skill", "replace_line", "Search first.", anchor="Do NOT use any tools."),
            Edit("skill", "delete_line", anchor="Do NOT use any tools."),
            Edit("memory", "add", "A plain rule."),
        ]
    )
    assert len(notes) == 3
    assert 'overrides your line "Do NOT use any tools."' in notes[0]
    assert "replaced" in notes[1] and "deleted" in notes[2]
