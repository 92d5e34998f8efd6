"""Fixtures for the command tests."""

from tests.support.scheduler_tools import fake_tools  # noqa: F401  (the fake OS scheduler tools)
