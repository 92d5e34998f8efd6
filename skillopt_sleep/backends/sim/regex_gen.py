"""A string that matches a regex check (the common subset mined checks use)."""

from __future__ import annotations

import random
import re
import sys
from typing import Any


def regex_example(pattern: str, rng: random.Random) -> str | None:
    """A string matching ``pattern`` (common regex subset), or None when unsupported."""
    if sys.version_info >= (3, 11):
        import re._parser as sre_parse
    else:  # pragma: no cover - Python 3.10
        import sre_parse
    try:
        parsed = sre_parse.parse(pattern)
        text = _gen(parsed, rng, sre_parse)
    except Exception:
        return None
    return text if re.search(pattern, text, re.MULTILINE) else None


def _gen(items: Any, rng: random.Random, sp: Any) -> str:
    c = sp  # constants live on the parser module
    out = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(av))
        elif name == "NOT_LITERAL":
            out.append("x" if chr(av) != "x" else "y")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_gen_in(av))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, sub = av
            n = lo if hi == c.MAXREPEAT else min(hi, max(lo, 1))
            out.append("".join(_gen(sub, rng, sp) for _ in range(n)))
        elif name == "SUBPATTERN":
            out.append(_gen(av[-1], rng, sp))
        elif name == "BRANCH":
            out.append(_gen(av[1][0], rng, sp))
        elif name in ("AT", "ASSERT_NOT", "GROUPREF"):
            continue
        elif name == "ASSERT":
            continue
        else:
            raise ValueError(name)
    return "".join(out)


def _gen_in(items: Any) -> str:
    negate = any(str(op) == "NEGATE" for op, _ in items)
    if negate:
        return "x"
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            return chr(av)
        if name == "RANGE":
            return chr(av[0])
        if name == "CATEGORY":
            cat = str(av)
            if "DIGIT" in cat and "NOT" not in cat:
                return "1"
            if "SPACE" in cat and "NOT" not in cat:
                return " "
            return "a"
    return "a"
