"""Pass 4: a generated-looking value right after a credential-ish label, whatever the vendor.

Most credentials have no documented prefix: they are random strings that a name, a header, a flag
or a call makes a secret (``ADAFRUIT_KEY='…'``, ``"fastlyKey": "…"``, ``X-Okta-Key: …``,
``AZURE_DEVOPS_EXT_PAT=…``, ``cohere.Client('…')``, ``wandb login …``, ``ngrok authtoken …``).
The label alone is too weak (``sort_key=name``, ``cache_key: user_profile_v2``), so the value must
also look generated (``looks_generated``): long, letters with digits or mixed case, no run of words.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from .values import mark

_SEPARATORS = re.compile(r"[_\-.:/+~|=]+")
_DIGEST = re.compile(r"(?i)(?:sha(?:1|224|256|384|512)|md5|blake2[bs]?)[:\-]")  # a hash, not a credential


def _wordy(segment: str) -> bool:
    """A piece of a name or version (``user``, ``v2``, ``2024``, ``x86``), not of a random string."""
    if len(segment) <= 6:
        return True
    if segment.isalpha():
        return len(segment) < 20 or segment.islower() or segment.isupper()
    return False


def _entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(n / len(s) * math.log2(n / len(s)) for n in counts.values())


def looks_generated(value: str) -> bool:
    """Is ``value`` a random-looking string (an issued key or token), not a name, number or word?"""
    if len(value) < 14 or _DIGEST.match(value):
        return False
    digits = sum(c.isdigit() for c in value)
    letters = sum(c.isalpha() for c in value)
    if digits == len(value):  # a long number under a key's name: an id or key (not a count, a time)
        return len(value) >= 16 and _entropy(value) >= 2.8
    if letters == 0 or (digits == 0 and (value.islower() or value.isupper() or len(value) < 20)):
        return False
    if all(_wordy(s) for s in _SEPARATORS.split(value)):
        return False
    return _entropy(value) >= 3.0


# A value: token characters, up to where quoting, punctuation or whitespace ends it.
_VALUE = r"(?P<value>[A-Za-z0-9_\-.+/=~:|]{14,512})(?![A-Za-z0-9_\-.+/=~:|])"

# ``<name ending in a label>`` ``=`` / ``:`` / ``=>`` ``<value>``; the label is matched at its hit.
_ASSIGNED = re.compile(
    r"(?i)(?:key|pat|auth|authtoken|session|sid)s?(?![A-Za-z0-9])"
    r"\\?[\"'`]?\s{0,5}(?:=|:=|:|=>)\s{0,5}(?:\\?[\"'`]|b'|b\")?" + _VALUE
)
# ``<command> login <value>``, ``ngrok authtoken <value>``: the value follows the word and flags.
_POSITIONAL = re.compile(
    r"(?i)(?:login|authtoken)[ \t]{1,5}(?:--?[A-Za-z][\w-]{0,30}[ \t]{1,5}){0,3}[\"']?" + _VALUE
)
# ``cohere.Client('…')``, ``OpsClient("…")``, ``new Api('…')``: a key passed to a client.
_CALL = re.compile(
    r"(?i)(?:client|api|auth|session|connect|login|token|key)(?:v\d)?\(\s{0,5}(?:\\?[\"'`])" + _VALUE
)

_ASSIGNED_NEEDLES = ("key", "pat", "auth", "session", "sid")
_LETTER_BEFORE_FORBIDDEN = ("pat", "sid")  # "spat", "inside": the label must start a word part
_POSITIONAL_NEEDLES = ("login", "authtoken")
_CALL_NEEDLES = ("client(", "clientv", "api(", "auth(", "session(", "connect(", "login(", "token(", "key(")


def _hits(lowered: str, needles: tuple[str, ...]) -> list[tuple[int, str]]:
    hits = []
    for needle in needles:
        pos = lowered.find(needle)
        while pos != -1:
            hits.append((pos, needle))
            pos = lowered.find(needle, pos + len(needle))
    return hits


def _spans(text: str, lowered: str) -> list[tuple[int, int]]:
    spans = []
    for pos, needle in _hits(lowered, _ASSIGNED_NEEDLES):
        if needle in _LETTER_BEFORE_FORBIDDEN and pos > 0 and lowered[pos - 1].isalpha() \
                and not (text[pos].isupper() and text[pos - 1].islower()):
            continue
        m = _ASSIGNED.match(text, pos)
        if m is not None:
            spans.append(m.span("value"))
    for pattern, needles in ((_POSITIONAL, _POSITIONAL_NEEDLES), (_CALL, _CALL_NEEDLES)):
        for pos, _needle in _hits(lowered, needles):
            m = pattern.match(text, pos)
            if m is not None:
                spans.append(m.span("value"))
    return spans


def redact_keyed(text: str) -> str:
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lower case is longer (İ): keep offsets
        lowered = "".join(c.lower() if c.isascii() else "\0" for c in text)
    spans = sorted({s for s in _spans(text, lowered) if looks_generated(text[s[0]:s[1]])})
    if not spans:
        return text
    pieces, done = [], 0
    for start, end in spans:
        if start < done:
            continue
        pieces += [text[done:start], mark("secret")]
        done = end
    pieces.append(text[done:])
    return "".join(pieces)
