"""What else an agent loads on every request besides the documents a night writes: its context.

A night replays each task with the documents the agent would load. Besides the memory file and the
skill, some agents put more of the project's files whole into every request; a replay without them
tells the model less than the agent does, and the optimizer, not seeing them, may propose a rule
they already state. These files are read, shown and fingerprinted with the documents, and never
written:

- ``AGENTS.md``, for an agent that reads it without being told to (``agents.py``) and keeps its own
  memory elsewhere (both Copilots, Cursor).
- GitHub Copilot (CLI and VS Code): the instruction files ``.github/instructions/**/*.instructions.md``
  that apply to every file — no ``applyTo`` in their front matter, or one of ``**``, ``**/*``, ``*``.
  Observed with the Copilot CLI (``tests/documents/test_context_real_copilot.py``): those are put
  whole into the system prompt, in path order; one whose ``applyTo`` names narrower paths (or a list)
  is only listed, pattern and path, for the model to open when it works on a matching file, so a
  replay, which offers no tool, leaves it out.
- Cursor (editor and CLI): the project rules ``.cursor/rules/**/*.mdc`` with ``alwaysApply: true``
  (from the documented format, not recorded), except the night's own rule file; the CLI also reads
  ``CLAUDE.md`` at the project's root.

Bounds: at most ``MAX_FILES`` files of ``MAX_BYTES`` each, regular files only, found without
following a link to a folder; a file that is a link out of the project, not a regular file, too
large or not UTF-8 is left out and said so (``Context.skipped``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from skillopt_sleep.documents.agents import AGENT_DOCUMENTS, AGENTS_MD
from skillopt_sleep.documents.containment import OutsideDocument, contained
from skillopt_sleep.files import read_regular

MAX_FILES = 32  # context files a night reads at most
MAX_BYTES = 256 * 1024  # of each
COPILOT_INSTRUCTIONS = ".github/instructions"
CURSOR_RULES = ".cursor/rules"
EVERY_FILE = frozenset({"**", "**/*", "*"})  # an ``applyTo`` that matches every file

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


@dataclass(frozen=True)
class ContextFile:
    path: Path  # as found under the project
    name: str  # relative to the project, as the documents name it to the model
    text: str


@dataclass(frozen=True)
class Context:
    files: tuple[ContextFile, ...] = ()
    skipped: tuple[str, ...] = field(default=())  # one line per file left out, and why


def front_matter(text: str) -> dict[str, str]:
    """The ``key: value`` lines of a leading ``---`` block (values unquoted); {} without one."""
    found = _FRONT_MATTER.match(text)
    if not found:
        return {}
    out = {}
    for line in found.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t", "#")):
            out[key.strip()] = value.strip().strip("'\"").strip()
    return out


def applies_to_every_file(text: str) -> bool:
    """A Copilot instruction file the agent puts whole into every request (module docstring)."""
    apply_to = front_matter(text).get("applyTo")
    return apply_to is None or apply_to in EVERY_FILE


def always_applied(text: str) -> bool:
    """A Cursor project rule read on every request."""
    return front_matter(text).get("alwaysApply", "").lower() == "true"


def load_context(project: Path, agent: str, memory: Path) -> Context:
    """The context files of ``agent`` in ``project`` (module docstring), in the order read."""
    if agent not in AGENT_DOCUMENTS:
        return Context()
    documents = AGENT_DOCUMENTS[agent]
    candidates: list[tuple[Path, Callable[[str], bool] | None]] = []  # with what it must say
    if documents.reads_agents_md and memory.name != AGENTS_MD:
        candidates.append((project / AGENTS_MD, None))
    if agent in ("copilot", "vscode-copilot"):
        candidates += [(p, applies_to_every_file) for p in _found(project, COPILOT_INSTRUCTIONS, ".instructions.md")]
    if agent == "cursor-cli":
        candidates.append((project / "CLAUDE.md", None))
    if agent in ("cursor", "cursor-cli"):
        candidates += [(p, always_applied) for p in _found(project, CURSOR_RULES, ".mdc") if p != memory]
    files: list[ContextFile] = []
    skipped: list[str] = []
    for path, wanted in candidates:
        if len(files) >= MAX_FILES:
            skipped.append(f"{path}: more than {MAX_FILES} context files; the rest are left out")
            break
        text, why = _read(project, path)
        if why:
            skipped.append(why)
        elif text is not None and (wanted is None or wanted(text)):
            files.append(ContextFile(path, path.relative_to(project).as_posix(), text))
    return Context(tuple(files), tuple(skipped))


def context_notes(files: tuple[ContextFile, ...], skipped: tuple[str, ...]) -> list[str]:
    """What the night's report says of the context: the files read, and each one left out."""
    if not files:
        return list(skipped)
    names = ", ".join(f.name for f in files)
    return [f"read as context, never written: {names} (the agent loads them on every request)", *skipped]


def _found(project: Path, folder: str, suffix: str) -> list[Path]:
    """Files named ``*suffix`` under ``project/folder``, in path order, without following a link to
    a folder (and at most a few times ``MAX_FILES`` looked at)."""
    root = project / folder
    if not root.is_dir() or root.is_symlink():
        return []
    out: list[Path] = []
    for current, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        out += [Path(current) / n for n in sorted(names) if n.endswith(suffix)]
        if len(out) > 4 * MAX_FILES:
            break
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def _read(project: Path, path: Path) -> tuple[str | None, str]:
    """(text, "") or (None, one line saying why it is left out); (None, "") when there is no file."""
    try:
        contained(path, project, "the project")
        data = read_regular(path, MAX_BYTES)
    except OutsideDocument as exc:
        return None, exc.message.split("; refusing")[0] + "; left out of the context"
    except (FileNotFoundError, NotADirectoryError):
        return None, ""
    except OSError as exc:
        return None, f"{path}: {exc.strerror or exc}; left out of the context"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, f"{path}: not UTF-8 text; left out of the context"
