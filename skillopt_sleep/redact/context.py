"""Pass 2: context rules — a value that is a secret because of what surrounds it (a PEM block,
URL credentials, ``Authorization:`` / ``Cookie:`` headers, ``curl -u``, ``mysql -p``,
``--password`` flags, ``.netrc`` lines, Azure SAS signatures). Each rule carries literal triggers;
its regex runs only when one is present.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .keyed import looks_generated
from .values import PLACEHOLDER, decodes_to_login, has_digit, is_secret_value, mark, random_looking


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
        return self.replace(m) if self.replace is not None else mark(self.kind)

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


def _keep_prefix_group(
    kind: str, *, require_digit: bool = False, check_value: bool = False
) -> Callable[[re.Match[str]], str]:
    """Replace the ``secret`` group and keep everything before it (a header, flag or user)."""

    def repl(m: re.Match[str]) -> str:
        secret = m.group("secret")
        if require_digit and not has_digit(secret):
            return m.group(0)
        if check_value and PLACEHOLDER.match(secret.strip("'\"`")):
            return m.group(0)
        return m.string[m.start() : m.start("secret")] + mark(kind) + m.string[m.end("secret") : m.end()]

    return repl


def _keep_if_secret(kind: str) -> Callable[[re.Match[str]], str]:
    """Replace the ``secret`` group when it is a secret value (not code, a placeholder or prose;
    ``values.is_secret_value``), quoted when the match has a non-empty ``quote`` group."""

    def repl(m: re.Match[str]) -> str:
        secret = m.group("secret")
        if not is_secret_value(secret, quoted=bool(m.groupdict().get("quote"))):
            return m.group(0)
        return m.string[m.start() : m.start("secret")] + mark(kind) + m.string[m.end("secret") : m.end()]

    return repl


_PASSWORD_IF_SECRET = _keep_if_secret("password")
_WEBHOOK_ID = _keep_prefix_group("webhook", require_digit=True)  # a generated id, not a path's words
_COMPARED = re.compile(r"(?i)(?:passwd|password|pwd|passphrase|secret|token)[\"'\]]?[ \t]{0,5}\Z")


def _compared_with_secret(m: re.Match[str]) -> str:
    """A literal compared with something named for a secret (the name ends just before ``==``)."""
    if not _COMPARED.search(m.string, max(m.start() - 16, 0), m.start()):
        return m.group(0)
    return _PASSWORD_IF_SECRET(m)


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


def _cookie(m: re.Match[str]) -> str:
    """Only a cookie that carries a random-looking value (a session id) is a secret."""
    pairs = [p.partition("=")[2].strip() for p in m.group("secret").split(";")]
    if not any(random_looking(v) for v in pairs):
        return m.group(0)
    return m.string[m.start() : m.start("secret")] + mark("cookie") + m.string[m.end("secret") : m.end()]


def _auth_header(m: re.Match[str]) -> str:
    secret = m.group("secret").strip("'\"`")
    if PLACEHOLDER.match(secret) or (secret.isalpha() and secret.islower()):
        return m.group(0)  # "authorization: required", "Authorization: $TOKEN"
    return m.string[m.start() : m.start("secret")] + mark("auth_header") + m.string[m.end("secret") : m.end()]


def _basic(m: re.Match[str]) -> str:
    """A base64 value is a credential only when it decodes to ``user:password``."""
    if decodes_to_login(m.group("secret")):
        return m.string[m.start() : m.start("secret")] + mark("basic_auth") + m.string[m.end("secret") : m.end()]
    return m.group(0)


_PEM = (
    r"-----BEGIN[ A-Za-z0-9_\-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
    # to its END line; a truncated block ends where its base64 body does (not at the end of the
    # text, which would swallow whatever follows it in a prompt)
    r"(?:[\s\S]*?-----END[ A-Za-z0-9_\-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
    r"|[\s\S]{64,4096}?KEY(?: BLOCK)?-----"
    r"|(?:[ \t]*\r?\n[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z-]+: [^\n]*))*)"
)
_VALUE = r"[^\s\"'`]"  # one character of an unquoted command-line value

_RULES: tuple[_Rule, ...] = (
    _Rule("private_key", re.compile(_PEM), ("PRIVATE KEY",)),
    _Rule(
        "slack_webhook",
        re.compile(r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-+]{8,}"),
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
            r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s{0,5}(?:=>|:=|=|:)\s{0,5}[\"']?"
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
            # not a variable named for it (``expected_authorization = …``); HTTP_AUTHORIZATION is a header
            r"(?i)(?<![A-Za-z0-9])(?<![a-z0-9]_)authorization[\"'`]?\s{0,5}[:=]\s{0,5}[\"'`]?"
            # a scheme (Bearer, SSWS, …) is a word followed by the credential
            r"(?:(?:bearer|basic|token|digest|bot|apikey|sso-key|ssws|[A-Za-z][A-Za-z0-9_\-]{1,24}(?=\s{1,5}[^\s\"'`\\,;]{8}))"
            r"\s{1,5})?(?P<secret>[^\s\"'`\\,;]{4,})"
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
    _Rule(
        "basic_auth",
        re.compile(r"(?<![A-Za-z0-9])Basic\s{1,5}(?P<secret>[A-Za-z0-9+/]{8,}={0,2})"),
        ("Basic",),
        replace=_basic,
        anchored=True,
    ),
    _Rule(
        "basic_auth",  # a Docker config.json entry: base64 of user:password
        re.compile(r"\"auth\"\s{0,5}:\s{0,5}\"(?P<secret>[A-Za-z0-9+/]{8,}={0,2})\""),
        ('"auth"',),
        replace=_basic,
        anchored=True,
    ),
    _Rule(
        "cookie",
        re.compile(
            r"(?i)(?<![A-Za-z0-9])cookie[\"']?\s{0,5}:\s{0,5}(?P<secret>[^\s\"'\\;=]{1,256}=[^\n\"'\\]{1,4096})"
        ),
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
        "slack_token",  # short legacy tokens, below the token pass's shortest candidate
        re.compile(r"xox(?:[abprse]-(?:\d-)?|o-\d{1,20}-)[A-Za-z0-9\-]{8,}(?![A-Za-z0-9])"),
        ("xox",),
        anchored=True,
    ),
    _Rule(
        "facebook_token",  # an app access token: <app id>|<app secret>
        re.compile(r"(?<=[0-9]{15})(?<![0-9]{17})(?:\||%7C)(?P<secret>[0-9A-Za-z_\-]{27,40})(?![A-Za-z0-9])"),
        ("|", "%7C"),
        replace=_keep_prefix_group("facebook_token", require_digit=True),
        anchored=True,
    ),
    _Rule(
        "azure_registry_password",  # 42 base64 characters, "+ACR", 6 more
        re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{42}\+ACR[A-Za-z0-9]{6}(?![A-Za-z0-9])"),
        ("+ACR",),
    ),
    _Rule("endorlabs_key", re.compile(r"(?<![A-Za-z0-9])endr\+[A-Za-z0-9\-]{16}(?![A-Za-z0-9])"), ("endr+",)),
    _Rule("braintree_token", re.compile(r"access_token\$production\$[0-9a-z]{16}\$[0-9a-z]{32}"), ("$production$",)),
    _Rule(
        "salesforce_token",  # <org id>!<session>: the part after "!"
        re.compile(r"(?<=00[A-Za-z0-9]{13})![A-Za-z0-9_.]{90,120}"),
        ("!",),
        anchored=True,
    ),
    _Rule(
        "telegram_bot_token",
        re.compile(r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_\-]{32,33}(?![A-Za-z0-9])"),
        (":AA",),
    ),
    _Rule(
        "password_hash",  # crypt(3) and hashcat formats: $1$, $2b$, $5$, $6$, $y$, $argon2id$, $krb5asrep$
        re.compile(
            r"(?<![A-Za-z0-9$])\$(?:1|2[abxy]?|5|6|7|8|9|y|gy|sha1|md5|argon2(?:id|i|d)|scrypt"
            r"|pbkdf2(?:-sha\d{1,3})?|krb5(?:asrep|tgs|pa)|bcrypt-sha256)\$[A-Za-z0-9./=,:@$+*_-]{16,1024}"
        ),
        ("$",),
        anchored=True,
        replace=lambda m: mark("password_hash") if m.group().count("$") >= 3 else m.group(),
    ),
    _Rule(
        "password",  # prose: the password is 'Secret123'
        re.compile(
            r"(?i)(?<![A-Za-z0-9])pass(?:word|phrase)\b[^\n\"']{0,40}?\bis[ \t]{1,5}(?P<quote>[\"'`])"
            r"(?P<secret>[^\s\"'`]{4,128})(?P=quote)"
        ),
        ("pass",),
        lower=True,
        replace=_keep_if_secret("password"),
        anchored=True,
    ),
    _Rule(
        "password",  # a secret compared with a literal: password == "…", creds.Secret != '…'
        re.compile(r"(?:===?|!==?)[ \t]{0,5}(?P<quote>[\"'])(?P<secret>[^\s\"']{4,256})(?P=quote)"),
        ("==", "!="),
        replace=_compared_with_secret,
        anchored=True,
    ),
    _Rule(
        "password",  # a setting with no operator: password "…" (Gradle, Ruby DSLs); a quoted value only
        re.compile(
            r"(?i)(?<![A-Za-z0-9_.$-])(?:password|passwd)[ \t]{1,5}(?P<quote>[\"'])"
            r"(?P<secret>[^\s\"'`]{4,256})(?P=quote)"
        ),
        ("password", "passwd"),
        lower=True,
        replace=_keep_if_secret("password"),
        anchored=True,
    ),
    _Rule(
        "password",  # a PowerShell or Windows flag: -Password …, -Secret …
        re.compile(
            r"(?i)(?<![A-Za-z0-9_.$-])-(?:password|passwd|secret|token)[ \t]{1,5}(?P<quote>[\"']?)"
            r"(?P<secret>[^\s\"'`|;,)<>{}]{4,256})(?P=quote)"
        ),
        ("-password", "-passwd", "-secret", "-token"),
        lower=True,
        replace=_keep_if_secret("password"),
        anchored=True,
    ),
    _Rule(
        "password",  # PsExec \\host -u user -p password
        re.compile(
            r"(?i)\bpsexec(?:64)?(?:\.exe)?\b[^\n]{0,300}?\s-u[ \t]{1,5}\S{1,128}[ \t]{1,5}-p[ \t]{1,5}"
            r"(?P<quote>[\"']?)(?P<secret>[^\s\"']{1,256})(?P=quote)"
        ),
        ("psexec",),
        lower=True,
        replace=_keep_if_secret("password"),
        anchored=True,
    ),
    _Rule(
        "password",  # .NET: new NetworkCredential("user", "password"), DirectoryEntry(path, user, password)
        re.compile(
            r"(?:NetworkCredential|DirectoryEntry|PSCredential)\((?:\s{0,20}[^,()]{0,256},){1,2}\s{0,20}"
            r"(?P<quote>\\?\")(?P<secret>[^\"\\\n]{1,256})\\?\"\s{0,20}\)"
        ),
        ("NetworkCredential(", "DirectoryEntry(", "PSCredential("),
        replace=_keep_if_secret("password"),
    ),
    _Rule(
        "password",  # <add key="SmtpPassword" value="…"/> (.NET configuration files)
        re.compile(
            r"(?i)key[ \t]{0,5}=[ \t]{0,5}\"[^\"\n]{0,60}(?:password|passwd|pwd|secret|token|apikey|api_key)\""
            r"[ \t]{1,20}value[ \t]{0,5}=[ \t]{0,5}(?P<quote>\")(?P<secret>[^\"\n]{1,512})\""
        ),
        ("key=", "key ="),
        lower=True,
        replace=_keep_if_secret("password"),
        anchored=True,
    ),
    _Rule(
        "password",  # <Pass>…</Pass>, <Password encoding="base64">…</Password>, < passphrase >…</passphrase>
        re.compile(
            r"(?i)<[ \t]{0,5}(?P<tag>pass|password|passwd|pwd|passphrase)(?:[ \t][^<>\n]{0,100})?>"
            r"[ \t]{0,5}(?P<secret>[^<>\s]{1,512})[ \t]{0,5}<[ \t]{0,5}/[ \t]{0,5}(?P=tag)[ \t]{0,5}>"
        ),
        ("<pass", "<pwd", "< ", "<\t"),
        lower=True,
        replace=_keep_if_secret("password"),
        anchored=True,
    ),
    _Rule(
        "docker_config",  # a Kubernetes secret's .dockerconfigjson / .dockercfg: the registry logins, base64
        re.compile(
            r"\.docker(?:configjson|cfg)[\"']?[ \t]{0,5}:[ \t|>-]{0,8}[\"']?(?P<secret>[A-Za-z0-9+/=]{8,65536})"
        ),
        (".dockerc",),
        replace=_keep_prefix_group("docker_config"),
        anchored=True,
    ),
    _Rule(
        "flyio_token",  # Authorization: FlyV1 fm2_…,fm2_… (the scheme word, then the token list)
        re.compile(r"FlyV1[ \t]{1,3}(?P<secret>[A-Za-z0-9=_\-,/+]{40,8192})"),
        ("FlyV1",),
        replace=_keep_prefix_group("flyio_token"),
        anchored=True,
    ),
    _Rule(
        "webhook",  # a self-hosted chat server's incoming webhook: https://<host>/hooks/<generated id>
        re.compile(
            r"https?://[A-Za-z0-9.-]{1,128}(?::\d{1,5})?/hooks/(?P<secret>[A-Za-z0-9_\-]{20,128})(?![A-Za-z0-9_\-])"
        ),
        ("/hooks/",),
        replace=lambda m: _WEBHOOK_ID(m) if looks_generated(m.group("secret")) else m.group(0),
    ),
    _Rule(
        "softlayer_key",  # https://api.softlayer.com/soap/v3.1/<API key>: the key is the path's last part
        re.compile(r"api\.softlayer\.com/(?:soap|rest)/v3(?:\.1)?/(?P<secret>[A-Za-z0-9]{64})(?![A-Za-z0-9])"),
        ("api.softlayer.com/",),
        replace=_keep_prefix_group("softlayer_key"),
        anchored=True,
    ),
    _Rule(
        "vault_unseal_key",  # "Unseal Key 1: <base64>", vault operator unseal <base64>
        re.compile(
            r"(?i)(?:unseal key(?:[ \t]{1,3}\d{1,2})?:|operator[ \t]{1,5}unseal)[ \t]{1,5}"
            r"(?P<secret>[A-Za-z0-9+/]{40,100}={0,2})(?![A-Za-z0-9+/])"
        ),
        ("unseal",),
        lower=True,
        replace=_keep_prefix_group("vault_unseal_key"),
    ),
    _Rule(
        "teams_webhook",
        re.compile(
            r"https?://[A-Za-z0-9.-]{0,64}(?:outlook\.office(?:365)?\.com|webhook\.office\.com)/webhook(?:b2)?/"
            r"[^\s\"'`<>]{20,1024}"
        ),
        ("/webhook",),
    ),
    _Rule(
        "private_key",  # a PEM private key, base64-encoded once more ("-----BEGIN" is "LS0tLS1CRUdJTi")
        re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,16384}={0,2}"),
        ("LS0tLS1CRUdJTi",),
        anchored=True,
    ),
    _Rule(
        "cli_password",  # curl -u user:password, curl --user user:password
        re.compile(
            rf"(?<![A-Za-z0-9])curl\b[^\n]{{0,500}}?\s(?:-[A-Za-z]{{0,8}}u|--user)(?:\s{{1,5}}|=)[\"']?[^\s:\"']{{1,256}}:"
            rf"(?P<secret>{_VALUE}{{1,256}})"
        ),
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
        "cli_password",  # sshpass -p PASSWORD, sshpass -p 'PASSWORD'
        re.compile(r"sshpass\s{1,5}-p\s{0,5}(?P<quote>[\"']?)(?P<secret>[^\s\"']{1,256})(?P=quote)"),
        ("sshpass",),
        replace=_keep_prefix_group("cli_password", check_value=True),
        anchored=True,
    ),
    _Rule(
        "private_key",  # a PuTTY .ppk file: the base64 lines after "Private-Lines: <n>"
        re.compile(
            r"Private-Lines:[ \t]{0,5}\d{1,4}[ \t]*\r?\n(?P<secret>[A-Za-z0-9+/=]{1,128}(?:\r?\n[A-Za-z0-9+/=]{1,128}){0,400})"
        ),
        ("Private-Lines",),
        replace=_keep_prefix_group("private_key"),
        anchored=True,
    ),
    _Rule(
        "netrc_password",
        re.compile(
            r'(?<![A-Za-z0-9])machine\s{1,5}\S{1,256}\s{1,5}login\s{1,5}\S{1,256}\s{1,5}password\s{1,5}(?P<secret>[^\s"]{1,256})'
        ),
        ("machine",),
        replace=_keep_prefix_group("netrc_password", check_value=True),
        anchored=True,
    ),
)


def apply_rules(text: str) -> str:
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


def redact_private_keys(text: str) -> str:
    """PEM private-key blocks, done before every other pass so that no body line is left behind."""
    return _RULES[0].apply(text) if "PRIVATE KEY" in text else text
