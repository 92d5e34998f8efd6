"""The plugins' launcher (``plugins/codex/bin/skillopt-sleep``, symlinked by the others) loaded as a
module from a given path, so a test can ask it where it would find the package source."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path
from types import ModuleType


def load_launcher(path: Path) -> ModuleType:
    """The launcher at ``path`` (not resolved: it looks for the package source above where it was
    called from, as when a person runs it)."""
    loader = importlib.machinery.SourceFileLoader("skillopt_sleep_plugin_launcher", str(path))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
