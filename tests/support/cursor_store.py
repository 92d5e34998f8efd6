"""Cursor's chat stores written from hand-made rows (``tests/fixtures/documented/cursor/stores.json``):
``state.vscdb`` SQLite files with the documented key-value tables, under a Cursor ``User`` dir."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

DOCUMENTED = Path(__file__).resolve().parents[1] / "fixtures" / "documented"
CURSOR_ROWS = DOCUMENTED / "cursor" / "stores.json"
TABLES = ("ItemTable", "cursorDiskKV")


def write_store(path: Path, tables: dict[str, dict[str, Any]], *, as_blob: bool = True) -> Path:
    """A ``state.vscdb`` with ``tables`` (name -> key -> JSON value, or raw ``bytes`` / ``str``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    try:
        for table in TABLES:
            db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        for table, rows in tables.items():
            for key, value in rows.items():
                if not isinstance(value, (bytes, str)):
                    value = json.dumps(value)
                if as_blob and isinstance(value, str):
                    value = value.encode()
                db.execute(f"INSERT INTO {table} VALUES (?, ?)", (key, value))
        db.commit()
    finally:
        db.close()
    return path


def write_cursor_home(home: Path, rows: dict[str, Any] | None = None) -> Path:
    """A Cursor ``User`` dir holding the stores ``rows`` describes (the fixture's by default)."""
    rows = rows if rows is not None else json.loads(CURSOR_ROWS.read_text(encoding="utf-8"))
    write_store(home / "globalStorage" / "state.vscdb", rows["globalStorage"])
    for workspace_id, workspace in rows.get("workspaceStorage", {}).items():
        directory = home / "workspaceStorage" / workspace_id
        write_store(directory / "state.vscdb", {"ItemTable": workspace.get("ItemTable", {})}, as_blob=False)
        if "workspace.json" in workspace:
            (directory / "workspace.json").write_text(json.dumps(workspace["workspace.json"]), encoding="utf-8")
    return home
