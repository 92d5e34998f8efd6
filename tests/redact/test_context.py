"""Pass 2 (redact/context.py): a value that is a secret because of what surrounds it — a PEM block,
URL credentials, headers, command-line passwords, ``.netrc`` lines, SAS signatures — and the same
words with no secret after them left alone."""

from __future__ import annotations

import base64

import pytest

from skillopt_sleep.redact.context import apply_rules, redact_private_keys

SECRET = "Tr0ub4dor3x"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"https://alice:{SECRET}@db.example.com/x", "url_credentials"),
        ("Authorization: Bearer abcdefghijklmnop1234567890", "auth_header"),
        ("Authorization: Basic " + base64.b64encode(f"alice:{SECRET}".encode()).decode(), "auth_header"),
        (f"curl -u alice:{SECRET} https://x", "cli_password"),
        (f"mysql -p{SECRET}", "cli_password"),
        (f"Connect-VIServer -Server vc.lab -User admin -Password {SECRET}", "password"),
        (f"machine api.example.com login alice password {SECRET}", "netrc_password"),
        ("root:$1$OKgLCmVl$d02jECa4DXn/oXX0R.MoQ/:19000:0:99999:7:::", "password_hash"),
        (f"https://a.blob.core.windows.net/c?sv=2021&sig={SECRET}aB3dE5gH7jK9mN1p%3D", "azure_sas_signature"),
    ],
)
def test_a_value_its_context_makes_a_secret_is_redacted(text: str, kind: str) -> None:
    out = apply_rules(text)
    assert f"[REDACTED:{kind}]" in out and SECRET not in out and "d02jECa4" not in out


@pytest.mark.parametrize(
    "text",
    [
        "Authorization: Bearer $TOKEN",
        "the Authorization header carries a bearer token",
        "--password $PASSWORD",
        'echo "$1$2"',
        "Reset the password in the settings page",
    ],
)
def test_the_same_words_with_no_secret_stay(text: str) -> None:
    assert apply_rules(text) == text


def test_a_private_key_block_goes_whole_and_a_public_one_stays() -> None:
    body = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"
    block = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"
    assert redact_private_keys(f"before\n{block}\nafter") == "before\n[REDACTED:private_key]\nafter"
    unterminated = redact_private_keys(f"-----BEGIN RSA PRIVATE KEY-----\n{body}\nmore\n")
    assert body not in unterminated and "more" not in unterminated
    public = "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----"
    assert redact_private_keys(public) == public
