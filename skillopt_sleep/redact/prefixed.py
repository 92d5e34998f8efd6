"""Pass 5: a generated-looking token behind a short service prefix, whatever the vendor.

Most services issue keys as ``<prefix><separator><random>``: ``aio_…``, ``glsa_…``, ``phx_…``,
``tvly-…``, ``nvapi-…``, ``NRAK-…``, ``SG.….…``, ``dp.st.dev.…``. The list of such prefixes grows
every month, so this pass does not list them: it redacts a run of token characters whose first
piece is a short word (the prefix) and whose rest looks generated — long, random (``looks_generated``
with a higher bar: at least 20 characters, one unbroken piece of 16 or more, high entropy), not a run
of words, versions or short hex groups (a UUID's longest group has 12).

Identifiers that look the same but are not secrets are left alone: digests (``sha256-…``), commits,
and the ids the model APIs put in every transcript (``msg_…``, ``toolu_…``, ``req_…``,
``chatcmpl-…``); a run that is part of a path, a URL's host or an e-mail address is not a token.
"""

from __future__ import annotations

import base64
import binascii
import re

from .keyed import entropy, looks_generated, name_like
from .values import mark

_TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_AS_A = str.maketrans(dict.fromkeys(_TOKEN_CHARS, "a"))
_MIN_RUN = 23  # a prefix of 2, its separator, 20 generated characters
_MAX_RUN = 4096
_RUN = re.compile("a" * _MIN_RUN + "a*")
_HEAD = re.compile(r"([A-Za-z][A-Za-z0-9]{0,11})[_.-]")
_NUMBERED = re.compile(r"\d{1,5}-[A-Za-z0-9]{64}")  # <key id>-<64 characters> (TrueNAS API keys)
# runs of four or more lower-case letters: most of a name (``Argon2PasswordHasher``), little of a key
_WORD_RUN = re.compile(r"[a-z]{4,}")
# four consonants in a row: rare in a word, common in a random lower-case key (``xnwmtjf``)
_CONSONANTS = re.compile(r"[b-df-hj-np-tv-xz]{4}")


def _mostly_words(piece: str) -> bool:
    words = (w for w in _WORD_RUN.findall(piece) if not _CONSONANTS.search(w))
    return 2 * sum(len(w) for w in words) >= len(piece)


# an alphabet written out (``ABCDEFGHIJ…0123456789``): a character set in code, not a key
_SEQUENCE = re.compile(r"(?i)abcdef|012345|123456")
_PIECES = re.compile(r"[_.-]+")
# a run glued to these is part of something larger (a path, a URL, an address, base64, a flag value)
_GLUE_BEFORE = frozenset("/\\@+=%$#&*")
_GLUE_AFTER = frozenset("/\\@+=%")
_NOT_SECRET_HEADS = frozenset(
    {
        # digests and revisions
        "sha",
        "sha1",
        "sha224",
        "sha256",
        "sha384",
        "sha512",
        "md5",
        "blake2b",
        "blake2s",
        "git",
        "commit",
        "rev",
        "revision",
        "hash",
        "digest",
        "checksum",
        "etag",
        "integrity",
        # ids the model APIs and agents write into every transcript
        "msg",
        "toolu",
        "srvtoolu",
        "req",
        "request",
        "chatcmpl",
        "resp",
        "call",
        "fc",
        "rs",
        "run",
        "thread",
        "asst",
        "file",
        "batch",
        "evt",
        "event",
        "trace",
        "span",
        "compl",
        "cmpl",
        "item",
        "ws",
        "conv",
        "sess",
        "session",
        "step",
        "job",
        "build",
        "task",
        "agent",
        "wrkspc",
        "org",
        "user",
        "apikey",
        "proj",
        "vs",
        "ftjob",
        "modr",
    }
)


def _generated_rest(rest: str, shortest: int = 20) -> bool:
    """Is what follows the prefix a random string (an issued secret), not names or groups of hex?"""
    if len(rest) < shortest or not looks_generated(rest):
        return False
    pieces = _PIECES.split(rest)
    longest = max(pieces, key=len)
    alnum = "".join(pieces)
    # one long random piece, or several of 8 and more (base64url: "_" and "-" fall anywhere)
    if len(longest) < 16 and (len(alnum) < 30 or min(len(p) for p in pieces if p) < 8):
        return False
    if _mostly_words(longest):
        return False
    if not any(c.isalpha() for c in alnum):
        return False
    if not any(c.isdigit() for c in alnum):  # letters only: random mixed case, long
        return len(alnum) >= 24 and alnum != alnum.lower() and alnum != alnum.upper() and entropy(alnum[:4096]) >= 4.0
    return entropy(alnum[:4096]) >= 3.5


