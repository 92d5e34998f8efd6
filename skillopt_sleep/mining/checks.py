"""Rule checks implied by a user's complaints about a reply, in the words people really use.

Precision over recall: a phrase the judges could not check, or whose target is unclear, gives no
check. What is read, sentence by sentence:

- quoted values (``"…"``, `` `…` ``, ``'…'``) after a cue: ``you forgot "Signed-off-by:"`` →
  contains, ``never put "WIP" in it`` → not_contains, ``"Rollout plan" section`` → section_present;
- ticket numbers, generalised to a pattern: ``Refs: ACME-123`` → regex ``Refs: ACME-\\d+``,
  ``Closes #12`` → ``Closes #\\d+`` (a bare ``KEY-123`` only when the message speaks of a ticket);
- headings named with or without ``#``: ``the ## Testing section``, ``the Known issues heading``;
- negations of literal-looking text: ``no TODOs``, ``don't include WIP``, ``without @ts-ignore``,
  ``no --force``, ``no print() calls`` (→ ``print(``: any call of it);
  plain words ("no emojis", "don't mention the migration") are not literal and give nothing;
- reminders of literal-looking text: ``you forgot the Signed-off-by trailer``, and the idiom a
  person names to use: ``use pytest.mark.parametrize for the cases``, ``use COPY --chown`` →
  contains (a file name to use, ``use NOTES.md``, says where to write, not what: nothing);
  ``use "A" instead of "B"`` → contains A, not_contains B;
- numbers with units the judges can check: characters (``max_chars`` / ``min_chars``, or the first
  line when the sentence names a subject / title / first line), words, lines and bullets (as
  regexes, see ``limit_check``). Sentences and paragraphs are not checkable and give nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from skillopt_sleep.checks.words import limit_check

Check = dict[str, Any]
SAID_CHARS = 200  # of a complaint kept beside the check it states

# Single quotes only when they are not apostrophes: "Don't add 'WIP', it's noise" quotes WIP alone.
QUOTED_RE = re.compile(
    r'"([^"\n]{1,80})"|“([^”\n]{1,80})”|`([^`\n]{1,80})`|(?<![A-Za-z])\'([^\'\n]{2,80})\'(?![A-Za-z])'
)
# Positive cues that contain a negation word: "don't forget X", "there's no X line" (X is missing).
REMINDER_RE = re.compile(r"\b(?:don'?t|do not|never) forget\b|\bremember\b|\bthere(?:'s| is) no\b|\bhas no\b", re.I)
NEGATIVE_CUE_RE = re.compile(
    r"\b(don'?t|do not|never|no more|stop|remove|without|drop|avoid|get rid of|not use|instead of|rather than|no)\b(?!,)",
    re.I,
)
USE_CUE = r"use|prefer|switch to|stick to|stick with|go with"
POSITIVE_CUE_RE = re.compile(
    r"\b(forgot|forget|missing|missed|left out|dropped|include|add|needs?|should (?:have|include|contain)|"
    r"always|where(?:'s| is)|lacks?|put|contain|" + USE_CUE + r")\b",
    re.I,
)
CLAUSE_SPLIT_RE = re.compile(r"[,;]|\b(?:and|but|also|then|plus)\b", re.I)
SECTION_WORD_RE = re.compile(r"^\s*(?:section|heading|header)\b", re.I)
SECTION_CUE_RE = re.compile(
    r"\b(forgot|forget|missing|missed|left out|dropped|where(?:'s| is)|needs?|add|include|always|remember|"
    r"there(?:'s| is) no|should|must|put|lacks?|section|heading)\b",
    re.I,
)
SECTION_NEGATION_RE = re.compile(
    r"\b(drop|remove|delete|get rid of|without|(?:don'?t|do not|never|stop) (?:add|include|put|us)\w*)\b", re.I
)

# -- tickets ------------------------------------------------------------------------------------

ISSUE_WORDS = (
    "close",
    "closes",
    "closed",
    "fix",
    "fixes",
    "fixed",
    "resolve",
    "resolves",
    "resolved",
    "ref",
    "refs",
    "references",
    "see",
    "related",
    "issue",
    "ticket",
    "part-of",
)
TICKET_RE = re.compile(
    r"(?:(?P<label>\b[A-Za-z][A-Za-z-]{1,24}:[ \t]?)|(?P<word>\b(?:" + "|".join(ISSUE_WORDS) + r")[ \t]))?"
    r"(?P<key>(?<![\w#-])[A-Z][A-Z0-9]{1,9}-|#)\d{1,7}\b",
    re.I,
)
TICKET_CONTEXT_RE = re.compile(r"\b(ticket|issue|jira|key|ref|refs|reference|trailer|footer|link|bug|story|id)\b", re.I)

# -- limits -------------------------------------------------------------------------------------

NUMBER_WORDS = {
    "one": 1,
    "a single": 1,
    "single": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_NUM = r"(?P<n>\d{1,5}|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")"
_UNIT = r"[ \t]*-?[ \t]*(?P<unit>characters?|chars?|words?|lines?|bullet[ \t]+points?|bullets?)\b"
CAP_BEFORE_RE = re.compile(
    r"(?:\b(?:under|below|at most|no(?:t)? more than|no(?:t)? longer than|max(?:imum)?(?: of)?|within|less than|"
    r"(?:is|are|was|were|it's|it is|goes|runs)[ \t]+(?:longer than|more than|over|above)|"
    r"fewer than|shorter than|up to|over|exceeds?|fit (?:in|into|within)|"
    r"(?:keep|limit|cap|trim|cut)[ \t]+(?:it|them|this|that|the[ \t]+\w+(?:[ \t]+line)?)[ \t]+(?:to|under|below|at))"
    r"|≤|<=?)[ \t]*" + _NUM + _UNIT,
    re.I,
)
CAP_AFTER_RE = re.compile(
    r"\b" + _NUM + _UNIT + r"[ \t]*(?:max(?:imum)?\b|tops\b|limit\b|or (?:fewer|less)\b|at most\b|only\b)", re.I
)
FLOOR_RE = re.compile(
    r"\b(?:at least|minimum of|min(?:imum)?|no fewer than|no less than|(?<!no )longer than)[ \t]*" + _NUM + _UNIT,
    re.I,
)
FIRST_LINE_RE = re.compile(r"\b(subject|title|first line|summary line|headline|header line)\b", re.I)

# -- literal-looking text -----------------------------------------------------------------------

# Text a judge can look for verbatim: [skip ci], Co-authored-by, console.log, @ts-ignore, TODO(s).
_PUNCTUATED = r"@?[A-Za-z][\w]*(?:[-.:][\w]+)+:?|[:.][A-Za-z][\w-]+"  # :latest, .env: a leading mark
_BRACKETED = r"\[[^\]\n]{1,30}\]"
_FLAG = r"(?:[A-Z][A-Z0-9_]*[ \t]+)?--[a-z][\w-]*"  # --force-with-lease, COPY --chown
_CALL = r"[A-Za-z_][\w.]*\((?:\))?"  # print( or print(): any call of it
_CAPS = r"[A-Z][A-Z0-9_]{1,}(?:[ \t]+[A-Z][A-Z0-9_]{1,})*(?:s\b)?"
_FILLER = r"(?:(?:the|a|an|any|those|these|all|your|my|our|its|that|this|more|of|so|many|proper|usual)[ \t]+){0,2}"
_CONTENT_VERB = (
    r"(?:use|using|include|including|add|adding|put|putting|write|writing|leave|leaving|mention|"
    r"hard-?code|hard-?coding|commit|committing|ship|shipping|pin|pinning|"
    r"mentioning|output|print|emit|sign|end)"
)
NEGATED_LITERAL_RE = re.compile(
    r"(?i:\b(?:(?:no|without|avoid|drop|remove|get rid of)(?![,.!?])[ \t]+"
    r"|(?:don'?t|do not|never|stop)[ \t]+"
    + _CONTENT_VERB
    + r"[ \t]+)"
    + _FILLER
    + r")"
    + r"(?P<lit>"
    + _BRACKETED
    + "|"
    + _FLAG
    + "|"
    + _CALL
    + "|"
    + _PUNCTUATED
    + "|"
    + _CAPS
    + r")(?![\w-])",
)
REMINDED_LITERAL_RE = re.compile(
    r"(?i:\b(?P<cue>forgot|forget|missing|missed|left out|dropped|needs?|add|include|always (?:add|include|use|put)|"
    r"should (?:have|include|contain|end with)|where(?:'s| is)|"
    + USE_CUE
    + r")[ \t]+"
    + _FILLER
    + r")"
    + r"(?P<lit>"
    + _BRACKETED
    + "|"
    + _FLAG
    + "|"
    + _CALL
    + "|"
    + _PUNCTUATED
    + r"|[A-Z][A-Z0-9_]{1,}(?:[ \t]+[A-Z][A-Z0-9_]{1,})+)(?![\w-])",
)

# -- headings -----------------------------------------------------------------------------------

_TITLE_STOP = re.compile(
    r"\s+(?:section|heading|header|at|in|is|are|was|and|please|again|like|to|for|every|should|must|needs?|"
    r"on|with|too|here|there|as)\b.*$|\s*[?!.,;:].*$",
    re.I | re.S,
)
HASH_HEADING_RE = re.compile(r"(?<![\w#])#{1,6}[ \t]*(?P<title>[A-Za-z][^\n#\"`“”]{0,60})")
NAMED_HEADING_RE = re.compile(
    r"(?:\b(?:[Tt]he|[Aa]n?|[Nn]o|[Yy]our|[Oo]ur|[Ii]ts|[Tt]hat)[ \t]+|^[ \t]*)"
    r"(?P<title>[A-Z][\w&/-]*(?:[ \t]+[a-z][\w&/-]*){0,3}?)[ \t]+(?:section|heading)\b"
)
CALLED_HEADING_RE = re.compile(
    r"\b(?:section|heading)\s+(?:called|named|headed|titled)\s+[\"“`']?#*\s*([\w /&-]{2,40}?)[\"”`']?(?=[\s.,;!?]|$)"
)


def _escape(text: str) -> str:
    """Escape only what is special in a regex, so ``Refs: ACME-`` stays readable."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


