"""Load one of ``scripts/*.py`` as a module, for tests of the benchmarks' own logic."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def script_module(name: str) -> Iterator[ModuleType]:
    """``scripts/<name>.py`` imported under ``name`` (registered in ``sys.modules`` while in use, as
    its pickled jobs and dataclasses need); a generator, for a fixture to ``yield from``."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)
