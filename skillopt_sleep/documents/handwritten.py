"""The hand-written part of a document: every line outside the managed block and the frontmatter.

A night never writes there unless the owner opted a skill in to whole-skill editing; what it may
do otherwise is *name* a hand-written line its rule overrides (``supersedes``), so the person and
the model reading the document both see which instruction wins. This module finds those lines and
edits one line in place, keeping every other byte (line endings, a byte-order mark, a missing final
newline) as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skillopt_sleep.types import Edit

BOM = "\ufeff"
MAX_LINE_CHARS = 300  # a superseded or replaced line longer than this is refused, not cut
SUPERSEDES_RE = re.compile(r'\s\(supersedes: "(.+)"\)$')
_LINES = re.compile(r"[^\n]*\n|[^\n]+$")  # lines split at \n only: other separators are text
_LIST_PREFIX = re.compile(r"^\s*(?:(?:[-*+]|\d+[.)])\s+)?")


@dataclass(frozen=True)
class Line:
    """One hand-written line: ``text[start:end]`` is its content, without its line ending."""

    start: int
    end: int
    content: str  # stripped

    def prefix(self, text: str) -> str:
        """Leading indentation and list marker, kept when the line is replaced."""
        match = _LIST_PREFIX.match(text[self.start : self.end])
        return match.group(0) if match else ""


def _frontmatter_end(lines: list[str]) -> int:
    """How many leading lines are YAML frontmatter (``---`` ... ``---``), 0 when there is none."""
    if not lines or lines[0].lstrip(BOM).rstrip("\r\n") != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").strip() == "---":
            return i + 1
    return 0


def hand_written_lines(text: str, block: tuple[int, int] | None, markers: tuple[str, str]) -> list[Line]:
    """The non-blank lines a person wrote: outside the frontmatter, the managed block (``block``
    is its inside, as ``documents`` finds it) and the marker lines themselves."""
    raw = _LINES.findall(text)
    skip = _frontmatter_end(raw)
    out: list[Line] = []
    pos = 0
    for i, line in enumerate(raw):
        start = pos + (1 if i == 0 and line.startswith(BOM) else 0)
        body = line.rstrip("\r\n")
        end = pos + len(body)
        pos += len(line)
        content = text[start:end].strip()
        if i < skip or not content or content in markers:
            continue
        if block is not None and block[0] <= start < block[1]:
            continue
        out.append(Line(start, end, content))
    return out


def find_line(lines: list[Line], wanted: str) -> list[Line]:
    """The hand-written lines whose stripped text is exactly ``wanted`` (stripped)."""
    key = (wanted or "").strip()
    return [line for line in lines if key and line.content == key]


SEPARATOR = '"; "'  # between the lines one rule overrides: (supersedes: "a"; "b")


def superseded_lines(supersedes: str) -> list[str]:
    """The hand-written lines an edit's ``supersedes`` names: one per line of it."""
    return [line.strip() for line in (supersedes or "").split("\n") if line.strip()]


def render_supersedes(rule: str, lines: str | list[str]) -> str:
    """The managed-block form of a rule that overrides hand-written lines (``supersedes``: one
    line, or several one per line): ``<rule> (supersedes: "a"; "b")``."""
    named = superseded_lines(lines) if isinstance(lines, str) else lines
    return f'{rule} (supersedes: "{SEPARATOR.join(named)}")'


def split_supersedes(rule: str) -> tuple[str, str | None]:
    """(the rule without its ``(supersedes: "...")`` suffix, the superseded lines one per line, or None)."""
    match = SUPERSEDES_RE.search(rule)
    if match is None:
        return rule, None
    return rule[: match.start()], "\n".join(match.group(1).split(SEPARATOR))


def replace_line(text: str, line: Line, new_content: str) -> str:
    """``text`` with one line's content replaced (its indentation, list marker and line ending kept)."""
    return text[: line.start] + line.prefix(text) + new_content + text[line.end :]


def delete_line(text: str, line: Line) -> str:
    """``text`` without one line. Its line ending goes with it; the last line of a file without a
    final newline takes the newline before it instead, so the file still ends the way it did."""
    after = line.end
    if text.startswith("\r\n", after):
        return text[: line.start] + text[after + 2 :]
    if text.startswith(("\n", "\r"), after):
        return text[: line.start] + text[after + 1 :]
    before = line.start
    if text.endswith("\r\n", 0, before):
        before -= 2
    elif before and text[before - 1] in "\r\n":
        before -= 1
    return text[:before] + text[after:]


def conflict_notes(edits: list[Edit]) -> list[str]:
    """One sentence per edit that overrides or changes what the person wrote, for the report,
    review and proposal to put before everything else (plain text; callers sanitize)."""
    notes = []
    for edit in edits:
        if edit.supersedes:
            lines = superseded_lines(edit.supersedes)
            named = " and ".join(f'"{line}"' for line in lines)
            notes.append(
                f'The rule "{edit.content}" ({edit.target}) overrides your line{"s" if len(lines) > 1 else ""} '
                f"{named} (the line{'s stay' if len(lines) > 1 else ' stays'}; the rule says it wins)."
            )
        elif edit.op == "replace_line":
            notes.append(
                f'Your line "{edit.anchor.strip()}" in the {edit.target} document is replaced '
                f'by "{edit.content}" (whole-skill editing).'
            )
        elif edit.op == "delete_line":
            notes.append(
                f'Your line "{edit.anchor.strip()}" in the {edit.target} document is deleted (whole-skill editing).'
            )
    return notes
