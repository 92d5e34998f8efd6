"""VS Code GitHub Copilot Chat sessions: ``<User dir>/workspaceStorage/<id>/chatSessions/<session
id>.jsonl`` (older builds: ``<session id>.json``), the User dir being ``~/.config/Code/User`` on
Linux, ``~/Library/Application Support/Code/User`` on macOS, ``%APPDATA%\\Code\\User`` on Windows
(``docs/agents/vscode-copilot.md``; from the documented format, not recorded).

A ``.jsonl`` file is VS Code's object mutation log of one chat session: a first line
``{"kind": 0, "v": <session>}`` and then changes to it — ``kind`` 1 sets the value at the path
``k``, 2 pushes ``v`` onto the array at ``k`` (cut to length ``i`` first when ``i`` is given),
3 deletes the value at ``k``. When the log grows long VS Code writes the file again as a single
``kind`` 0 line, so the file is read whole and replayed. A ``.json`` file is the session itself.

The session: ``sessionId``, ``creationDate`` (milliseconds), ``requests``. A request is one turn:
``message.text`` (a plain string in the oldest format) is what the person typed, ``timestamp``,
``agent.extensionId`` (the chat participant's extension), ``response`` (parts: markdown text with
no ``kind`` or ``kind: "markdownContent"``, ``thinking``, ``toolInvocationSerialized`` with
``toolId``, ``textEditGroup`` with the edited file's ``uri``), ``modelState.completedAt``. What the
model was sent besides the typed text — attached files, instruction files, the environment — is in
``variableData`` and ``result.metadata``, neither of which is read. The workspace folder (the cwd)
is ``folder`` in the ``workspace.json`` beside ``chatSessions``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import paths
from .base import (
    MAX_WHOLE_FILE_BYTES,
    DigestBuilder,
    as_str,
    clip,
    is_replay_dir,
    open_regular,
    whole_file_records,
    WholeFileSource,
)
from .decode import decode_json_line
from .workspace_storage import file_uri_path, millis, unwrap, workspace_dirs, workspace_folder

NAME = "vscode-copilot"
COPILOT_EXTENSION = "github.copilot-chat"
# The prompt Copilot renders for the model wraps the typed text in ``<userRequest>`` beside these
# blocks; only ``message.text`` is read, so they reach a prompt only if a build ever stores them there.
INJECTED_TAGS = (
    "<environment_info>",
    "<workspace_info>",
    "<context>",
    "<attachments>",
    "<reminderInstructions>",
    "<instructions>",
)
MAX_PATH_DEPTH = 64  # a mutation's path; the session object is a few levels deep


def _step(node: Any, key: Any) -> Any:
    if isinstance(node, dict) and isinstance(key, str):
        return node.get(key)
    if isinstance(node, list) and isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(node):
        return node[key]
    return None


def _parent(state: Any, path: Any) -> tuple[Any, Any] | None:
    """The container holding the last key of ``path``, and that key; None for a bad path."""
    if not isinstance(path, list) or not path or len(path) > MAX_PATH_DEPTH:
        return None
    node = state
    for key in path[:-1]:
        node = _step(node, key)
        if node is None:
            return None
    return node, path[-1]


def apply(state: dict[str, Any], entry: dict[str, Any]) -> bool:
    """Apply one mutation (``kind`` 1, 2 or 3) to ``state``; False when it does not fit it."""
    kind, path = entry.get("kind"), entry.get("k")
    found = _parent(state, path)
    if found is None:
        return False
    node, key = found
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        return False
    if kind == 1 or kind == 3:
        if isinstance(node, dict) and isinstance(key, str):
            if kind == 1:
                node[key] = entry.get("v")
            else:
                node.pop(key, None)
            return True
        if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            if kind == 1:
                node[key] = entry.get("v")
            else:
                node[key] = None  # VS Code sets it to undefined: the index stays
            return True
        return False
    if kind == 2:
        values, cut = entry.get("v"), entry.get("i")
        if values is not None and not isinstance(values, list):
            return False
        if cut is not None and (isinstance(cut, bool) or not isinstance(cut, int) or cut < 0):
            return False
        target = _step(node, key)
        if target is None and isinstance(node, dict) and isinstance(key, str):
            target = node[key] = []  # VS Code starts a missing array
        if not isinstance(target, list):
            return False
        if cut is not None:
            del target[cut:]
        target.extend(values or ())
        return True
    return False


def replay(data: bytes, skipped: Counter[str]) -> dict[str, Any] | None:
    """The session a mutation log ends at; None when it holds no initial state."""
    state: dict[str, Any] | None = None
    for entry in whole_file_records(data, skipped):
        if entry.get("kind") == 0:
            value = entry.get("v")
            if isinstance(value, dict):
                state = value
            else:
                skipped["wrong_field_type"] += 1
        elif state is None or not apply(state, entry):
            skipped["bad_log_entry"] += 1
    return state


def load(data: bytes, legacy: bool, skipped: Counter[str]) -> dict[str, Any] | None:
    if not legacy:
        return replay(data, skipped)
    status, value = decode_json_line(data.strip())
    if status != "ok":
        skipped[status] += 1
        return None
    return value


def _extension(request: dict[str, Any]) -> str | None:
    """The chat participant's extension id, lower-cased; None when the request names none."""
    agent = request.get("agent")
    if not isinstance(agent, dict):
        return None
    value = agent.get("extensionId")
    if isinstance(value, dict):
        value = value.get("_lower") or value.get("value")
    return value.lower() if isinstance(value, str) and value else None