def _number(text: str) -> int:
    text = re.sub(r"\s+", " ", text.lower())
    return int(text) if text.isdigit() else NUMBER_WORDS[text]


def _unit(text: str) -> str:
    text = text.lower()
    if text.startswith("char"):
        return "chars"
    if text.startswith("word"):
        return "words"
    if text.startswith("line"):
        return "lines"
    return "bullets"


def _limit_checks(sentence: str, taken: list[tuple[int, int]]) -> list[Check]:
    out: list[Check] = []
    for pattern, is_cap in ((CAP_BEFORE_RE, True), (CAP_AFTER_RE, True), (FLOOR_RE, False)):
        for m in pattern.finditer(sentence):
            if _overlaps(m.span(), taken):
                continue
            taken.append(m.span())
            n, unit = _number(m.group("n")), _unit(m.group("unit"))
            if n < 1:
                continue
            if not is_cap:
                if unit == "chars":
                    out.append({"op": "min_chars", "arg": n})
            elif unit == "chars" and FIRST_LINE_RE.search(sentence[: m.start("n")]):
                out.append(limit_check("first_line_chars", n))
            elif unit == "chars":
                out.append({"op": "max_chars", "arg": n})
            else:
                out.append(limit_check(unit, n))
    return out


def _overlaps(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in taken)


