"""What VS Code and Cursor share (sources/workspace_storage.py): the folder a ``workspaceStorage``
directory belongs to, ``file:`` URIs as local paths, millisecond times, and the typed text inside
an editor's wrapper."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from skillopt_sleep.sources import workspace_storage
from skillopt_sleep.sources.workspace_storage import file_uri_path, millis, unwrap, workspace_dirs, workspace_folder


def test_file_uris_become_local_paths_and_remote_ones_none():
    assert file_uri_path("file:///work/demo%20app") == "/work/demo app"
    assert file_uri_path("file:///c%3A/Users/dev/app") == "c:/Users/dev/app"
    assert file_uri_path("file://server/share/app") == "//server/share/app"
    assert file_uri_path("vscode-remote://ssh-remote%2Bbox/work/app") == ""
    assert file_uri_path("file:///work/a%00b") == ""
    assert file_uri_path(None) == ""


def test_a_single_folder_window_maps_to_its_folder(tmp_path: Path):
    (tmp_path / "workspace.json").write_text(json.dumps({"folder": "file:///work/app"}))
    skipped: Counter[str] = Counter()
    assert workspace_folder(tmp_path, skipped) == "/work/app" and not skipped


def test_a_multi_root_workspace_maps_to_the_directory_of_its_workspace_file(tmp_path: Path):
    (tmp_path / "workspace.json").write_text(json.dumps({"workspace": "file:///work/mono/all.code-workspace"}))
    skipped: Counter[str] = Counter()
    assert workspace_folder(tmp_path, skipped) == "/work/mono" and not skipped
    (tmp_path / "workspace.json").write_text("{" * 10)
    assert workspace_folder(tmp_path, skipped) == "" and skipped == {"malformed_json": 1}


def test_no_oversized_missing_remote_or_linked_workspace_file_names_a_folder(tmp_path: Path, monkeypatch):
    skipped: Counter[str] = Counter()
    assert workspace_folder(tmp_path, skipped) == "" and skipped == {"no_workspace_folder": 1}
    (tmp_path / "workspace.json").write_text(json.dumps({"folder": "vscode-remote://box/work"}))
    assert workspace_folder(tmp_path, skipped) == "" and skipped == {"no_workspace_folder": 2}
    linked = tmp_path / "linked"
    linked.mkdir()
    real = tmp_path / "elsewhere.json"
    real.write_text(json.dumps({"folder": "file:///work/app"}))
    os.symlink(real, linked / "workspace.json")
    assert workspace_folder(linked, skipped) == "" and skipped["unreadable_file"] == 1
    monkeypatch.setattr(workspace_storage, "MAX_WORKSPACE_FILE_BYTES", 8)
    assert workspace_folder(tmp_path, skipped) == "" and skipped["whole_file_too_large"] == 1


def test_workspace_dirs_are_the_directories_not_links_sorted(tmp_path: Path):
    assert workspace_dirs(tmp_path, Counter()) == []
    storage = tmp_path / "workspaceStorage"
    for name in ("b2", "a1"):
        (storage / name).mkdir(parents=True)
    (storage / "file").write_text("x")
    os.symlink(storage / "a1", storage / "c3")
    assert workspace_dirs(tmp_path, Counter()) == [storage / "a1", storage / "b2"]


def test_millis_are_iso_times_and_anything_else_none():
    assert millis(1_700_000_000_000) == "2023-11-14T22:13:20+00:00"
    assert millis(True) is None and millis("1700000000000") is None and millis(10**30) is None


def test_unwrap_keeps_what_was_typed_and_drops_injected_context():
    injected = ("<attachments>", "<environment_info>")
    assert unwrap("  <user_query>\n fix it \n</user_query> trailing", "user_query", injected) == "fix it"
    assert unwrap("<attachments>a file</attachments>", "user_query", injected) is None
    assert unwrap("<attachments>x</attachments><user_query>do y</user_query>", "user_query", injected) == "do y"
    assert unwrap("plain request", "user_query", injected) == "plain request"
    assert unwrap("<user_query>never closed", "user_query", injected) == "<user_query>never closed"