def _message(request: dict[str, Any]) -> str | None:
    message = request.get("message")
    if isinstance(message, dict):
        message = message.get("text")
    return message if isinstance(message, str) else None


def _reply_text(parts: list[Any]) -> str:
    texts = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("kind")
        if kind is None:
            value = part.get("value")
        elif kind == "markdownContent":
            content = part.get("content")
            value = content.get("value") if isinstance(content, dict) else None
        else:
            continue
        if isinstance(value, str):
            texts.append(value)
    return "".join(texts).strip()


def _uri_path(uri: Any) -> str:
    if isinstance(uri, str):
        return file_uri_path(uri)
    if isinstance(uri, dict) and uri.get("scheme") == "file":
        return as_str(uri.get("fsPath")) or as_str(uri.get("path")) or ""
    return ""


class Turns:
    """Walks a session's requests into a DigestBuilder."""

    def __init__(self, builder: DigestBuilder, skipped: Counter[str]) -> None:
        self.builder = builder
        self.skipped = skipped

    def request(self, request: Any) -> None:
        builder, skipped = self.builder, self.skipped
        if not isinstance(request, dict):
            skipped["wrong_field_type"] += 1
            return
        extension = _extension(request)
        if extension is not None and extension != COPILOT_EXTENSION:
            builder.close_turn()
            skipped["other_participant"] += 1
            return
        if request.get("isSystemInitiated") is True:
            builder.close_turn()
            skipped["system_initiated"] += 1
            return
        text = _message(request)
        if text is None:
            builder.close_turn()
            skipped["wrong_field_type"] += 1
            return
        typed = unwrap(text, "userRequest", INJECTED_TAGS)
        if not typed:
            builder.close_turn()
            if typed is None:
                skipped["injected_context"] += 1
            return
        builder.touch(millis(request.get("timestamp")))
        builder.add_prompt(typed)
        self.response(request)

    def response(self, request: dict[str, Any]) -> None:
        builder = self.builder
        parts = request.get("response")
        if parts is None:
            return
        if not isinstance(parts, list):
            self.skipped["wrong_field_type"] += 1
            return
        state = request.get("modelState")
        if isinstance(state, dict):
            builder.touch(millis(state.get("completedAt")))
        for part in parts:
            if not isinstance(part, dict):
                continue
            kind = part.get("kind")
            if kind == "toolInvocationSerialized":
                tool = as_str(part.get("toolId"))
                if tool:
                    builder.add_tool(tool)
            elif kind == "textEditGroup":
                target = _uri_path(part.get("uri"))
                if target:
                    builder.add_file(target)
        text = _reply_text(parts)
        if text or parts:
            builder.new_reply(text)


def read_session(path: str, skipped: Counter[str]) -> tuple[list[DigestBuilder], list[str]]:
    file = Path(path)
    with open_regular(file) as handle:
        data = handle.read(MAX_WHOLE_FILE_BYTES + 1)
    if len(data) > MAX_WHOLE_FILE_BYTES:
        skipped["whole_file_too_large"] += 1
        return [], []
    session = load(data, file.suffix == ".json", skipped)
    if session is None:
        return [], []
    session_id = clip(as_str(session.get("sessionId")) or file.stem, 200)
    folder = workspace_folder(file.parent.parent, skipped)
    if folder and is_replay_dir(folder):
        skipped["own_replay"] += 1
        return [], [session_id]
    builder = DigestBuilder(source=NAME, session_id=session_id, path=path)
    builder.project = clip(folder, 4096)
    builder.touch(millis(session.get("creationDate")))
    requests = session.get("requests")
    if requests is not None and not isinstance(requests, list):
        skipped["wrong_field_type"] += 1
        requests = None
    turns = Turns(builder, skipped)
    for request in requests or ():
        turns.request(request)
    builder.settle()
    return ([builder] if builder.has_content else []), []


class VSCodeCopilotSource(WholeFileSource):
    name = NAME

    def default_home(self) -> Path:
        return paths.vscode_home()

    def discover(self, home: Path, skipped: Counter[str]) -> Iterator[Path]:
        """``workspaceStorage/*/chatSessions/*.jsonl`` and ``*.json`` (unless a ``.jsonl`` of the
        same session is beside it: VS Code carried the session over into the log)."""
        for workspace in workspace_dirs(home, skipped):
            chats = workspace / "chatSessions"
            try:
                names = sorted(os.listdir(chats))
            except FileNotFoundError:
                continue
            except OSError:
                skipped["unreadable_dir"] += 1
                continue
            present = set(names)
            for name in names:
                if name.endswith(".json") and name + "l" in present:
                    skipped["superseded_json"] += 1
                elif name.endswith((".json", ".jsonl")):
                    yield chats / name

    def read_whole(self, path: str, skipped: Counter[str]) -> tuple[list[DigestBuilder], list[str]]:
        return read_session(path, skipped)

    def head_cwds(self, path: Path) -> set[str]:
        folder = workspace_folder(path.parent.parent, Counter())
        return {folder} if folder else set()
