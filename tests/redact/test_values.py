"""What a value assigned to a secret-named key is (redact/values.py): a secret, or code, a
placeholder or prose, which stay so a redacted prompt can still be mined."""

from __future__ import annotations

import base64

import pytest

from skillopt_sleep.redact.values import decodes_to_login, has_digit, is_secret_value, mark, random_looking


@pytest.mark.parametrize("value", ["Tr0ub4dor&3x", "mypassword1", "hunter2hunter2"])
def test_a_password_is_a_secret_quoted_or_not(value: str) -> None:
    assert is_secret_value(value, quoted=True) and is_secret_value(value, quoted=False)


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("${DB_PASSWORD}", False),
        ("<your-password>", True),
        ("os.environ", False),
        ("get_token()", False),
        ("settings.AWS_ACCESS_KEY_ID", False),
        ("Enter your password here.", True),
        ("we", False),  # "token: we" in prose
        ("ab", True),
    ],
)
def test_code_placeholders_prose_and_scraps_are_not(value: str, quoted: bool) -> None:
    assert not is_secret_value(value, quoted=quoted)


def test_random_looking_needs_length_and_a_digit_or_both_cases() -> None:
    assert random_looking("aB3dE5gH7jK9") and random_looking("abcdefghij1") and random_looking("abcdeFGHIJ")
    assert not random_looking("hello_world_value") and not random_looking("aB3")


def test_a_base64_login_is_recognised() -> None:
    assert decodes_to_login(base64.b64encode(b"alice:Tr0ub4dor3x").decode().rstrip("="))
    assert not decodes_to_login(base64.b64encode(b"just some words").decode())
    assert not decodes_to_login("not base64 at all!")


def test_the_mark_names_the_kind() -> None:
    assert mark("secret") == "[REDACTED:secret]" and has_digit("ab1") and not has_digit("abc")
