"""How the simulated model reads the documents it is shown: which lines are instructions, which
task each applies to, and whether a line asks for a check or against it.

Only the text a real model is shown is read: the documents (the managed block's markers included,
as a model sees them) and the task's own words (intent, context, output contract) — never a kind
label, a split or any other field the engine keeps.

Scope. A line ``When <scope>, <instruction>`` (the form ``scope.py`` renders) applies to a task only
when *more than half* of the scope's content words occur in the task's text. Content words are the
scope's words less function words and generic work words ("writing", "working", "task", ...),
compared after a light stemming ("messages" ~ "message", "writing" ~ "write"); a scope with no
content word applies everywhere. Every other line applies to every task.

Supersession. A learned rule ending ``(supersedes: "<line>")`` or ``(supersedes: "<a>"; "<b>")``
(the forms ``handwritten.py`` renders) overrides those hand-written lines wherever the rule
applies: they are not read there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from skillopt_sleep.checks.words import limit_of, readable_regex
from skillopt_sleep.documents.managed_block import END, START
from skillopt_sleep.documents.handwritten import SEPARATOR

NEGATION_RE = re.compile(r"\b(never|don'?t|do not|avoid|without|no longer|must not|omit|drop)\b", re.I)
CAP_RE = re.compile(
    r"\b(?:at most|under|no more than|within|maximum of|max(?:imum)?|fewer than|up to)\s+(\d+)\s*(?:characters|chars)\b",
    re.I,
)
FLOOR_RE = re.compile(r"\b(?:at least|minimum of|no fewer than|more than)\s+(\d+)\s*(?:characters|chars)\b", re.I)
ANY_TOOL_RE = re.compile(r"\bany tools?\b", re.I)
INCLUDE_RE = re.compile(r"\b(include|mention|add|append|end with|start with|put|write)\b", re.I)
QUOTED_RE = re.compile(r'"([^"]+)"')
SCOPED_RE = re.compile(r"^when(?:ever)?\s+([^,]{1,80}),\s+(\S.*)$", re.I | re.S)
SUPERSEDES_RE = re.compile(r'\s*\(supersedes: "(.+)"\)\s*$')
LIST_ITEM_RE = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
WORD_RE = re.compile(r"[a-z0-9]+")
GENERIC_WORDS = frozenset(
    """
a an the and or of to in on for with at by from into about as is are be being this that these those it its
your you our we any each every all some when whenever while if new one kind sort type
write writing written make making create creating draft drafting prepare preparing produce producing
work working do doing handle handling give giving task tasks job jobs request requests asked ask
""".split()
)


@dataclass(frozen=True)
class Directive:
    """One non-blank line of the documents, read as an instruction."""

    text: str  # the instruction, without its list marker, scope and supersedes suffix
    scope: str = ""  # the phrase after "When"; "" = every task
    learned: bool = False  # inside the managed block (a rule a night wrote)
    listed: bool = False  # a list item: counts as one rule for instruction overload
    supersedes: str = ""  # the hand-written lines this rule overrides, one per line, list markers stripped
    line: str = ""  # the whole line, list marker stripped (what a superseding rule quotes)


def parse_line(raw: str, learned: bool = False) -> Directive:
    stripped = raw.strip()
    body = LIST_ITEM_RE.sub("", stripped)
    text, supersedes = body, ""
    match = SUPERSEDES_RE.search(text)
    if match:  # the quoted line is not an instruction; only a learned rule overrides it
        text = text[: match.start()]
        parts = match.group(1).split(SEPARATOR)
        supersedes = "\n".join(LIST_ITEM_RE.sub("", p.strip()) for p in parts) if learned else ""
    scope = ""
    scoped = SCOPED_RE.match(text)
    if scoped:
        scope, text = scoped.group(1).strip(), scoped.group(2).strip()
    return Directive(text=text, scope=scope, learned=learned, listed=body != stripped, supersedes=supersedes, line=body)


def parse_documents(documents: str) -> list[Directive]:
    """Every non-blank line of the documents as a directive; marker lines are not instructions."""
    out: list[Directive] = []
    learned = False
    for raw in documents.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line == START:
            learned = True
            continue
        if line == END:
            learned = False
            continue
        out.append(parse_line(line, learned))
    return out


def _stem(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in WORD_RE.findall(text.lower()) if w not in GENERIC_WORDS}


def task_text(task: dict[str, Any]) -> str:
    """The task's own words as the model is shown them (``attempt_user``: intent, context, contract)."""
    return " ".join(str(task.get(k) or "") for k in ("intent", "context_excerpt", "system"))


