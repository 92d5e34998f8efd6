"""The README's sections, code blocks and commands, for the tests that run what it shows.

``section("### Install in Claude Code")`` is the text under that heading, up to the next heading of
the same or a higher level; ``commands(...)`` the command lines of its code blocks (blank lines and
``#`` comments dropped, a trailing ``# comment`` cut); ``all_commands()`` every command of every
shell code block in the README, with the heading it is under.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
CLONE_URL = "<repository URL>"  # the README's stand-in for this repository's address
SHELL_LANGS = ("", "sh", "bash", "shell", "console")

_FENCE = re.compile(r"^```([A-Za-z]*)\n(.*?)^```", re.S | re.M)
_HEADING = re.compile(r"^(#{1,6}) (.+)$", re.M)


def text() -> str:
    return README.read_text(encoding="utf-8")


def section(heading: str, source: str | None = None) -> str:
    """The text under ``heading`` (as written, with its ``#``s), up to the next heading of the same
    or a higher level; code blocks are skipped when looking for headings."""
    source = text() if source is None else source
    level = len(heading) - len(heading.lstrip("#"))
    headings = [
        (m.start(), len(m.group(1)), m.group(0))
        for m in _HEADING.finditer(source)
        if not _inside_code(source, m.start())
    ]
    starts = [(pos, lvl) for pos, lvl, line in headings if line == heading]
    assert len(starts) == 1, f"README.md has {len(starts)} heading(s) {heading!r}"
    start = starts[0][0]
    end = next((pos for pos, lvl, _ in headings if pos > start and lvl <= level), len(source))
    return source[start:end]


def _inside_code(source: str, pos: int) -> bool:
    return any(m.start() < pos < m.end() for m in _FENCE.finditer(source))


def code_blocks(source: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced code block in ``source``."""
    return [(m.group(1), m.group(2)) for m in _FENCE.finditer(source)]


def lines_of(body: str) -> list[str]:
    out = []
    for line in body.splitlines():
        line = _cut_comment(line).strip()
        if line:
            out.append(line)
    return out


def _cut_comment(line: str) -> str:
    """``cmd --flag x   # note`` -> ``cmd --flag x``: a ``#`` that starts a word outside quotes."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def commands(heading: str, block: int | None = None) -> list[str]:
    """The command lines of the shell code blocks under ``heading`` (all of them, or block ``block``)."""
    blocks = [body for lang, body in code_blocks(section(heading)) if lang in SHELL_LANGS]
    chosen = blocks if block is None else [blocks[block]]
    return [line for body in chosen for line in lines_of(body)]


def all_commands() -> list[tuple[str, str]]:
    """(heading, command line) for every line of every shell code block in the README."""
    source = text()
    out = []
    for m in _FENCE.finditer(source):
        if m.group(1) not in SHELL_LANGS:
            continue
        above = [h for h in _HEADING.finditer(source[: m.start()]) if not _inside_code(source, h.start())]
        heading = above[-1].group(0) if above else ""
        out.extend((heading, line) for line in lines_of(m.group(2)))
    return out


def clone_line() -> str:
    (line,) = commands("## Install", block=0)
    return line
