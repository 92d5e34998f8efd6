"""Random values from a secret detector's regex: Go and Rust patterns read in Python's syntax,
the capturing group that holds the secret, and a value drawn for it (for
``scripts/redaction_corpus.py``)."""

from __future__ import annotations

import math
import random
import re
import string
import sys
from collections import Counter

if sys.version_info >= (3, 11):
    from re import _constants as C  # noqa: N812
    from re import _parser as P  # noqa: N812
else:  # the same modules, under their older names
    import sre_constants as C  # noqa: N812
    import sre_parse as P  # noqa: N812

ALNUM = string.ascii_letters + string.digits
PRINTABLE = [chr(c) for c in range(33, 127)]
MAX_EXTRA = 6  # an unbounded repeat runs this many times past its minimum, at most

# ---------------------------------------------------------------------------- Go regex -> Python


_POSIX = {
    "alnum": "A-Za-z0-9",
    "alpha": "A-Za-z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
    "space": r"\s",
    "punct": r"!-/:-@\[-`{-~",
    "word": r"\w",
}


def go_to_python(pattern: str) -> str:
    """A Go or Rust regex in Python's syntax (the features the rule sets use)."""
    pattern = re.sub(r"\[:(\w+):\]", lambda m: _POSIX.get(m.group(1), m.group(0)), pattern)
    pattern = pattern.replace(r"\z", r"\Z").replace("(?s:.)", r"[\s\S]")
    pattern = re.sub(r"\(\?<(?![=!])", "(?P<", pattern)  # Rust's (?<name>...) is Python's (?P<name>...)
    # Go and Rust allow flags anywhere; Python only at the start: scope the leading ones group-wide
    flags = ""
    while m := re.match(r"\s*\(\?([imsx]+)\)" if "x" in flags or not flags else r"\(\?([imsx]+)\)", pattern):
        flags += m.group(1)
        pattern = pattern[m.end() :]
    if flags:
        end = "\n)" if "x" in flags else ")"  # in verbose mode a newline ends a trailing comment
        pattern = f"(?{''.join(sorted(set(flags)))}:{pattern}{end}"
    return _scope_inner_flags(pattern)


def _scope_inner_flags(pattern: str) -> str:
    """A flag group inside a pattern (``(p8e-)(?i)[a-z0-9]{32}``), which Go applies to the rest of
    its enclosing group, written as a scoped group that ends where that group ends."""
    flag = re.compile(r"\(\?([imsx]+)\)")
    while found := next((i for i, _ in _syntax(pattern) if i > 0 and flag.match(pattern, i)), None):
        m = flag.match(pattern, found)
        assert m is not None
        end = next((i for i, depth in _depths(pattern, m.end()) if depth < 0), len(pattern))
        pattern = pattern[:found] + f"(?{m.group(1)}:" + pattern[m.end() : end] + ")" + pattern[end:]
    return pattern


def _syntax(pattern: str, start: int = 0):
    """``(index, character)`` of each character of ``pattern`` from ``start`` that is syntax: not
    escaped, not inside a character class."""
    i, in_class = start, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern.startswith(("[]", "[^]"), i):  # a leading ] is a literal one
                i += 2 if pattern[i + 1] == "]" else 3
                continue
        else:
            yield i, c
        i += 1


def _depths(pattern: str, start: int):
    """``(index, depth)`` at each parenthesis from ``start``: the depth after it, relative to the
    group ``start`` is in (-1: that group has closed)."""
    depth = 0
    for i, c in _syntax(pattern, start):
        if c in "()":
            depth += 1 if c == "(" else -1
            yield i, depth


# ---------------------------------------------------------------------------- random strings


def _class_chars(items: list, ignore_case: bool) -> list[str]:
    negate = bool(items) and items[0][0] is C.NEGATE
    chars: set[str] = set()
    for op, av in items:
        if op is C.LITERAL:
            chars.add(chr(av))
        elif op is C.RANGE:
            chars.update(chr(c) for c in range(av[0], av[1] + 1) if c < 0x250)
        elif op is C.CATEGORY:
            probe = {
                C.CATEGORY_DIGIT: r"\d",
                C.CATEGORY_NOT_DIGIT: r"\D",
                C.CATEGORY_SPACE: r"\s",
                C.CATEGORY_NOT_SPACE: r"\S",
                C.CATEGORY_WORD: r"\w",
                C.CATEGORY_NOT_WORD: r"\W",
            }.get(av)
            if probe:
                chars.update(c for c in PRINTABLE + [" ", "\t", "\n"] if re.fullmatch(probe, c))
    if negate:
        chars = {c for c in PRINTABLE if c not in chars}
    if ignore_case:
        chars |= {c.swapcase() for c in chars if c.isascii()}
    return sorted(c for c in chars if c.isascii() and (c.isprintable() or c in " \t\n"))