def scope_applies(scope: str, text: str) -> bool:
    """Whether a ``When <scope>, ...`` line applies to a task whose text is ``text`` (module docstring)."""
    wanted = content_words(scope)
    if not wanted:
        return True
    return 2 * len(wanted & content_words(text)) > len(wanted)


def applicable(directives: list[Directive], text: str | None) -> list[Directive]:
    """The directives that apply to a task (all of them when ``text`` is None), hand-written lines
    superseded by an applicable learned rule left out."""
    live = [d for d in directives if text is None or not d.scope or scope_applies(d.scope, text)]
    overridden = {line for d in live if d.learned and d.supersedes for line in d.supersedes.split("\n")}
    return [d for d in live if d.learned or d.line not in overridden]


def rule_count(directives: list[Directive]) -> int:
    """How many rules the documents hold, for instruction overload: their list items."""
    return sum(d.listed for d in directives)


def _mentions(directive: str, needle: str) -> bool:
    return needle.lower() in directive.lower()


def stance(check: dict[str, Any], directive: str) -> bool | None:
    """True when the line asks for what the check wants, False when it asks against it, None when it
    does not speak to the check."""
    op = check["op"]
    arg: Any = check.get("arg")  # its type depends on op
    negated = NEGATION_RE.search(directive) is not None
    d = directive
    if op == "contains" and _mentions(d, arg):
        return not negated
    if op == "not_contains" and _mentions(d, arg):
        return negated
    if (
        op == "section_present"
        and _mentions(d, arg)
        and (re.search(r"section|heading", d, re.I) or re.search(rf"#+ *{re.escape(arg)}", d, re.I))
    ):
        return not negated  # "a section headed X", or the heading itself quoted ("## X")
    if op == "section_contains" and _mentions(d, arg["section"]) and _mentions(d, arg["text"]):
        return not negated
    if op == "regex":
        return _pattern_stance(arg, d)
    if op == "tool_called" and re.search(r"\b(tool|use|run|call)\b", d, re.I):
        if _mentions(d, arg):
            return not negated
        if negated and ANY_TOOL_RE.search(d):  # "do not use any tools" forbids this one too
            return False
    if op == "max_chars" and any(int(m.group(1)) <= arg for m in CAP_RE.finditer(d)):
        return True
    if op == "min_chars":
        if any(int(m.group(1)) >= arg for m in FLOOR_RE.finditer(d)):
            return True
        if any(int(m.group(1)) < arg for m in CAP_RE.finditer(d)):
            return False
    return None


def _pattern_stance(pattern: str, directive: str) -> bool | None:
    """A line speaks to a pattern check when it quotes the pattern, or says in plain words what
    the pattern asks (``check_words``): its text (``Refs: ACME-<n>``), or a limit no looser
    than the check's ("at most 40 words" for a 50-word check)."""
    if pattern in directive:
        return True
    limit = limit_of(pattern)
    if limit:
        unit, n = limit
        noun = {
            "first_line_chars": r"char(?:acter)?s?",
            "lines": r"lines?",
            "words": r"words?",
            "bullets": r"bullet(?: point)?s?",
        }[unit]
        wanted = re.compile(r"\b(?:at most|under|no more than|within|up to|fewer than)\s+(\d+)\s+" + noun, re.I)
        if unit == "first_line_chars" and not re.search(r"\b(first line|title|subject)\b", directive, re.I):
            return None
        return True if any(int(m.group(1)) <= n for m in wanted.finditer(directive)) else None
    text = readable_regex(pattern)
    if text and len(text) >= 3 and text.lower() in directive.lower():
        return not NEGATION_RE.search(directive)
    return None


def stances(check: dict[str, Any], directives: list[Directive]) -> list[tuple[bool, Directive]]:
    """Each directive that speaks to the check, with its stance."""
    out = []
    for d in directives:
        s = stance(check, d.text)
        if s is not None:
            out.append((s, d))
    return out


def summarize(found: list[tuple[bool, Directive]]) -> str:
    seen = {s for s, _ in found}
    if seen == {True, False}:
        return "mixed"
    return "covered" if True in seen else "conflict" if False in seen else "none"


def coverage(check: dict[str, Any], directives: list[str]) -> str:
    """How document lines speak to one check: "covered", "conflict", "mixed" or "none"."""
    return summarize(stances(check, [parse_line(d) for d in directives]))


def cap_from(directives: list[Directive]) -> int | None:
    caps = [int(m.group(1)) for d in directives for m in CAP_RE.finditer(d.text)]
    return min(caps) if caps else None


def include_asks(directive: Directive) -> list[str]:
    """The quoted strings an "always include / mention ..." line asks to put in every response."""
    if NEGATION_RE.search(directive.text) or not INCLUDE_RE.search(directive.text):
        return []
    return [q for q in QUOTED_RE.findall(directive.text) if q.strip()]
