"""Exit codes and the one user-facing error type (``errors.py``)."""

from __future__ import annotations

from skillopt_sleep import errors
from skillopt_sleep.errors import EXIT_CODES, EXIT_CONFIG, EXIT_ERROR, UserError


def test_every_exit_code_is_distinct_and_described() -> None:
    codes = {name: value for name, value in vars(errors).items() if name.startswith("EXIT_") and name != "EXIT_CODES"}
    assert len(set(codes.values())) == len(codes), "no two names share a code"
    assert set(EXIT_CODES) == set(codes.values()) and all(text.strip() for text in EXIT_CODES.values())
    assert list(EXIT_CODES) == sorted(EXIT_CODES), "listed in order, as --help shows them"


def test_a_user_error_carries_its_line_and_code() -> None:
    error = UserError("config file is broken", EXIT_CONFIG)
    assert (str(error), error.message, error.code, error.json_printed) == (
        "config file is broken",
        "config file is broken",
        EXIT_CONFIG,
        False,
    )
    assert UserError("something").code == EXIT_ERROR
