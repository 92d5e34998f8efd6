"""Secret redaction, applied before anything is stored or sent (DESIGN §3, issue 3 item 5).

``redact(text)`` replaces every recognised credential with ``[REDACTED:<kind>]``.

Speed matters: the harvester redacts every string it keeps. Each rule carries the literal
substrings that any match must contain; a rule's regex runs only when one of its triggers is
present, so clean text costs a handful of substring searches (plain C ``in`` scans). Every regex
is written so that it cannot backtrack catastrophically: bounded repeats, no nested quantifiers
over overlapping classes.

Precision over recall for the generic rules (assignments, ``Basic`` credentials), because a
redacted prompt is still mined; exact-shape rules (vendor key prefixes, PEM blocks) are greedy.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

MARK = "[REDACTED:{}]"


def _mark(kind: str) -> str:
    return MARK.format(kind)


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    triggers: tuple[str, ...]  # literal substrings, at least one of which every match contains
    lower: bool = False  # triggers are matched against the lower-cased text
    replace: Callable[[re.Match[str]], str] | None = None

    def apply(self, text: str) -> str:
        if self.replace is not None:
            return self.pattern.sub(self.replace, text)
        return self.pattern.sub(_mark(self.kind), text)


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


def _keep_prefix_group(kind: str, *, require_digit: bool = False) -> Callable[[re.Match[str]], str]:
    """Replace group 2 (the secret) and keep group 1 (a header / key name)."""

    def repl(m: re.Match[str]) -> str:
        secret = m.group(2)
        if require_digit and not _has_digit(secret):
            return m.group(0)
        return m.group(1) + _mark(kind)

    return repl


def _openai(m: re.Match[str]) -> str:
    # "sk-" followed by long random text; hyphenated words ("sk-learn-compatible-...") have no digit.
    return _mark("openai_key") if _has_digit(m.group(0)) else m.group(0)


def _basic(m: re.Match[str]) -> str:
    """A bare ``Basic <b64>`` is a credential only when it decodes to ``user:password``."""
    token = m.group(2)
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return m.group(0)
    if b":" in decoded:
        return m.group(1) + _mark("basic_auth")
    return m.group(0)


# Values that name a secret instead of holding one: keep them (they are useful for mining).
_PLACEHOLDER = re.compile(
    r"""(?:\$\{?[A-Za-z_]|%\(?[A-Za-z_]|\{\{|<[^>]{0,60}>$|os\.|process\.env|getenv|env\(|secrets\.|
         none$|null$|nil$|true$|false$|undefined$|\*+$|x+$|\.\.\.|\[REDACTED)""",
    re.IGNORECASE | re.VERBOSE,
)

# The word a secret-holding key name ENDS with (db_password, GITHUB_TOKEN, "api_key"), so that
# max_tokens / token_count / password_hint / sort(key=...) are not treated as secrets.
_SECRET_KEY_WORDS = (
    r"(?:passwd|password|pwd|passphrase|secret|token|credentials?|"
    r"(?:api|access|secret|private|auth|signing|encryption|master)[_\-]?key)"
)
SECRET_KEY_NAME = re.compile(r"(?i)^[A-Za-z0-9_.\-]{0,60}?" + _SECRET_KEY_WORDS + r"$")


def _assignment(m: re.Match[str]) -> str:
    value = m.group(3)
    quote = ""
    for q in ('\\"', '"', "'"):
        if len(value) >= 2 * len(q) and value.startswith(q) and value.endswith(q):
            quote = q
            break
    inner = value[len(quote) : len(value) - len(quote)].strip()
    if len(inner) < 3 or _PLACEHOLDER.match(inner):
        return m.group(0)
    if not quote and len(inner) < 6:
        return m.group(0)  # "token: we", "password: is" in prose
    return m.group(1) + m.group(2) + quote + _mark("secret") + quote


_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----"
            # to its END line; a truncated block ends where its base64 body does (not at the
            # end of the text, which would swallow whatever follows it in a prompt)
            r"(?:[\s\S]*?-----END (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:[ \t]*\r?\n[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z-]+: [^\n]*))*)"
        ),
        ("PRIVATE KEY",),
    ),
    _Rule("anthropic_key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{16,}"), ("sk-ant-",)),
    _Rule(
        "openai_key",
        re.compile(r"(?<![A-Za-z0-9_\-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
        ("sk-",),
        replace=_openai,
    ),
    _Rule(
        "github_token",
        re.compile(r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _Rule("github_token", re.compile(r"github_pat_[A-Za-z0-9_]{22,}"), ("github_pat_",)),
    _Rule(
        "aws_access_key_id",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"),
        ("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    _Rule(
        "aws_secret_key",
        re.compile(
            r"(?i)(aws_?secret_?(?:access_?)?key[\"']?\s{0,5}(?:=|:=|:|=>)\s{0,5}[\"']?)"
            r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        ("aws_secret", "awssecret"),
        lower=True,
        replace=_keep_prefix_group("aws_secret_key"),
    ),
    _Rule(
        "slack_webhook",
        re.compile(r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]{8,}"),
        ("hooks.slack.com",),
    ),
    _Rule("slack_token", re.compile(r"xox[abprse]-[A-Za-z0-9\-]{10,}"), ("xox",)),
    _Rule("slack_token", re.compile(r"xapp-[0-9]-[A-Za-z0-9\-]{10,}"), ("xapp-",)),
    _Rule("google_api_key", re.compile(r"AIza[0-9A-Za-z_\-]{35}"), ("AIza",)),
    _Rule(
        "stripe_key",
        re.compile(r"(?<![A-Za-z0-9])(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"),
        ("_live_", "_test_"),
    ),
    _Rule("stripe_key", re.compile(r"whsec_[0-9A-Za-z]{24,}"), ("whsec_",)),
    _Rule(
        "jwt",
        re.compile(r"eyJ[A-Za-z0-9_\-]{6,}\.eyJ[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]*"),
        ("eyJ",),
    ),
    _Rule(
        "auth_header",
        re.compile(
            r"(?i)(\b(?:proxy-)?authorization[\"']?\s{0,5}[:=]\s{0,5}[\"']?"
            r"(?:bearer|basic|token|digest|bot)?\s{0,5})([^\s\"'\\,;]{4,})"
        ),
        ("authorization",),
        lower=True,
        replace=_keep_prefix_group("auth_header"),
    ),
    _Rule(
        "bearer_token",
        re.compile(r"(?i)(\bbearer\s{1,5})([A-Za-z0-9._~+/\-]{16,}=*)"),
        ("bearer",),
        lower=True,
        replace=_keep_prefix_group("bearer_token", require_digit=True),
    ),
    _Rule("basic_auth", re.compile(r"(\bBasic\s{1,5})([A-Za-z0-9+/]{8,}={0,2})"), ("Basic",), replace=_basic),
    _Rule(
        "url_credentials",
        re.compile(r"://[^\s:/@\"'<>]{1,256}:[^\s/@\"'<>]{1,256}@"),
        ("://",),
        replace=lambda m: "://" + _mark("url_credentials") + "@",
    ),
)

# Assignments (``password=...``, ``"api_key": "..."``, ``export GH_TOKEN=...``). A case-insensitive
# regex scan is slow in ``re``, so keyword hits are found with plain substring search on the
# lower-cased text and the regex is only *matched* (anchored) at those hits.
_ASSIGNMENT = re.compile(
    r"(?i)(" + _SECRET_KEY_WORDS + r")(?![A-Za-z0-9])"
    r"(\\?[\"']?\s{0,5}(?:=|:=|:|=>)\s{0,5})"
    r"(\\\"[^\"\\\n]{1,512}\\\"|\"(?:[^\"\\\n]|\\.){1,512}\"|'[^'\n]{1,512}'"
    r"|[^\s\"'`,;&|)}\]\\]{1,512})"
)
_ASSIGNMENT_NEEDLES = ("pass", "pwd", "secret", "token", "credential", "key")
_KEY_QUALIFIER = re.compile(r"(?:api|access|secret|private|auth|signing|encryption|master)[_\-]?$")


def _assignment_starts(lowered: str) -> list[int]:
    starts: set[int] = set()
    for needle in _ASSIGNMENT_NEEDLES:
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


def _redact_assignments(text: str) -> str:
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


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``."""
    if not text or not isinstance(text, str):
        return text
    lowered: str | None = None
    for rule in _RULES:
        if rule.lower:
            if lowered is None:
                lowered = text.lower()
            haystack = lowered
        else:
            haystack = text
        for trigger in rule.triggers:
            if trigger in haystack:
                break
        else:
            continue
        new = rule.apply(text)
        if new != text:
            text = new
            lowered = None
    if lowered is None:
        lowered = text.lower()
    for needle in _ASSIGNMENT_NEEDLES:
        if needle in lowered:
            return _redact_assignments(text)
    return text


def redact_obj(obj: Any) -> Any:
    """Redact every string inside ``obj`` (dicts, lists, tuples), returning a new object.

    A string value stored under a secret-looking key (``{"password": "hunter2"}``) is redacted
    whole, since the key/value pair no longer looks like an assignment once it is structured.
    """
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            new_key = redact(key) if isinstance(key, str) else key
            if (
                isinstance(key, str)
                and isinstance(value, str)
                and len(value.strip()) >= 3
                and SECRET_KEY_NAME.match(key)
                and not _PLACEHOLDER.match(value.strip())
            ):
                out[new_key] = _mark("secret")
            else:
                out[new_key] = redact_obj(value)
        return out
    if isinstance(obj, list):
        return [redact_obj(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(redact_obj(v) for v in obj)
    return obj
