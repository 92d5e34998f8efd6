"""Secret redaction, applied before anything is stored or sent (DESIGN §3, issue 3 item 5, issue 9
item 3).

``redact(text)`` replaces every recognised credential with ``[REDACTED:<kind>]``. Three passes:

1. Tokens with a documented prefix or fixed structure (``secret_shapes``): one regex scan finds
   candidate runs of token characters; only a candidate that starts with a known prefix (one C
   ``startswith`` over all of them) is matched against its shape. These are redacted wherever they
   appear.
2. Context rules: a value that is a secret because of what surrounds it (a PEM block, URL
   credentials, ``Authorization:`` / ``Cookie:`` headers, ``curl -u``, ``mysql -p``, ``--password``
   flags, ``.netrc`` lines, Azure SAS signatures). Each rule carries literal triggers; its regex
   runs only when one is present.
3. Assignments to a secret-named key (``password=...``, ``"api_key": "..."``). Precision matters
   here, since a redacted prompt is still mined: a value that is code (``get_token()``,
   ``settings.AWS_ACCESS_KEY_ID``, ``Optional[str]``, ``api_key``), a placeholder (``${TOKEN}``,
   ``<your-token>``) or prose is kept.

Every regex is written so that it cannot backtrack catastrophically: bounded repeats, no nested
quantifiers over overlapping classes.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from skillopt_sleep.secret_shapes import CANDIDATE, INFIX_SHAPES, PREFIXES, SHAPES

MARK = "[REDACTED:{}]"


def _mark(kind: str) -> str:
    return MARK.format(kind)


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


# --------------------------------------------------------------------------- values

# Values that name a secret instead of holding one: keep them (they are useful for mining).
_PLACEHOLDER = re.compile(
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
    r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+"  # snake_case
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
    return bool(_IDENTIFIER.fullmatch(value)) and not _has_digit(value)


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
    if len(value) < 3 or _PLACEHOLDER.match(value):
        return False
    if quoted:
        return not _is_prose(value)
    if len(value) < 6:
        return False  # "token: we", "password: is" in prose
    return not _is_code(value)


# --------------------------------------------------------------------------- 1. prefixed tokens


_RUN = re.compile(CANDIDATE.pattern.split(")", 1)[1])  # a candidate, without its left boundary
# A known prefix right after a separator inside a candidate (``token-ghp_...``, ``id.AKIA...``).
_INNER_PREFIX = re.compile(r"[._~\-](?=" + "|".join(re.escape(p) for p in PREFIXES) + ")")


def _shape_at(text: str, start: int) -> tuple[str, int, int] | None:
    for shape in SHAPES:
        if text.startswith(shape.prefixes, start):
            m = shape.pattern.match(text, start)
            if m is not None and (shape.check is None or shape.check(m.group())):
                return shape.kind, m.start(), m.end()
    return None


def _find_token(text: str, candidate: re.Match[str], done: int) -> tuple[str, int, int] | None:
    start, token = candidate.start(), candidate.group()
    if token.startswith(PREFIXES):
        found = _shape_at(text, start)
        if found is not None:
            return found
    for inner in _INNER_PREFIX.finditer(token):
        found = _shape_at(text, start + inner.end())
        if found is not None:
            return found
    for infix, shape in INFIX_SHAPES:
        if infix in token:
            m = shape.pattern.search(text, max(start - 3, done), candidate.end())
            if m is not None:
                return shape.kind, m.start(), m.end()
    return None


def _redact_tokens(text: str) -> str:
    pieces: list[str] = []
    done = pos = 0
    candidate = CANDIDATE.search(text)
    while candidate is not None:
        found = _find_token(text, candidate, done)
        if found is None:
            candidate = CANDIDATE.search(text, candidate.end())
            continue
        kind, begin, end = found
        pieces += [text[done:begin], _mark(kind)]
        done = pos = max(end, begin + 1)
        # the rest of the run may hold another token (``<token>-<token>``)
        candidate = _RUN.match(text, pos) or CANDIDATE.search(text, pos)
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


# --------------------------------------------------------------------------- 2. context rules


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    triggers: tuple[str, ...]  # literal substrings, at least one of which every match contains
    lower: bool = False  # triggers are matched against the lower-cased text
    replace: Callable[[re.Match[str]], str] | None = None
    # The pattern starts with its trigger: it is only *matched* where a trigger occurs (found by
    # substring search), instead of scanned across the text (slow for case-insensitive patterns).
    anchored: bool = False

    def _replacement(self, m: re.Match[str]) -> str:
        return self.replace(m) if self.replace is not None else _mark(self.kind)

    def apply(self, text: str, haystack: str | None = None) -> str:
        if not self.anchored or haystack is None or len(haystack) != len(text):
            return self.pattern.sub(self._replacement, text)
        starts: set[int] = set()
        for trigger in self.triggers:
            pos = haystack.find(trigger)
            while pos != -1:
                starts.add(pos)
                pos = haystack.find(trigger, pos + 1)
        pieces: list[str] = []
        done = 0
        for start in sorted(starts):
            if start < done:
                continue
            m = self.pattern.match(text, start)
            if m is None:
                continue
            replacement = self._replacement(m)
            if replacement != m.group(0):
                pieces += [text[done:start], replacement]
                done = m.end()
        if not pieces:
            return text
        pieces.append(text[done:])
        return "".join(pieces)


def _keep_prefix_group(kind: str, *, require_digit: bool = False,
                       check_value: bool = False) -> Callable[[re.Match[str]], str]:
    """Replace the ``secret`` group and keep everything before it (a header, flag or user)."""

    def repl(m: re.Match[str]) -> str:
        secret = m.group("secret")
        if require_digit and not _has_digit(secret):
            return m.group(0)
        if check_value and _PLACEHOLDER.match(secret.strip("'\"`")):
            return m.group(0)
        return m.string[m.start():m.start("secret")] + _mark(kind) + m.string[m.end("secret"):m.end()]

    return repl


def _after_command(kind: str, command: re.Pattern[str]) -> Callable[[re.Match[str]], str]:
    """A flag's value is a secret only on a command line that names ``command`` before it (the
    rule is anchored on the flag, so text full of command names costs nothing)."""
    keep = _keep_prefix_group(kind, check_value=True)

    def repl(m: re.Match[str]) -> str:
        window = max(m.start() - 300, 0)
        line_start = max(m.string.rfind("\n", window, m.start()) + 1, window)
        if command.search(m.string, line_start, m.start()) is None:
            return m.group(0)
        return keep(m)

    return repl


def _random_looking(value: str) -> bool:
    return len(value) >= 10 and (_has_digit(value) or (value.lower() != value and value.upper() != value))


def _cookie(m: re.Match[str]) -> str:
    """Only a cookie that carries a random-looking value (a session id) is a secret."""
    pairs = [p.partition("=")[2].strip() for p in m.group("secret").split(";")]
    if not any(_random_looking(v) for v in pairs):
        return m.group(0)
    return m.string[m.start():m.start("secret")] + _mark("cookie") + m.string[m.end("secret"):m.end()]


def _auth_header(m: re.Match[str]) -> str:
    secret = m.group("secret").strip("'\"`")
    if _PLACEHOLDER.match(secret) or (secret.isalpha() and secret.islower()):
        return m.group(0)  # "authorization: required", "Authorization: $TOKEN"
    return m.string[m.start():m.start("secret")] + _mark("auth_header") + m.string[m.end("secret"):m.end()]


def _basic(m: re.Match[str]) -> str:
    """A base64 value is a credential only when it decodes to ``user:password``."""
    token = m.group("secret")
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return m.group(0)
    if b":" in decoded:
        return m.string[m.start():m.start("secret")] + _mark("basic_auth") + m.string[m.end("secret"):m.end()]
    return m.group(0)


_PEM = (
    r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----"
    # to its END line; a truncated block ends where its base64 body does (not at the end of the
    # text, which would swallow whatever follows it in a prompt)
    r"(?:[\s\S]*?-----END (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----"
    r"|(?:[ \t]*\r?\n[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z-]+: [^\n]*))*)"
)
_VALUE = r"[^\s\"'`]"  # one character of an unquoted command-line value

_RULES: tuple[_Rule, ...] = (
    _Rule("private_key", re.compile(_PEM), ("PRIVATE KEY",)),
    _Rule(
        "slack_webhook",
        re.compile(r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]{8,}"),
        ("hooks.slack.com",),
    ),
    _Rule(
        "discord_webhook",
        re.compile(r"https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{20,}"),
        ("discord",),
    ),
    _Rule(
        "aws_secret_key",
        re.compile(
            r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s{0,5}(?:=|:=|:|=>)\s{0,5}[\"']?"
            r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        ("aws_secret", "awssecret"),
        lower=True,
        replace=_keep_prefix_group("aws_secret_key"),
        anchored=True,
    ),
    _Rule(
        "auth_header",
        re.compile(
            r"(?i)(?<![A-Za-z0-9])authorization[\"'`]?\s{0,5}[:=]\s{0,5}[\"'`]?"
            r"(?:(?:bearer|basic|token|digest|bot|apikey|sso-key)\s{1,5})?(?P<secret>[^\s\"'`\\,;]{4,})"
        ),
        ("authorization",),
        lower=True,
        replace=_auth_header,
        anchored=True,
    ),
    _Rule(
        "bearer_token",
        re.compile(r"(?i)(?<![A-Za-z0-9])bearer\s{1,5}(?P<secret>[A-Za-z0-9._~+/\-]{16,}=*)"),
        ("bearer",),
        lower=True,
        replace=_keep_prefix_group("bearer_token", require_digit=True),
        anchored=True,
    ),
    _Rule("basic_auth", re.compile(r"(?<![A-Za-z0-9])Basic\s{1,5}(?P<secret>[A-Za-z0-9+/]{8,}={0,2})"), ("Basic",),
          replace=_basic, anchored=True),
    _Rule(
        "basic_auth",  # a Docker config.json entry: base64 of user:password
        re.compile(r"\"auth\"\s{0,5}:\s{0,5}\"(?P<secret>[A-Za-z0-9+/]{8,}={0,2})\""),
        ('"auth"',),
        replace=_basic,
        anchored=True,
    ),
    _Rule(
        "cookie",
        re.compile(r"(?i)(?<![A-Za-z0-9])cookie[\"']?\s{0,5}:\s{0,5}(?P<secret>[^\s\"'\\;=]{1,256}=[^\n\"'\\]{1,4096})"),
        ("cookie",),
        lower=True,
        replace=_cookie,
        anchored=True,
    ),
    _Rule(
        "url_credentials",  # scheme://user:password@ and scheme://:password@
        re.compile(r"://[^\s:/@\"'<>\[\]]{0,256}:(?P<secret>[^\s/@\"'<>]{1,256})@"),
        ("://",),
        replace=_keep_prefix_group("url_credentials", check_value=True),
    ),
    _Rule(
        "url_credentials",  # scheme://token@ (a Sentry DSN key, a token used as the user name)
        re.compile(r"://(?P<secret>[A-Za-z0-9_\-.~%]{16,256})@"),
        ("://",),
        replace=_keep_prefix_group("url_credentials", require_digit=True),
    ),
    _Rule(
        "azure_sas_signature",
        re.compile(r"[?&]sig=(?P<secret>[A-Za-z0-9%+/=]{16,})"),
        ("sig=",),
        replace=_keep_prefix_group("azure_sas_signature"),
    ),
    _Rule(
        "telegram_bot_token",
        re.compile(r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}(?![A-Za-z0-9])"),
        (":AA",),
    ),
    _Rule(
        "cli_password",  # curl -u user:password, curl --user user:password
        re.compile(rf"(?<![A-Za-z0-9])curl\b[^\n]{{0,500}}?\s(?:-[A-Za-z]{{0,8}}u|--user)(?:\s{{1,5}}|=)[\"']?[^\s:\"']{{1,256}}:"
                   rf"(?P<secret>{_VALUE}{{1,256}})"),
        ("curl",),
        replace=_keep_prefix_group("cli_password", check_value=True),
        anchored=True,
    ),
    _Rule(
        "cli_password",  # mysql -pPASSWORD (no space: with one, mysql prompts)
        re.compile(rf" -p(?P<secret>{_VALUE}{{1,256}})"),
        (" -p",),
        replace=_after_command("cli_password", re.compile(r"\b(?:mysql(?:dump|admin|import)?|mariadb)\b")),
        anchored=True,
    ),
    _Rule(
        "cli_password",  # docker login -p PASSWORD
        re.compile(rf" -p\s{{1,5}}(?P<secret>[^\s\"'`\-<]{_VALUE}{{2,255}})"),
        (" -p",),
        replace=_after_command("cli_password", re.compile(r"\blogin\b")),
        anchored=True,
    ),
    _Rule(
        "cli_password",  # --password=..., --token ..., --account-key ..., --client-secret=...
        re.compile(
            r"--(?:[a-z0-9]{1,20}-){0,3}(?:password|passwd|pass|token|secret|api-?key|access-key|secret-key"
            r"|account-key|auth-key|private-key)(?:=|[ \t]{1,5})[\"']?"
            rf"(?P<secret>[^\s\"'`\-<]{_VALUE}{{2,512}})"
        ),
        ("--",),
        replace=_keep_prefix_group("cli_password", check_value=True),
    ),
    _Rule(
        "netrc_password",
        re.compile(r"(?<![A-Za-z0-9])machine\s{1,5}\S{1,256}\s{1,5}login\s{1,5}\S{1,256}\s{1,5}password\s{1,5}(?P<secret>\S{1,256})"),
        ("machine",),
        replace=_keep_prefix_group("netrc_password", check_value=True),
        anchored=True,
    ),
)


def _apply_rules(text: str) -> str:
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
        new = rule.apply(text, haystack)
        if new != text:
            text = new
            lowered = None
    return text


# --------------------------------------------------------------------------- 3. assignments

# The word a secret-holding key name ENDS with (db_password, GITHUB_TOKEN, "api_key"), so that
# max_tokens / token_count / password_hint / sort(key=...) are not treated as secrets.
_SECRET_KEY_WORDS = (
    r"(?:passwd|password|pwd|(?<![A-Za-z])pass|passphrase|secret|token|credentials?|"
    r"(?:api|access|secret|private|auth|signing|encryption|master|account)[_\-]?key)"
)
SECRET_KEY_NAME = re.compile(r"(?i)^[A-Za-z0-9_.\-]{0,60}?" + _SECRET_KEY_WORDS + r"$")

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
_KEY_QUALIFIER = re.compile(r"(?:api|access|secret|private|auth|signing|encryption|master|account)[_\-]?$")


def _assignment(m: re.Match[str]) -> str:
    value = m.group(3)
    quote = ""
    for q in ('\\"', '"', "'"):
        if len(value) >= 2 * len(q) and value.startswith(q) and value.endswith(q):
            quote = q
            break
    inner = value[len(quote): len(value) - len(quote)]
    if not is_secret_value(inner, quoted=bool(quote)):
        return m.group(0)
    if not quote and inner.isalpha():
        after = m.string[m.end(): m.end() + 1]
        if inner.lower() == m.group(1).lower() or after in (",", ")"):
            return m.group(0)  # credentials=credentials, password=hashed, (a variable)
    return m.group(1) + m.group(2) + quote + _mark("secret") + quote


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


# --------------------------------------------------------------------------- public


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``."""
    if not text or not isinstance(text, str):
        return text
    if "PRIVATE KEY" in text:  # first, so that no body line of the block is left behind
        text = _RULES[0].apply(text)
    text = _redact_tokens(text)
    text = _apply_rules(text)
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
                and SECRET_KEY_NAME.match(key)
                and is_secret_value(value, quoted=True)
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