def _ticket_pattern(m: re.Match[str]) -> str | None:
    """``Refs: ACME-123`` -> ``Refs: ACME-\\d+``; None when the match is not clearly a ticket."""
    prefix = m.group("label") or m.group("word") or ""
    key = m.group("key")
    if key == "#" and not prefix:
        return None
    if key != "#" and not key[:-1].isupper():
        return None
    return _escape(prefix + key) + r"\d+"


def _ticket_checks(sentence: str, message: str, taken: list[tuple[int, int]]) -> list[Check]:
    out: list[Check] = []
    for m in TICKET_RE.finditer(sentence):
        pattern = _ticket_pattern(m)
        if pattern is None:
            continue
        if not (m.group("label") or m.group("word")) and not TICKET_CONTEXT_RE.search(message):
            continue  # UTF-8, SHA-256, ISO-8601: a bare KEY-123 counts only where a ticket is meant
        taken.append(m.span())
        if NEGATIVE_CUE_RE.search(sentence[: m.start()]) and not POSITIVE_CUE_RE.search(sentence[: m.start()]):
            continue
        out.append({"op": "regex", "arg": pattern})
    return out


def _quoted_checks(sentence: str, taken: list[tuple[int, int]]) -> list[Check]:
    out: list[Check] = []
    for m in QUOTED_RE.finditer(sentence):
        taken.append(m.span())
        value = next(g for g in m.groups() if g is not None).strip()
        before, after = _clause_before(sentence[: m.start()]), sentence[m.end() :]
        if value.startswith("#") or SECTION_WORD_RE.match(after):
            title = value.lstrip("#").strip()
            if title and not SECTION_NEGATION_RE.search(before):
                out.append({"op": "section_present", "arg": title})
            continue
        if not value:
            continue
        ticket = TICKET_RE.fullmatch(value)
        if REMINDER_RE.search(before):
            polarity = "contains"
        elif NEGATIVE_CUE_RE.search(before):
            polarity = "not_contains"
        elif POSITIVE_CUE_RE.search(before):
            polarity = "contains"
        else:
            continue
        pattern = _ticket_pattern(ticket) if ticket and polarity == "contains" else None
        out.append({"op": "regex", "arg": pattern} if pattern else {"op": polarity, "arg": value})
    return out


