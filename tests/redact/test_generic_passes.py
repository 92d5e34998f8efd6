"""Credentials found by their form rather than a listed vendor prefix, and the look-alikes that must
stay: ids the model APIs write, names, digests, base64 of text or files."""

from __future__ import annotations

import base64
import random
import string

import pytest

from skillopt_sleep.redact import redact

RNG = random.Random(20261126)
B62 = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = B62) -> str:
    """``n`` random characters of ``alphabet``, with each class the alphabet has (digits, cases)."""
    classes = [cls for cls in (str.isdigit, str.isupper, str.islower) if any(cls(c) for c in alphabet)]
    while True:
        value = "".join(RNG.choice(alphabet) for _ in range(n))
        if all(any(cls(c) for c in value) for cls in classes):
            return value


PREFIXED = rand(32)
LOWER = rand(48, string.ascii_lowercase + string.digits)


@pytest.mark.parametrize(
    "text, secret",
    [
        # a short service prefix that no list names, then a generated body
        (f"export ZQX_KEY_FILE=/tmp/x; zqx_{PREFIXED} is the one", PREFIXED),
        (f"use qwk-{PREFIXED[:20]}_{PREFIXED[20:]}", PREFIXED[:20]),
        (f"token=abc; xk.live.{PREFIXED}", PREFIXED),
        (f"key {LOWER[:4]}-{PREFIXED}", PREFIXED),
        # base64url without a prefix: long, random, both cases and digits
        (f"it printed {rand(44, B62 + '-_')} and stopped", None),
        # <id>-<64 characters>
        (f"api key 3-{rand(64)}", None),
    ],
)
def test_a_generated_token_is_redacted_without_a_listed_prefix(text, secret):
    out = redact(text)
    assert "[REDACTED:" in out
    if secret is not None:
        assert secret not in out
    assert redact(out) == out


@pytest.mark.parametrize(
    "text",
    [
        "msg_01XFDUDYJgAACzvnptvVoYEL and toolu_01A09q90qw90lq917835lq9x",
        "req_011CT6fZ3Yd9gN6VQ7P1o8sH failed; chatcmpl-9BhXy2oK3mQpL5nR7sT1uV4wX6yZ8a",
        "run-7c9e6679-7425-40de-944b-e07fc1f90ae7 finished",
        "from .beta_memory_tool_20250818_view_command import BetaMemoryTool20250818ViewCommand",
        "    SecurityConst.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,",
        "Host key fingerprint is SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8.",
        "golang.org/x/net v0.21.0 h1:AQyHROFCyhKIBlEZpc2TMtsZu2ix1yiD8SPWXo0AnE4=",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl jane@host",
        "ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'",
        "msg = '" + base64.b64encode(b"The quick brown fox jumps over the lazy dog again").decode() + "'",
        "PNG = '" + base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(40))).decode() + "'",
        "django.contrib.auth.hashers.Argon2PasswordHasher",
        "commit-" + "3f2a9c" * 6 + "1b2c",
        'GRANT_TYPE_REFRESH_TOKEN = "refresh_token"',
        "token_type: 'access-token'",
        "            _enforce_credentials=_enforce_credentials,",
        'ENV_IDENTITY_TOKEN = "ANTHROPIC_IDENTITY_TOKEN"',
    ],
)
def test_look_alikes_stay(text):
    assert redact(text) == text


@pytest.mark.parametrize(
    "hashed",
    [
        "$1$OKgLCmVl$d02jECa4DXn/oXX0R.MoQ/",
        "$2b$12$" + rand(53, B62 + "./"),
        "$6$rounds=5000$" + rand(16) + "$" + rand(86, B62 + "./"),
        "$argon2id$v=19$m=65536,t=3,p=4$" + rand(22) + "$" + rand(43),
        "$krb5asrep$23$user@example.com:" + rand(32, "0123456789abcdef") + "$" + rand(64, "0123456789abcdef"),
    ],
)
def test_a_password_hash_is_redacted(hashed):
    out = redact(f"root:{hashed}:19000:0:99999:7:::")
    assert hashed not in out and "[REDACTED:password_hash]" in out


def test_shell_positional_dollars_stay():
    for text in ('echo "$1$2"', "awk '{print $1$3}' file", "price: $5$ and $6$"):
        assert redact(text) == text


SECRET = "Tr0ub4dor&3x"


@pytest.mark.parametrize(
    "text",
    [
        f"The default password is '{SECRET}'",
        f'if user.password == "{SECRET}":',
        f"if creds.Secret != '{SECRET}' {{",
        f"credentials {{\n  username 'deploy'\n  password '{SECRET}'\n}}",
        f"Connect-VIServer -Server vc.lab -User admin -Password {SECRET}",
        f"psexec \\\\10.0.0.5 -u Administrator -p {SECRET} cmd",
        f'new NetworkCredential("deploy@example.com", "{SECRET}")',
        f'<add key="SmtpPassword" value="{SECRET}"/>',
        f"  :password       => '{SECRET}',",
    ],
)
def test_a_password_in_code_prose_or_config_is_redacted(text):
    out = redact(text)
    assert SECRET not in out and "[REDACTED:" in out


@pytest.mark.parametrize(
    "text",
    [
        "Reset the password in the settings page",
        "if password == confirm_password:",
        "-Password $password -User $user",
        "the password is stored in the vault",
        '<add key="PasswordPolicy" value="strict"/>',
    ],
)
def test_passwords_named_but_not_given_stay(text):
    assert redact(text) == text


@pytest.mark.parametrize(
    "text, secret",
    [
        (f"clarifai SECRET {rand(32)}", None),
        (f"newsapi key {rand(32, '0123456789abcdef')}", None),
        (f"os.environ.get('WEATHER_API_KEY', '{PREFIXED}')", PREFIXED),
        (f'  fbApiKey:            "{PREFIXED}",', PREFIXED),
        ('"scalewayKey": "qldbcyko-9quq-dr47-g6h3-dwrmibiusteg",', "qldbcyko-9quq-dr47-g6h3-dwrmibiusteg"),
        (f"sonar.login={rand(40, '0123456789abcdef')}", None),
    ],
)
def test_a_labelled_value_is_redacted_in_more_forms(text, secret):
    out = redact(text)
    assert "[REDACTED:" in out
    if secret is not None:
        assert secret not in out


def test_a_vault_unseal_key_a_teams_webhook_and_a_base64_pem_are_redacted():
    unseal = base64.b64encode(bytes(RNG.randrange(256) for _ in range(33))).decode()
    assert unseal not in redact(f"Unseal Key 2: {unseal}")
    hook = f"https://contoso.webhook.office.com/webhookb2/{rand(8)}@{rand(8)}/IncomingWebhook/{rand(32)}/{rand(8)}"
    assert "office.com" not in redact(f"curl -d @msg.json {hook}")
    pem = base64.b64encode(b"-----BEGIN RSA PRIVATE KEY-----\n" + bytes(RNG.randrange(256) for _ in range(90))).decode()
    assert redact(f"PRIVATE_KEY_B64={pem}") == "PRIVATE_KEY_B64=[REDACTED:private_key]"