def _padded(text: str, end: int) -> bool:
    """``=`` after a run is base64 padding when nothing but an end follows it (not ``name=value``)."""
    while end < len(text) and text[end] == "=":
        end += 1
    return end == len(text) or not (text[end].isalnum() or text[end] in "_-.")


def _token(text: str, start: int, end: int) -> int | None:
    """Where the token in the run ``start:end`` ends (trailing "._-" dropped), or None: no token."""
    if start > 0 and text[start - 1] in _GLUE_BEFORE:
        return None
    if end < len(text) and text[end] in _GLUE_AFTER and not (text[end] == "=" and _padded(text, end)):
        return None
    while end > start and text[end - 1] in "._-":  # a sentence's full stop, a trailing dash
        end -= 1
    return end if _is_token(text, start, end) else None


def _is_token(text: str, start: int, end: int) -> bool:
    if _NUMBERED.fullmatch(text, start, end):
        return looks_generated(text[text.index("-", start) + 1 : end])
    head = _HEAD.match(text, start, end)
    if head is None:
        return _bare(text[start:end]) and not _DIGEST_BEFORE.search(text, max(start - 8, 0), start)
    if head.group(1).lower() in _NOT_SECRET_HEADS:
        return False
    # a one-letter head is a sentence's "a-" or "s." unless a long random string follows it
    return _generated_rest(text[head.end() : end], 20 if len(head.group(1)) > 1 else 32)


# a digest: an SSH fingerprint (SHA256:<base64>), a go.sum line (h1:<base64>)
_DIGEST_BEFORE = re.compile(r"(?i)(?:sha\d{1,3}|md5|h1)[:=]\Z")
# base64 of a file rather than of a key: PNG, GIF, PDF, ZIP, gzip
_FILE_MAGIC = (b"\x89PNG", b"GIF8", b"%PDF", b"PK\x03\x04", b"\x1f\x8b")


def _encoded_data(run: str) -> bool:
    """Is ``run`` base64 of text (words and spaces) or of a file, not of a random key?"""
    try:
        raw = base64.b64decode(run[:4096] + "=" * (-len(run[:4096]) % 4), altchars=b"-_")
    except (binascii.Error, ValueError):
        return False
    if raw.startswith(_FILE_MAGIC):
        return True
    printable = sum(32 <= b < 127 for b in raw)
    return b" " in raw and printable >= 0.95 * len(raw)


def _bare(run: str) -> bool:
    """A long random string with no prefix at all: 32 or more letters of both cases and digits,
    nearly as random as random base62 (the high-entropy test of generic secret scanners). An SSH
    public key's body (base64 of a length-prefixed key type: "AAAA…") is public; base64 of text or
    of a file is data (``_encoded_data``)."""
    pieces = [p for p in _PIECES.split(run) if p]
    if len(pieces) > 1 and (len(run) - len(pieces) + 1) / len(pieces) < 8:
        return False  # short pieces: a name (SecurityConst.TLS_RSA_WITH_AES_256_CBC_SHA)
    joined = "".join(pieces)  # base64url keeps "-" and "_" inside
    if len(joined) < 32 or joined.startswith("AAAA") or not joined.isalnum() or joined.isdigit():
        return False
    if not (any(c.isupper() for c in joined) and any(c.islower() for c in joined) and any(c.isdigit() for c in joined)):
        return False
    if name_like(joined) or _SEQUENCE.search(joined) or _mostly_words(joined):
        return False
    # the costliest test last: most runs are refused above without decoding anything
    return entropy(joined[:4096]) >= 4.1 and not _encoded_data(run)


def redact_prefixed(text: str) -> str:
    if len(text) < _MIN_RUN:
        return text
    mapped = text.translate(_AS_A)
    if "a" * _MIN_RUN not in mapped:
        return text
    pieces, done = [], 0
    for run in _RUN.finditer(mapped):
        start, end = run.span()
        if end - start > _MAX_RUN:
            continue
        token_end = _token(text, start, end)
        if token_end is not None:
            pieces += [text[done:start], mark("token")]
            done = token_end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)
