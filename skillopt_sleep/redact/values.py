"""What a value assigned to a secret-named key is: a secret, or code, a placeholder, prose.

Precision matters here, since a redacted prompt is still mined: a value that is code
(``get_token()``, ``settings.AWS_ACCESS_KEY_ID``, ``Optional[str]``, ``api_key``), a placeholder
(``${TOKEN}``, ``<your-token>``) or prose is kept.
"""

from __future__ import annotations

import base64
import binascii
import re

MARK = "[REDACTED:{}]"


def mark(kind: str) -> str:
    return MARK.format(kind)


def has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


# Values that name a secret instead of holding one: keep them (they are useful for mining).
PLACEHOLDER = re.compile(
    r"""(?:\$\{?[A-Za-z_(]|%(?:\([A-Za-z_]\w*\)[sdr]|[sdr]$|[A-Za-z_]\w*%$)|\{\{|<[^>]{0,60}>$|os\.|process\.env|getenv|env\(|secrets\.|
         none$|null$|nil$|true$|false$|undefined$|\*+$|x+$|\.\.\.|\[REDACTED|
         (?:your|my|the|some|example|sample|dummy|fake|test)[-_ ]?(?:api[-_ ]?)?(?:key|token|secret|password|pass)
           (?:[-_ ]?here)?$|
         changeme$|placeholder|redacted)""",
    re.IGNORECASE | re.VERBOSE,
)
# Type names that follow a key in a declaration (``password: str``, ``token?: string``).
_TYPE_NAMES = frozenset(
    "str string bytes int bool boolean number any object unknown optional secretstr secretbytes "
    "text varchar char required optional[str] none".split()
)
# segments are words, digits only at their end: ``settings.AWS_KEY``, ``cfg.token2``
_DOTTED_PATH = re.compile(r"[A-Za-z_$][A-Za-z_$]*[0-9]{0,2}(?:\??\.[A-Za-z_$][A-Za-z_$]*[0-9]{0,2})+")
_IDENTIFIER = re.compile(
    r"_{0,2}[a-z][a-z0-9]*(?:_[a-z0-9]+)+"  # snake_case, _private_name
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"  # SCREAMING_SNAKE
    r"|[a-z]+(?:[A-Z][a-z]+)+"  # camelCase
    r"|(?:[A-Z][a-z]+)+"  # PascalCase, a class name
)


def _is_code(value: str) -> bool:
    """A value that is an expression, not a literal: a call, subscript, template, attribute path,
    identifier or type name (``get_token()``, ``Optional[str]``, ``settings.X``, ``api_key``)."""
    if any(c in value for c in "([{`") or value.endswith("?"):
        return True
    if value.lower() in _TYPE_NAMES:
        return True
    if _DOTTED_PATH.fullmatch(value):
        return True
    return bool(_IDENTIFIER.fullmatch(value)) and not has_digit(value)


def _is_prose(value: str) -> bool:
    """A quoted sentence (a label, help text, a translation) rather than a passphrase."""
    words = value.split()
    if len(words) < 3 or not all(w.strip(".,:;!?'()").isalpha() for w in words):
        return False
    return value[0].isupper() or value.rstrip()[-1] in ".:?!"


def is_secret_value(value: str, *, quoted: bool) -> bool:
    """Would ``value``, assigned to a secret-named key, be a secret (not code, a placeholder or
    prose)?"""
    value = value.strip()
    if len(value) < 3 or PLACEHOLDER.match(value):
        return False
    if quoted:
        return not _is_prose(value)
    if len(value) < 6:
        return False  # "token: we", "password: is" in prose
    return not _is_code(value)


def random_looking(value: str) -> bool:
    """Ten characters or more with a digit or both cases: a session id, not a word."""
    return len(value) >= 10 and (has_digit(value) or (value.lower() != value and value.upper() != value))


def decodes_to_login(token: str) -> bool:
    """A base64 value that decodes to ``user:password``."""
    try:
        return b":" in base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
