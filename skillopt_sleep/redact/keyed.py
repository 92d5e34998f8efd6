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


# CamelCase or lower-case words, a few digits after them (``ArrowUpShift2024``, ``profile12``)
_WORDS = re.compile(r"[A-Za-z][a-z]+(?:[A-Z][a-z]+)*[0-9]{0,4}")


def _wordy(segment: str) -> bool:
    """A piece of a name or version (``user``, ``v2``, ``2024``, ``x86``), not of a random string."""
    if len(segment) <= 6 or segment.isdigit() or _WORDS.fullmatch(segment):  # a number: a date, a build
        return True
    if segment.isalpha():  # words, CamelCase words (few capitals), not random mixed case
        return len(segment) < 20 or 4 * sum(c.isupper() for c in segment) <= len(segment) + 4
    return False


def entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(n / len(s) * math.log2(n / len(s)) for n in counts.values())


_NOT_DIGIT = str.maketrans(dict.fromkeys("0123456789"))
_NOT_LETTER = str.maketrans(dict.fromkeys("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"))


# a name's parts: capitalised words, lower-case words, years and dates, acronyms
_NAME_PART = re.compile(r"[A-Z][a-z]{2,}|[a-z]{3,}|[0-9]{4,}|[A-Z]{3,}")


_CAPITALISED = re.compile(r"[A-Z][a-z]{2,}")


def name_like(run: str) -> bool:
    """A CamelCase name: two capitalised words or more, and nine tenths of ``run`` in a name's parts
    (``BetaMemoryTool20250818ViewCommand``, ``AsyncAPIKeysWithRawResponse``). Random base62 of 32
    or more characters reaches that in fewer than one in a thousand draws."""
    if len(_CAPITALISED.findall(run)) < 2:
        return False
    return 10 * sum(len(w) for w in _NAME_PART.findall(run)) >= 9 * len(run)


_DIGIT_LETTER = re.compile(r"[0-9][A-Za-z]")


def _interleaved(value: str) -> bool:
    """Short pieces, but digits run into letters again and again (``9quq-dr47-g6h3``,
    ``25i19c_zNMYsm``): random, where names put a number at a word's end (``node18``, ``x86_64``)."""
    return len(value) >= 16 and len(_DIGIT_LETTER.findall(value)) >= 2 and entropy(value) >= 3.5


# four consonants in a row, twice, and few vowels: rare in words (even run together:
# ``backgroundcolorscheme`` is a third vowels), common in random lower-case letters (a fifth)
_CLUSTER = re.compile(r"[b-df-hj-np-tv-xz]{4}")


def _random_letters(value: str) -> bool:
    """Sixteen lower-case letters or more that do not read as words (``ayxsjslhnzojlsmc``: some
    services issue keys of lower-case letters only)."""
    if len(value) < 16 or not value.isalpha() or not value.islower() or len(_CLUSTER.findall(value)) < 2:
        return False
    return 4 * sum(value.count(v) for v in "aeiou") <= len(value)


def looks_generated(value: str) -> bool:
    """Is ``value`` a random-looking string (an issued key or token), not a name, number or word?"""
    if len(value) < _MIN_VALUE or _DIGEST.match(value):
        return False
    value = value[:4096]  # a long run is judged by its start (bounded work on any input)
    if _random_letters(value):
        return entropy(value) >= 3.0
    digits = len(value) - len(value.translate(_NOT_DIGIT))
    if digits == len(value):  # a long number under a key's name: an id or key (not a count, a time)
        return len(value) >= 15 and entropy(value) >= 2.5
    if len(value) >= 20 and name_like(value):
        return False
    if all(_wordy(s) for s in _SEPARATORS.split(value)) and not _interleaved(value):
        return False
    letters = len(value) - len(value.translate(_NOT_LETTER))
    if letters == 0 or (digits == 0 and (value.islower() or value.isupper() or len(value) < 20)):
        return False
    return entropy(value) >= 3.0


# A value is a run of these characters (``=`` and ``:`` split it: ``KEY=value``, ``id:secret``).
_VALUE_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.+/~|=:"
_AS_A = str.maketrans(dict.fromkeys(_VALUE_CHARS, "a"))
_MIN_VALUE = 12
_RUN = re.compile("a" * _MIN_VALUE + "a*")
_WINDOW = 90  # how far before a value its label may start

# What comes right before a value that a label makes a secret (each alternative ends at the value):
_LABELLED = re.compile(
    r"(?i)(?:"
    # a name ending in a label, then = / : / := / =>: ADAFRUIT_KEY=, "fastlyKey": ", X-Okta-Key:
    r"(?:key|token|secret|passwd|password|credentials?|auth|authtoken|session|login|access|(?<![A-Za-z])(?:pat|sid))s?"
    r"\\?[\"'`]?(?:[ \t]{0,24}(?:=>|:=|=|:)[ \t]{0,24}|[\"'`][ \t]{0,5},[ \t]{0,5})"
    r"(?:\\?[\"'`]|b'|b\")?"
    # a label word, then the value after a space: ``clarifai SECRET <value>``, ``newsapi key <value>``
    r"|(?:key|token|secret|access|private|credentials?|apikey|authtoken)[ \t]{1,3}[\"'`]?"
    # ``wandb login <value>``, ``ngrok config add-authtoken <value>`` (flags may come between)
    r"|(?:login|authtoken)[ \t]{1,5}(?:--?[A-Za-z][\w-]{0,30}[ \t]{1,5}){0,3}[\"']?"
    # ``cohere.Client('<value>')``, ``OpsClient("<value>")``: a key passed to a client
    r"|(?:client|api|auth|session|connect|login|token|key)(?:v\d)?\(\s{0,5}\\?[\"'`]"
    r")\Z"
)


def _candidates(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The run itself, and what follows its first and its last ``=`` or ``:`` (``KEY=value``)."""
    out = [(start, end)]
    first = _first_sep(text, start, end)
    if first == -1:
        return out
    last = _last_sep(text, start, end)
    for i in (first,) if last in (first, -1) else (first, last):
        if end - (i + 1) >= _MIN_VALUE and text[i + 1] not in "=:":
            out.append((i + 1, end))
    return out


def _first_sep(text: str, start: int, end: int) -> int:
    found = [i for i in (text.find("=", start, end), text.find(":", start, end)) if i != -1]
    return min(found) if found else -1


def _last_sep(text: str, start: int, end: int) -> int:
    body_end = end
    while body_end > start and text[body_end - 1] == "=":  # base64 padding is not a separator
        body_end -= 1
    return max(text.rfind("=", start, body_end), text.rfind(":", start, body_end))


def redact_keyed(text: str) -> str:
    if len(text) < _MIN_VALUE:
        return text
    mapped = text.translate(_AS_A)
    if "a" * _MIN_VALUE not in mapped:
        return text
    spans = []
    for run in _RUN.finditer(mapped):
        for start, end in _candidates(text, *run.span()):
            value = text[start:end]
            if looks_generated(value) and _LABELLED.search(text, max(start - _WINDOW, 0), start):
                spans.append((start, end))
                break
    if not spans:
        return text
    pieces, done = [], 0
    for start, end in spans:
        pieces += [text[done:start], mark("secret")]
        done = end
    pieces.append(text[done:])
    return "".join(pieces)
