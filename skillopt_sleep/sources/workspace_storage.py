"""What VS Code and the editors built on it (Cursor) share: ``User/workspaceStorage/<id>/``, one
directory per opened folder, with a ``workspace.json`` naming that folder; and the text a person
typed once the editor's own wrappers are taken off (``docs/agents/vscode-copilot.md``,
``docs/agents/cursor.md``).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .base import open_regular
from .decode import decode_json_line

WORKSPACE_FILE = "workspace.json"
MAX_WORKSPACE_FILE_BYTES = 64 * 1024
_DRIVE = re.compile(r"^/[A-Za-z]:")


def millis(value: object) -> str | None:
    """A time in milliseconds since the epoch as ISO text (for ``DigestBuilder.touch``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return datetime.fromtimestamp(value / 1000, tz=timezone.utc).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def file_uri_path(uri: object) -> str:
    """The local path a ``file:`` URI names (``file:///c%3A/x`` -> ``c:/x``); "" for any other
    scheme (a remote or virtual folder lives on no disk here)."""
    if not isinstance(uri, str) or not uri.startswith("file:"):
        return ""
    parts = urlsplit(uri)
    path = unquote(parts.path)
    if not path or "\x00" in path:
        return ""
    if parts.netloc and parts.netloc != "localhost":
        return f"//{parts.netloc}{path}"  # a UNC share
    if _DRIVE.match(path):
        return path[1:]
    return path


def workspace_folder(workspace_dir: Path, skipped: Counter[str]) -> str:
    """The folder a ``workspaceStorage/<id>`` directory belongs to, from its ``workspace.json``:
    ``folder`` (a single-folder window), else the directory of the ``workspace`` file (a
    ``.code-workspace`` of several folders). "" when there is none (counted); a linked
    ``workspace.json`` is not the editor's and is not followed."""
    try:
        with open_regular(workspace_dir / WORKSPACE_FILE, nofollow=True) as handle:
            data = handle.read(MAX_WORKSPACE_FILE_BYTES + 1)
    except FileNotFoundError:
        skipped["no_workspace_folder"] += 1
        return ""
    except OSError:
        skipped["unreadable_file"] += 1
        return ""
    if len(data) > MAX_WORKSPACE_FILE_BYTES:
        skipped["whole_file_too_large"] += 1
        return ""
    status, value = decode_json_line(data.strip())
    if status != "ok":
        skipped[status] += 1
        return ""
    folder = file_uri_path(value.get("folder"))
    if folder:
        return folder
    workspace = file_uri_path(value.get("workspace"))
    if workspace:
        return os.path.dirname(workspace)
    skipped["no_workspace_folder"] += 1  # an empty window, or a remote folder
    return ""


def workspace_dirs(home: Path, skipped: Counter[str]) -> list[Path]:
    """``<home>/workspaceStorage/*`` directories (not symlinks), sorted."""
    try:
        with os.scandir(home / "workspaceStorage") as entries:
            return sorted(Path(entry.path) for entry in entries if entry.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return []
    except OSError:
        skipped["unreadable_dir"] += 1
        return []


def unwrap(text: str, wrapper: str, injected: tuple[str, ...]) -> str | None:
    """What a person typed in a message the editor may have wrapped: the inside of
    ``<wrapper>…</wrapper>`` when the message holds one; None when the message starts with one of
    the ``injected`` context tags and wraps nothing (context the editor added, not a prompt)."""
    text = text.strip()
    opening, closing = f"<{wrapper}>", f"</{wrapper}>"
    start = text.find(opening)
    if start != -1:
        end = text.find(closing, start)
        if end != -1:
            return text[start + len(opening) : end].strip()
    if text.startswith(injected):
        return None
    return text