def _pick(rng: random.Random, chars: list[str]) -> str:
    """Generated values are alphanumeric where the class allows it, as issued tokens mostly are."""
    alnum = [c for c in chars if c in ALNUM]
    if alnum and (rng.random() < 0.9 or len(alnum) == len(chars)):
        return rng.choice(alnum)
    visible = [c for c in chars if not c.isspace()] or chars
    return rng.choice(visible)


class Generator:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.groups: dict[int, str] = {}

    def run(self, tree, ignore_case: bool = False) -> str:
        out = []
        for op, av in tree:
            out.append(self.node(op, av, ignore_case))
        return "".join(out)

    def node(self, op, av, ic: bool) -> str:
        rng = self.rng
        if op is C.LITERAL:
            c = chr(av)
            return c.swapcase() if ic and rng.random() < 0.0 else c
        if op is C.NOT_LITERAL:
            return _pick(rng, [c for c in PRINTABLE if c != chr(av)])
        if op is C.ANY:
            return "."  # an unescaped dot in a rule mostly stands for a literal one (a host name)
        if op is C.IN:
            chars = _class_chars(av, ic)
            return _pick(rng, chars) if chars else ""
        if op is C.BRANCH:
            return self.run(rng.choice(av[1]), ic)
        if op is C.SUBPATTERN:
            group, add_flags, del_flags, sub = av
            flags_ic = (ic or bool(add_flags & re.IGNORECASE)) and not (del_flags & re.IGNORECASE)
            text = self.run(sub, flags_ic)
            if group:
                self.groups[group] = text
            return text
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = av
            hi = lo + MAX_EXTRA if hi is C.MAXREPEAT else hi
            # bounded-range tokens sit anywhere in their range; optional parts mostly absent
            n = lo if hi - lo > 12 and lo > 0 and rng.random() < 0.5 else rng.randint(lo, hi)
            if lo == 0 and hi <= 1 and rng.random() < 0.7:
                n = 0
            return "".join(self.run(sub, ic) for _ in range(n))
        if op is C.GROUPREF:
            return self.groups.get(av, "")
        if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            return ""
        if op is C.CATEGORY:
            return self.node(C.IN, [(C.CATEGORY, av)], ic)
        raise ValueError(f"unsupported regex node {op}")


def _find_group(tree, group: int):
    for op, av in tree:
        if op is C.SUBPATTERN:
            if av[0] == group:
                return av[3], bool(av[1] & re.IGNORECASE)
            found = _find_group(av[3], group)
            if found:
                return found
        elif op is C.BRANCH:
            for branch in av[1]:
                found = _find_group(branch, group)
                if found:
                    return found
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
            found = _find_group(av[2], group)
            if found:
                return found
    return None


def secret_value(rng: random.Random, pattern: str, group: int) -> str:
    tree = P.parse(pattern)
    if group:
        found = _find_group(tree, group)
        if found is None:
            raise ValueError("no such group")
        sub, ic = found
        return Generator(rng).run(sub, ic)
    return Generator(rng).run(tree)


def entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(n / len(s) * math.log2(n / len(s)) for n in counts.values()) if s else 0.0


_SECRET_WORD = re.compile(r"(?i)(?:pass|pwd|secret|token|cred|auth|sig|private|(?:api|access|account)[\W_]{0,3}key)")


def _group_starts(regex: str) -> list[int]:
    """Where each capturing group opens in the pattern text, in group-number order."""
    return [i for i, c in _syntax(regex) if c == "(" and (not regex.startswith("(?", i) or regex.startswith("(?P<", i))]


def secret_group(regex: str, groups: int) -> int:
    """The group that holds the secret when a pattern captures several: the last group whose name
    names a secret (``(?P<password>…)``); failing that, the last group whose pattern text just
    before it names a secret (password, token, API key, …); failing that, in a URL pattern, the last
    group before its ``@``; else the last."""
    if groups <= 1:
        return groups
    # a group the pattern names for a secret ((?P<password>…)) is the secret, whatever follows it
    by_name = [g for name, g in re.compile(regex).groupindex.items() if _SECRET_WORD.search(name)]
    if by_name:
        return max(by_name)
    regex = re.sub(r"\(\?#[^)]*\)", "", regex)  # comments name the group before them; drop them
    if regex.startswith("(?") and "x" in regex[2 : regex.find(":")]:
        regex = re.sub(r"(?m)(?<!\\)#.*$", "", regex)
    starts = _group_starts(regex)
    if len(starts) != groups:
        return groups
    # the pattern text between the previous group's start and this group's
    named = [g for g, at in enumerate(starts, 1) if _SECRET_WORD.search(regex[starts[g - 2] if g > 1 else 0 : at])]
    if named:
        return named[-1]
    at_sign = regex.find("@") if "://" in regex else -1
    before = [g for g, at in enumerate(starts, 1) if at_sign != -1 and at < at_sign]
    return before[-1] if before else groups
