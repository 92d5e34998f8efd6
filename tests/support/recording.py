"""What the transcript recorders (``scripts/record_*.py``) share besides driving a TUI
(``tests/support/tui.py``): the ground truth each keeps of the sessions it drove, the fixtures it
writes, and the run of a recording in a throwaway root.

Fixtures do not depend on the machine that recorded them: the throwaway root is replaced by
``PLACEHOLDER_ROOT`` in names and contents, and gzip stores no timestamp.
"""

from __future__ import annotations

import argparse
import gzip
import json
import secrets
import shutil
import string
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "real"
PLACEHOLDER_ROOT = "/tmp/skillopt-rec"


def pasted_secret() -> str:
    """A GitHub token shape (``redact`` knows it), random on every recording: what a person might
    paste into a session by mistake."""
    return "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))


# -- what was recorded ----------------------------------------------------------------------------


class GroundTruth(dict[str, dict[str, Any]]):
    """The facts a recorder knows of each session it drove, by the session's key: its kind
    (interactive, headless, sub-agent) and the prompts a person typed into it."""

    def note(self, key: str, **facts: Any) -> None:
        """A list extends what was noted before (a resumed session's prompts follow the first
        ones, once each, in order); any other value replaces it."""
        entry = self.setdefault(key, {"typed": []})
        for name, value in facts.items():
            if isinstance(value, list):
                entry.setdefault(name, []).extend(value)
            else:
                entry[name] = value


def replacing(*pairs: tuple[str, str]) -> Callable[[str], str]:
    """A function that replaces each ``old`` of ``pairs`` by its ``new``, in order: the throwaway
    root by ``PLACEHOLDER_ROOT``, and any name a CLI derives from it."""

    def portable(text: str) -> str:
        for old, new in pairs:
            text = text.replace(old, new)
        return text

    return portable


def fresh_dir(path: Path) -> None:
    """Remove what an earlier recording left at ``path``: a recording replaces it whole."""
    if path.exists():
        shutil.rmtree(path)


def write_gzipped(target: Path, data: bytes) -> None:
    """``data`` gzipped without a timestamp, so that the same bytes make the same fixture."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(gzip.compress(data, mtime=0))


def write_ground_truth(path: Path, truth: dict[str, Any]) -> None:
    path.write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# -- a recording, start to end ---------------------------------------------------------------------


def recorder_parser(doc: str | None) -> argparse.ArgumentParser:
    """The options every recorder takes (``--out``, ``--keep``); it adds the one naming its CLI."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=FIXTURES)
    parser.add_argument("--keep", action="store_true", help="keep the throwaway root (printed)")
    return parser


class Recording(Protocol):
    def record(self) -> None: ...

    def close(self) -> None: ...


R = TypeVar("R", bound=Recording)


def record(recorder_for: Callable[[Path], R], write_fixtures: Callable[[R, Path], None], out: Path, keep: bool) -> R:
    """Build a recorder in a fresh throwaway root, record, and write the fixtures into ``out``;
    whatever happens, close the recorder and remove the root (with ``keep``, name it instead)."""
    root = Path(tempfile.mkdtemp(prefix="skillopt-rec-"))
    recorder = recorder_for(root)
    try:
        recorder.record()
        write_fixtures(recorder, out)
    finally:
        recorder.close()
        if keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return recorder
