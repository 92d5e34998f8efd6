"""A rule against a hand-written line: does it contradict the line, and when it supersedes the
line, what of the line does it drop?

A rule that overrides a person's instruction must say so (``supersedes``), or a model reads two
contradictory instructions ("at most 60 characters" beside "write multiple paragraphs"). And a
superseding rule replaces the whole line where it applies, so it must restate what of the line it
does not mean to override: "Use the search tool" superseding "Do not search or use tools — just
reply directly and concisely" drops "directly and concisely" unless it says them again.

Read in plain words, for the kinds of instruction rules and people's lines most often collide on:

- **length**: a cap or "short / brief / concise" against "exhaustive / detailed / multiple
  paragraphs / at least N";
- **tools**: "use the search tool" against "do not search / use no tools / answer from memory";
- **inclusion**: ``always include "X"`` against a line that forbids X, and the reverse.

A line's clauses are split at sentence ends, semicolons and dashes. A clause the rule does not ask
against must be restated (most of its content words in the rule); of a clause it overrides, only the
words on how to answer that stand beside the overridden part ("directly", "concisely") must be.
"""

from __future__ import annotations

import re

_UNIT = r"(?:characters?|chars|words?|lines?|sentences?|bullets?|bullet points?|paragraphs?)"
SHORT_RE = re.compile(
    rf"\b(?:at most|under|no more than|fewer than|within|up to|maximum of)\s+\d+\s*{_UNIT}\b"
    r"|\b(?:short|shorter|brief|briefly|concise|concisely|terse|tersely|succinct|succinctly|one[- ]line|"
    r"a single line)\b",
    re.I,
)
LONG_RE = re.compile(
    rf"\b(?:exhaustive|exhaustively|detailed|in[- ]depth|thorough|thoroughly|completely|every angle|many scenarios|comprehensive|elaborate|at length|"
    rf"(?:multiple|several|many) paragraphs|at least\s+\d+\s*{_UNIT})\b",
    re.I,
)
NO_TOOL_RE = re.compile(
    r"\b(?:do not|don'?t|never|no|without)\b[^.;:—–]{0,80}\b(?:tools?|search(?:ing)?|look(?:ing)? (?:anything|things|it) up)\b|\bfrom memory\b|\bfrom (?:your |its |my )?own knowledge\b",
    re.I,
)
USE_TOOL_RE = re.compile(
    r"\b(?:use|call|run|invoke)\b[^.;]{0,40}?\b(?:tool|search)\b|\bsearch (?:first|before)\b|"
    r"\blook (?:it|things|this) up\b",
    re.I,
)
NEGATION_RE = re.compile(r"\b(?:never|don'?t|do not|avoid|without|no longer|must not|omit|drop|remove)\b", re.I)
# how to answer, said beside what a clause asks: kept unless the rule overrides that too
STYLE_RE = re.compile(
    r"\b(?:concise(?:ly)?|direct(?:ly)?|clear(?:ly)?|polite(?:ly)?|plain(?:ly)?|simple|simply|"
    r"friendly|formal(?:ly)?|neutral(?:ly)?|honest(?:ly)?|calm(?:ly)?|kind(?:ly)?)\b",
    re.I,
)
QUOTED_RE = re.compile(r'"([^"\n]{1,80})"|`([^`\n]{1,80})`')
_CLAUSES = re.compile(r"\s*(?:[.;!?](?:\s+|$)|\s[—–-]{1,2}\s|—|–)\s*")
_PARTS = re.compile(r",|\b(?:and|or|but)\b", re.I)
_WORD = re.compile(r"[a-z][a-z'-]+")
_FILLER = frozenset(
    """
a an the and or but so of to in on for with at by from into about as is are be it its this that these those
just only always never please also then you your any every all each do does not don't no must should
when asked
reply answer respond response responses answers write writing make keep give use
""".split()
)


def _stem(word: str) -> str:
    for suffix in ("ing", "ly", "es", "s", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _FILLER}


def _quoted(text: str) -> set[str]:
    return {(a or b).strip().lower() for a, b in QUOTED_RE.findall(text) if (a or b).strip()}


def _against(rule: str, line: str) -> list[tuple[str, re.Pattern[str]]]:
    """The families in which ``rule`` asks against ``line``, each with the pattern whose matches
    in the line are what the rule overrides. A heading is a title, not an instruction."""
    found: list[tuple[str, re.Pattern[str]]] = []
    if line.lstrip().startswith("#"):
        return found
    if SHORT_RE.search(rule) and LONG_RE.search(line):
        found.append(("length", LONG_RE))
    elif LONG_RE.search(rule) and SHORT_RE.search(line):
        found.append(("length", SHORT_RE))
    if USE_TOOL_RE.search(rule) and not NEGATION_RE.search(rule) and NO_TOOL_RE.search(line):
        found.append(("tools", NO_TOOL_RE))
    elif NO_TOOL_RE.search(rule) and USE_TOOL_RE.search(line) and not NEGATION_RE.search(line):
        found.append(("tools", USE_TOOL_RE))
    rule_negated = NEGATION_RE.search(rule) is not None
    for text in _quoted(rule):
        if text in line.lower() and (NEGATION_RE.search(line) is not None) != rule_negated:
            found.append((f'"{text}"', re.compile(re.escape(text), re.I)))
    return found


def contradiction(rule: str, line: str) -> str | None:
    """What ``rule`` asks against hand-written ``line`` ("length", "tools", ``"X"``), or None."""
    found = _against(rule, line)
    return found[0][0] if found else None


def dropped(rule: str, line: str) -> list[tuple[str, str]]:
    """The clauses of ``line`` that ``rule``, superseding it, neither overrides nor restates —
    what the person loses where the rule applies — each with what of it must be said again
    ("just reply directly and concisely"). Empty when the rule keeps it all."""
    said = _words(rule)
    out: list[tuple[str, str]] = []
    if line.lstrip().startswith("#"):
        return out
    for clause in (c.strip(" ,") for c in _CLAUSES.split(line)):
        if not clause:
            continue
        marked = clause
        for _, pattern in _against(rule, clause):
            marked = pattern.sub(" \x00 ", marked)
        lost = []
        for part in (" ".join(p.split()) for p in _PARTS.split(marked)):
            # beside an overridden part only the words on how to answer stand on their own
            # ("concisely from memory": "concisely"); any other part keeps all its words
            if "\x00" in part:
                wanted = {_stem(w.lower()) for w in STYLE_RE.findall(part)}
                keep = " ".join(STYLE_RE.findall(part))
            else:
                wanted, keep = _words(part), part
            if wanted and len(wanted & said) * 2 < len(wanted):
                lost.append(keep)
        if lost:
            out.append((clause, " and ".join(lost)))
    return out
