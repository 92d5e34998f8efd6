"""Pass 3: assignments to a secret-named key (``password=...``, ``"api_key": "..."``,
``export GH_TOKEN=...``), unless the value is code, a placeholder or prose (``values``).
"""

from __future__ import annotations

import re

from .values import is_secret_value, mark

# The word a secret-holding key name ENDS with (db_password, GITHUB_TOKEN, "api_key"), so that
# max_tokens / token_count / password_hint / sort(key=...) are not treated as secrets.
_SECRET_KEY_WORDS = (
    r"(?:passwd|password|passwrd|pwd|(?<![A-Za-z])(?:pass|pw|pword)|passphrase|secret|token|credentials?|"
    r"(?:api|access|secret|private|auth|signing|encryption|master|account)[_\-]?key)"
)
SECRET_KEY_NAME = re.compile(r"(?i)^[A-Za-z0-9_.\-]{0,60}?" + _SECRET_KEY_WORDS + r"$")

# Assignments (``password=...``, ``"api_key": "..."``, ``export GH_TOKEN=...``). A case-insensitive
# regex scan is slow in ``re``, so keyword hits are found with plain substring search on the
# lower-cased text and the regex is only *matched* (anchored) at those hits.
_VALUE_CHAR = r"[^\s\"'`,;&|)}\]\\]"
_UNQUOTED = r"(?:" + _VALUE_CHAR + r"|[&;](?=" + _VALUE_CHAR + r")(?![A-Za-z_][A-Za-z0-9_.\-]{0,64}=))"
_ASSIGNMENT = re.compile(
    r"(?i)(" + _SECRET_KEY_WORDS + r")(?![A-Za-z0-9])"
    r"(\\?[\"']?(?:\s{0,5}|[ \t]{6,24})(?:=>|:=|=|:)(?:\s{0,5}|[ \t]{6,24}))"
    r"(\\\"[^\"\\\n]{1,512}\\\"|\"(?:[^\"\\\n]|\\.){1,512}\"|'[^'\n]{1,512}'"
    # unquoted: up to a delimiter; a closing bracket with more of the value right after it is part
    # of the value (``Tr0ub4dor}3x``), one that ends it closes the code around it (``{password: x}``);
    # an ``&`` or ``;`` with more of the value right after it is part of it too (``Tr0ub4dor&3x``),
    # unless a new ``name=`` starts there (``?token=x&page=2``, ``Password=x;Database=y``)
    r"|" + _UNQUOTED + r"{1,512}(?:[)}\]]{1,4}" + _UNQUOTED + r"{1,512}){0,8})"
)
ASSIGNMENT_NEEDLES = ("pass", "pw", "secret", "token", "credential", "key")
_KEY_QUALIFIER = re.compile(r"(?:api|access|secret|private|auth|signing|encryption|master|account)[_\-]?$")


_SNAKE_WORDS = re.compile(r"[a-z]+(?:[_-][a-z]+)+|[A-Z]+(?:_[A-Z]+)+")


_OPENER = {")": "(", "]": "[", "}": "{"}


def _closes_code(text: str, start: int, value: str) -> int:
    """Where an unquoted value ends: at the first closing bracket whose opener stands before the
    key on its line (``auth(token=self.token)+1``: the ``)`` closes the call), else its end."""
    window = max(start - 256, 0)  # bounded: a line a megabyte long is scanned once, not per key
    line = text[max(text.rfind("\n", window, start) + 1, window) : start]
    open_count = {o: line.count(o) - line.count(c) for c, o in _OPENER.items()}
    for i, c in enumerate(value):
        if c in _OPENER and open_count[_OPENER[c]] > 0:
            return i
    return len(value)


def _assignment(m: re.Match[str]) -> str:
    value = m.group(3)
    quote = ""
    for q in ('\\"', '"', "'"):
        if len(value) >= 2 * len(q) and value.startswith(q) and value.endswith(q):
            quote = q
            break
    tail = ""
    if not quote:
        cut = _closes_code(m.string, m.start(), value)
        value, tail = value[:cut], value[cut:]
    inner = value[len(quote) : len(value) - len(quote)]
    if not is_secret_value(inner, quoted=bool(quote)):
        return m.group(0)
    if not quote and inner.isalpha():
        after = m.string[m.end() : m.end() + 1]
        after = tail[:1] or after
        if inner.lower() == m.group(1).lower() or after in (",", ")"):
            return m.group(0)  # credentials=credentials, password=hashed, (a variable)
    if _SNAKE_WORDS.fullmatch(inner) and m.group(1).lower() in inner.lower():
        return m.group(0)  # GRANT_TYPE = "refresh_token", X_TOKEN = "APP_X_TOKEN": a name, not a secret
    return m.group(1) + m.group(2) + quote + mark("secret") + quote + tail


def _assignment_starts(lowered: str) -> list[int]:
    starts: set[int] = set()
    for needle in ASSIGNMENT_NEEDLES:
        pos = lowered.find(needle)
        while pos != -1:
            if needle == "key":
                qualifier = _KEY_QUALIFIER.search(lowered, max(0, pos - 11), pos)
                if qualifier is not None:
                    starts.add(qualifier.start())
            else:
                starts.add(pos)
            pos = lowered.find(needle, pos + len(needle))
    return sorted(starts)


def redact_assignments(text: str) -> str:
    lowered = text.lower()
    if len(lowered) != len(text):  # non-ASCII case folding moved offsets: scan with the regex
        return _ASSIGNMENT.sub(_assignment, text)
    pieces: list[str] = []
    done = 0
    for start in _assignment_starts(lowered):
        if start < done:
            continue
        m = _ASSIGNMENT.match(text, start)
        if m is None:
            continue
        replacement = _assignment(m)
        if replacement != m.group(0):
            pieces.append(text[done:start])
            pieces.append(replacement)
            done = m.end()
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)
