"""Whole-night scenarios run a night, or several, end to end: all are ``slow`` (``python -m pytest
-m "not slow"`` leaves them out; CI runs them)."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.slow)
