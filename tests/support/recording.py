"""What the transcript recorders (``scripts/record_*.py``) share: a CLI's TUI driven in tmux, the
waits on the fake model, the ground truth each keeps of the sessions it drove, the fixtures it
writes, and the run of a recording in a throwaway root.

Fixtures do not depend on the machine that recorded them: the throwaway root is replaced by
``PLACEHOLDER_ROOT`` in names and contents, and gzip stores no timestamp.
"""

from __future__ import annotations

import argparse
import gzip
import json
import secrets
import shlex
import shutil
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sized
from pathlib import Path
from typing import Any, Protocol, TypeVar

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "real"
PLACEHOLDER_ROOT = "/tmp/skillopt-rec"
TURN_TIMEOUT = 90.0


def pasted_secret() -> str:
    """A GitHub token shape (``redact`` knows it), random on every recording: what a person might
    paste into a session by mistake."""
    return "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))


# -- driving a TUI --------------------------------------------------------------------------------


class Tmux:
    """One detached tmux session running a CLI in a fixed-size window."""

    def __init__(self, name: str, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.name = name
        assignments = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
        shell = f"cd {shlex.quote(str(cwd))} && exec env -i {assignments} {shlex.join(command)}"
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, timeout=10)
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", name, "-x", "150", "-y", "45", shell], check=True, timeout=10
        )

    def screen(self) -> str:
        out = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True, timeout=10
        )
        return out.stdout

    def keys(self, *keys: str, literal: bool = False) -> None:
        subprocess.run(
            ["tmux", "send-keys", "-t", self.name, *(["-l"] if literal else []), *keys], check=True, timeout=10
        )

    def type_line(self, text: str) -> None:
        """Type ``text``, wait until it shows (the TUIs treat a fast Enter as part of a paste), press Enter."""
        self.keys(text, literal=True)
        try:
            wait_until(f"{text[:30]!r} on screen", lambda: text[-20:] in self.screen().replace("\n", ""), 30)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; the screen:\n{self.screen()}") from None
        time.sleep(1.0)
        self.keys("Enter")

    def alive(self) -> bool:
        return subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True, timeout=10).returncode == 0

    def kill(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True, timeout=10)


def wait_until(what: str, check: Callable[..., bool], timeout: float = TURN_TIMEOUT) -> None:
    """Poll ``check()`` until it holds. It is called with no arguments; ``...`` lets a loop pass a
    lambda that binds its turn's values as defaults (``lambda b=before: ...``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise TimeoutError(f"timed out waiting for {what}")


class Requested(Protocol):
    """A fake model server: the requests it has had so far (``tests/support/http_base.py``)."""

    @property
    def requests(self) -> Sized: ...


def settle(fake: Requested, quiet: float = 3.0, timeout: float = TURN_TIMEOUT) -> None:
    """Wait until the fake has had no request for ``quiet`` seconds."""
    deadline = time.monotonic() + timeout
    count, since = len(fake.requests), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        if len(fake.requests) != count:
            count, since = len(fake.requests), time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
    raise TimeoutError("the CLI kept calling the model")


def files_containing(root: Path, needle: str) -> list[Path]:
    """The ``*.jsonl`` files under ``root`` whose text holds ``needle``."""
    found = []
    for path in root.rglob("*.jsonl"):
        try:
            if needle in path.read_text(encoding="utf-8", errors="replace"):
                found.append(path)
        except OSError:
            continue
    return found


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