def _clause_before(before: str) -> str:
    """The words before a value in its own clause ("never put X in it, and it needs *Y*" reads
    "and it needs" for Y), or the whole sentence before it when that clause holds no cue
    ("never put "WIP", "TODO" in it")."""
    clause = CLAUSE_SPLIT_RE.split(before)[-1]
    cues = (REMINDER_RE, NEGATIVE_CUE_RE, POSITIVE_CUE_RE, SECTION_NEGATION_RE)
    return clause if any(cue.search(clause) for cue in cues) else before


def _heading_title(raw: str) -> str:
    title = _TITLE_STOP.sub("", raw.strip())
    words = title.split()
    return " ".join(words[:5]) if words and len(words) <= 5 else ""


def _section_checks(sentence: str, taken: list[tuple[int, int]]) -> list[Check]:
    out: list[Check] = []
    cue = SECTION_CUE_RE.search(sentence)
    for pattern in (HASH_HEADING_RE, NAMED_HEADING_RE, CALLED_HEADING_RE):
        for m in pattern.finditer(sentence):
            title = _heading_title(m.group(1))
            span = (m.start(), m.start(1) + len(title))
            if not title or _overlaps(span, taken):
                continue
            taken.append(span)
            if cue and not SECTION_NEGATION_RE.search(_clause_before(sentence[: m.start()])):
                out.append({"op": "section_present", "arg": title})
    return out


# Before a "use X": what was used instead ("instead of using X", "not use X", "didn't use X").
NOT_USED_RE = re.compile(r"(?:\b(?:instead of|rather than|not|no)|n't)[ \t]+(?:\w+[ \t]+)?$", re.I)
CODE_MARK_RE = re.compile(r"[.@(]|--|__")  # what makes a name to use code: logger.exception, @fixture, --chown
FILE_NAME_RE = re.compile(r"[\w-]+(?:\.[\w-]+)*\.(?:md|py|txt|json|toml|ya?ml|lock|cfg|ini|sh|js|ts|sql|env)", re.I)


def _literal_checks(sentence: str, taken: list[tuple[int, int]]) -> list[Check]:
    out: list[Check] = []
    for pattern, op in ((NEGATED_LITERAL_RE, "not_contains"), (REMINDED_LITERAL_RE, "contains")):
        for m in pattern.finditer(sentence):
            span = m.span("lit")
            if _overlaps(span, taken):
                continue
            taken.append(span)
            value = m.group("lit")
            if op == "contains" and re.fullmatch(USE_CUE, m.group("cue"), re.I):
                if NOT_USED_RE.search(sentence[: m.start()]) or FILE_NAME_RE.fullmatch(value):
                    continue  # the idiom replaced, or where to write rather than what
                if not CODE_MARK_RE.search(value):
                    continue  # "use UTF-8": a setting, not text the reply would show
            if re.fullmatch(_CAPS, value) and value.endswith("s") and value[:-1].isupper():
                value = value[:-1]  # "no TODOs" -> TODO
            value = value.removesuffix(")") if value.endswith("()") else value  # "no print()" -> any print(
            out.append({"op": op, "arg": value.rstrip(":") if op == "not_contains" else value})
    return out


def checks_from_feedback(texts: Iterable[str]) -> list[Check]:
    """Rule checks a user's complaints imply. Precision over recall: unclear phrases give none."""
    checks: list[Check] = []
    for text in texts:
        for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
            taken: list[tuple[int, int]] = []
            found = _quoted_checks(sentence, taken)
            found += _ticket_checks(sentence, text, taken)
            found += _limit_checks(sentence, taken)
            found += _section_checks(sentence, taken)
            found += _literal_checks(sentence, taken)
            for check in found:
                if check not in checks:
                    checks.append(check)
    return checks


def checks_by_support(texts: list[str]) -> list[Check]:
    """A kind's checks from all its complaints, the most often stated first (ties: first stated),
    so the judge reads the same whichever session happened to complain first."""
    support: dict[str, int] = {}
    first: dict[str, tuple[int, Check]] = {}
    for text in texts:
        for check in checks_from_feedback([text]):
            key = repr(sorted(check.items()))
            support[key] = support.get(key, 0) + 1
            first.setdefault(key, (len(first), check))
    return [check for key, (_, check) in sorted(first.items(), key=lambda kv: (-support[kv[0]], kv[1][0]))]


def complaint_for(check: Check, texts: Iterable[str]) -> str | None:
    """The first sentence of the complaints that states ``check`` (what the report shows beside
    the rule that answers it), or None."""
    for text in texts:
        for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
            if check in checks_from_feedback([sentence]):
                return " ".join(sentence.split())[:SAID_CHARS]
    return None
