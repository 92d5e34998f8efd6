"""The Cursor CLI's chat stores written from hand-made chats (``tests/fixtures/documented/cursor-cli/
chats.json``): per chat, ``chats/<MD5 of the workspace>/<id>/store.db`` with the described ``meta``
and ``blobs`` tables (a protobuf root blob listing JSON message blobs), and ``meta.json`` when the
chat has one."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

DOCUMENTED = Path(__file__).resolve().parents[1] / "fixtures" / "documented"
CURSOR_CLI_CHATS = DOCUMENTED / "cursor-cli" / "chats.json"


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def write_chat(path: Path, chat: dict[str, Any]) -> Path:
    """One chat's ``store.db`` at ``path``: its messages as blobs, the root blob, the ``meta`` row."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    try:
        db.execute("CREATE TABLE IF NOT EXISTS blobs (id TEXT PRIMARY KEY, data BLOB)")
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        ids: list[str] = []
        for message in chat.get("messages", []):
            if isinstance(message, dict) and "again" in message:
                ids.append(ids[message["again"]])
                continue
            data = message if isinstance(message, bytes) else compact(message)
            blob_id = hashlib.sha256(data).hexdigest()
            db.execute("INSERT OR REPLACE INTO blobs VALUES (?, ?)", (blob_id, data))
            ids.append(blob_id)
        root = b"".join(field(1, bytes.fromhex(i)) for i in ids)
        if chat.get("workspace"):
            root += field(9, chat["workspace"].encode("utf-8"))
        root_id = hashlib.sha256(root).hexdigest()
        db.execute("INSERT OR REPLACE INTO blobs VALUES (?, ?)", (root_id, root))
        meta = {**chat["meta"], "latestRootBlobId": root_id} if "meta" in chat else None
        if meta is not None:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('0', ?)", (compact(meta).hex(),))
        db.commit()
    finally:
        db.close()
    if "mtime" in chat:
        seconds = chat["mtime"] / 1000
        os.utime(path, (seconds, seconds))
    return path


def chat_dir(home: Path, chat: dict[str, Any]) -> Path:
    workspace = chat.get("workspace_hash_of", "")
    digest = hashlib.md5(workspace.encode("utf-8")).hexdigest()
    return home / "chats" / digest / chat["id"]


def write_cursor_cli_home(home: Path, chats: list[dict[str, Any]] | None = None) -> Path:
    """A Cursor CLI config dir holding ``chats`` (the fixture's by default)."""
    if chats is None:
        chats = json.loads(CURSOR_CLI_CHATS.read_text(encoding="utf-8"))["chats"]
    for chat in chats:
        directory = chat_dir(home, chat)
        if "meta.json" in chat:
            directory.mkdir(parents=True, exist_ok=True)
            (directory / "meta.json").write_text(json.dumps(chat["meta.json"]), encoding="utf-8")
        write_chat(directory / "store.db", chat)
    return home
