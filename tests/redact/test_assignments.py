"""Pass 3 (redact/assignments.py): a value assigned to a secret-named key, whole, and only when it
is a secret (not code, a placeholder or prose), on its own without the other passes."""

from __future__ import annotations

import pytest

from skillopt_sleep.redact.assignments import SECRET_KEY_NAME, redact_assignments

SECRET = "Tr0ub4dor&3x"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"password={SECRET}", "password=[REDACTED:secret]"),
        (f"DB_PASSWORD={SECRET}q9", "DB_PASSWORD=[REDACTED:secret]"),
        ("password: Tr0ub4dor;3x", "password: [REDACTED:secret]"),
        (f'"api_key": "{SECRET}",', '"api_key": "[REDACTED:secret]",'),
        ("export GH_TOKEN=ab12cd34ef56", "export GH_TOKEN=[REDACTED:secret]"),
        ("auth(token=ab12cd34ef56)+1", "auth(token=[REDACTED:secret])+1"),
    ],
)
def test_the_whole_value_is_redacted(text: str, expected: str) -> None:
    assert redact_assignments(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://x/?token=ab12cd34ef56&page=2", "https://x/?token=[REDACTED:secret]&page=2"),
        ("Password=ab12cd34;Database=sales", "Password=[REDACTED:secret];Database=sales"),
        ("password=ab12cd34 && make", "password=[REDACTED:secret] && make"),
    ],
)
def test_the_next_parameter_or_command_is_not_part_of_the_value(text: str, expected: str) -> None:
    assert redact_assignments(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "password=${DB_PASSWORD}",
        "if password == confirm_password:",
        'GRANT_TYPE_REFRESH_TOKEN = "refresh_token"',
        "credentials=credentials,",
        "token: we will see",
        "sort_key=name",
    ],
)
def test_code_placeholders_and_prose_stay(text: str) -> None:
    assert redact_assignments(text) == text


def test_secret_key_names() -> None:
    assert all(SECRET_KEY_NAME.match(name) for name in ("DB_PASSWORD", "api_key", "clientSecret", "GH_TOKEN"))
    assert not any(SECRET_KEY_NAME.match(name) for name in ("username", "sort_key", "monkey"))
