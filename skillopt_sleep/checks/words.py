"""What a check asks, in the words a person would use, and rules that quote a check's syntax.

An optimizer shown ``must match the pattern /[Cc]onfidence\\s*[:=]/`` writes the pattern into its
rule ("Make the response match the pattern [Cc]onfidence\\s*[:=]"), which reads like a check
definition, not an instruction. Shown ``must have a line like "Confidence:"`` it writes what a
person would ("End with a line `Confidence: <level>`"). So:

- ``limit_check`` builds the regexes for limits the judges have no op for (lines, words, bullets,
  a first line's length), and ``readable_regex`` reads them back as "at most 50 words";
- ``readable_regex`` turns a simple pattern — literals, case pairs such as ``[Cc]``, a small set of
  punctuation, whitespace, digits, anchors — into the text it asks for, a number shown as
  ``<n>`` (``Refs: ACME-\\d+`` -> ``Refs: ACME-<n>``) and a few literal alternatives joined by "/";
  anything more is left as a pattern;
- ``quoted_syntax`` finds regex syntax or a check's internal form in a rule's text, so a rule
  that quotes it can be reworded once and refused when it still does.
"""

from __future__ import annotations

import re
import sys
from typing import Any

_BULLET = r"[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]"
_NOT_BULLET_LINE = rf"(?!{_BULLET})[^\n]*(?:\n|\Z)"
LIMIT_UNITS = ("first_line_chars", "lines", "words", "bullets")
_LIMIT_NOUNS = {"first_line_chars": "character", "lines": "line", "words": "word", "bullets": "bullet point"}


def limit_check(unit: str, maximum: int) -> dict[str, Any]:
    """The check for "at most ``maximum`` ``unit``" where the judges have no op of their own.

    ``first_line_chars``: the first line is 1..n characters; ``lines``: at most n lines (blank
    lines at the ends ignored); ``words``: at most n whitespace-separated words; ``bullets``: at
    most n list items (``-``, ``*``, ``+``, ``•`` or ``1.`` / ``1)`` at the start of a line).
    """
    n = int(maximum)
    if n < 1 or unit not in LIMIT_UNITS:
        raise ValueError(f"no limit check for {n} {unit}")
    if unit == "first_line_chars":
        return {"op": "regex", "arg": rf"\A[^\n]{{1,{n}}}(?:\n|\Z)"}
    # Runs of blank lines / whitespace are matched whole ("(?=(x*))\1" cannot backtrack), so a
    # response of many blank lines or spaces is judged in linear time.
    if unit == "lines":
        return {"op": "regex", "arg": rf"\A(?=((?:[^\S\n]*\n)*))\1(?:[^\n]*\n){{0,{n - 1}}}[^\n]*(?:\n[^\S\n]*)*\Z"}
    if unit == "words":
        return {"op": "regex", "arg": rf"\A(?=(\s*))\1(?:\S+(?=(\s+))\2){{0,{n - 1}}}\S*(?=(\s*))\3\Z"}
    return {
        "op": "regex",
        "arg": rf"\A(?:{_NOT_BULLET_LINE})*(?:{_BULLET}[^\n]*(?:\n|\Z)(?:{_NOT_BULLET_LINE})*){{0,{n}}}\Z",
    }


def limit_of(pattern: str) -> tuple[str, int] | None:
    """``("words", 50)`` for the pattern ``limit_check("words", 50)`` built, else None."""
    for found in re.findall(r"\{[01],(\d{1,6})\}", pattern):
        for n in (int(found), int(found) + 1):
            for unit in LIMIT_UNITS:
                if n >= 1 and limit_check(unit, n)["arg"] == pattern:
                    return unit, n
    return None


def limit_words(unit: str, n: int) -> str:
    """ "at most 50 words", "a first line of at most 60 characters"."""
    noun = _LIMIT_NOUNS[unit] + ("" if n == 1 else "s")
    return f"a first line of at most {n} {noun}" if unit == "first_line_chars" else f"at most {n} {noun}"


def _parser() -> Any:
    if sys.version_info >= (3, 11):
        import re._parser as sre_parse
    else:  # pragma: no cover - Python 3.10
        import sre_parse
    return sre_parse


_PUNCTUATION = frozenset(":=-_#/.,;!@*+()[]{}<>|\"'`~&%$^?")


def _class_text(items: list[tuple[Any, Any]]) -> str | None:
    """A character class as the one character a person would write: ``[Cc]`` -> "C", ``[:=]`` ->
    ":", ``\\d`` -> "<n>"; None for anything wider."""
    literals = [chr(av) for op, av in items if str(op) == "LITERAL"]
    if len(literals) == len(items) and literals:
        if len(literals) == 2 and literals[0].lower() == literals[1].lower() and literals[0] != literals[1]:
            return literals[0].upper()
        if len(literals) <= 3 and all(ch in _PUNCTUATION for ch in literals):
            return literals[0]
        return None
    if len(items) == 1 and str(items[0][0]) == "CATEGORY":
        name = str(items[0][1])
        if name.endswith("DIGIT") and "NOT" not in name:
            return "<n>"
        if name.endswith("SPACE") and "NOT" not in name:
            return " "
    if items and all(str(op) == "RANGE" for op, _ in items):
        if all(chr(lo) == "0" and chr(hi) == "9" for _, (lo, hi) in items):
            return "<n>"
    return None


def _text(items: Any) -> str | None:
    items = list(items)
    if len(items) > 1 and str(items[-1][0]) == "BRANCH" and all(str(op) == "LITERAL" for op, _ in items[:-1]):
        # the parser moved the alternatives' common prefix out ("feat|fix" -> "f" + "eat|ix"): put it back
        prefix = "".join(chr(av) for _, av in items[:-1])
        alternatives = [[("LITERAL", ord(ch)) for ch in prefix] + list(alt) for alt in items[-1][1][1]]
        items = [(items[-1][0], (None, alternatives))]
    out: list[str] = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(av))
        elif name == "AT":
            continue
        elif name == "IN":
            piece = _class_text(list(av))
            if piece is None:
                return None
            out.append(piece)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, _hi, sub = av
            piece = _text(sub)
            if piece is None:
                return None
            if piece == " ":
                out.append(" " if lo >= 1 else "")
            elif piece == "<n>":
                out.append(piece)
            else:
                return None
        elif name == "SUBPATTERN":
            piece = _text(av[-1])
            if piece is None:
                return None
            out.append(piece)
        elif name == "BRANCH":  # a few literal alternatives: "investigating/identified/resolved"
            pieces = [_text(alt) for alt in av[1]]
            if any(p is None or not p.strip() or "/" in p for p in pieces) or len(pieces) > 6:
                return None
            out.append("/".join(p for p in pieces if p is not None))
        else:
            return None
    return "".join(out)


def readable_regex(pattern: str) -> str | None:
    """The pattern as a person would state it ("at most 50 words", ``Refs: ACME-<n>``, ``feat/fix:
    …`` for ``^(feat|fix): \\S``), or None when it is more than a few literals, case pairs,
    punctuation, spaces and numbers, and some text at its end."""
    limit = limit_of(pattern)
    if limit:
        return limit_words(*limit)
    body = re.sub(r"^\(\?[aiLmsux]+\)", "", pattern)
    try:
        items = list(_parser().parse(body))
    except Exception:  # a pattern the parser refuses is not readable
        return None
    # a pattern that ends in "some text" (``\S``, ``\w+``, ``.+``): what it asks for, then "…"
    rest = " …" if len(items) > 1 and _any_text(*items[-1]) else ""
    text = _text(items[:-1] if rest else items)
    if text is None:
        return None
    text = re.sub(r"(<n>)+", "<n>", " ".join((text + rest).split()))
    return text if re.search(r"[A-Za-z0-9]", text.replace("<n>", "")) else None


def _any_text(op: Any, av: Any) -> bool:
    """Whether a parsed pattern item stands for some text of any kind: one non-space, word or any
    character (``\\S``, ``\\w``, ``.``), or a run of them."""
    name = str(op)
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        lo, _hi, sub = av
        return lo >= 1 and len(sub) == 1 and _any_text(*sub[0])
    if name == "ANY":
        return True
    if name == "IN" and len(av) == 1 and str(av[0][0]) == "CATEGORY":
        return str(av[0][1]).endswith(("NOT_SPACE", "WORD")) and not str(av[0][1]).endswith("NOT_WORD")
    return False


# Regex syntax a rule has no reason to quote: class escapes, group constructs, case pairs, wildcards
# and counted repeats, anchors; and a check's internal names.
_SYNTAX = [
    (re.compile(r"\\[sSdDwWbBAZz](?![A-Za-z])|\\[sdw][*+?]"), "a regex class escape"),
    (re.compile(r"\(\?(?:[:=!]|<[=!])"), "a regex group"),
    (re.compile(r"\([^()\s|]{1,40}(?:\|[^()\s|]{1,40})+\)"), "a regex alternation"),
    (re.compile(r"\\[\[\]().*+?{}|^$/]"), "a regex escape"),
    (re.compile(r"(?<![.\w])\.[*+](?![\w.])|\[\^?[^\]\s]{1,12}\][*+?]"), "a regex wildcard"),
    (re.compile(r"[\])]\{\d{1,4}(?:,\d{0,4})?\}"), "a regex repeat"),
    (
        re.compile(
            r"\b(?:section_present|section_contains|not_contains|max_chars|min_chars|tool_called|"
            r"no_refusal)\b|\"op\"\s*:"
        ),
        "a check's internal name",
    ),
]
_CASE_PAIR = re.compile(r"\[([A-Za-z])([A-Za-z])\]")


def quoted_syntax(rule: str) -> str | None:
    """What in ``rule`` is regex syntax or a check's internal form (a short description), or None
    when it reads as plain words."""
    for pattern, what in _SYNTAX:
        if pattern.search(rule):
            return what
    if any(a != b and a.lower() == b.lower() for a, b in _CASE_PAIR.findall(rule)):
        return "a regex character class"
    return None
