"""Hostile transcript files get a clear outcome and lose nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.harvest import CLAUDE_MAIN, PROJECT, append_records, by_id, claude_file, claude_user

from skillopt_sleep.sources import harvest

HARVEST_SCRIPT = """
import json, sys
from pathlib import Path
from skillopt_sleep.sources import harvest
r = harvest(sys.argv[1], source="claude", claude_home=Path(sys.argv[2]), codex_home=Path(sys.argv[3]))
print(json.dumps({"skipped": r.skipped, "ids": sorted(d.session_id for d in r.digests)}))
"""


def harvest_in_child(homes: tuple[Path, Path]) -> dict:
    """In a child with a timeout: a harvest that hangs fails the test instead of the suite."""
    out = subprocess.run(
        [sys.executable, "-c", HARVEST_SCRIPT, PROJECT, str(homes[0]), str(homes[1])],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_fifo_and_a_link_to_dev_zero_are_skipped_not_read(homes: tuple[Path, Path]) -> None:
    folder = claude_file(homes[0], CLAUDE_MAIN).parent
    os.mkfifo(folder / "aaaaaaaa-fifo.jsonl")
    os.symlink("/dev/zero", folder / "bbbbbbbb-zero.jsonl")
    result = harvest_in_child(homes)
    assert result["skipped"]["not_a_regular_file"] == 2
    assert CLAUDE_MAIN in result["ids"]  # the real sessions are still harvested


def test_a_lone_surrogate_is_replaced_at_read(homes: tuple[Path, Path], tmp_path: Path) -> None:
    path = claude_file(homes[0], CLAUDE_MAIN)
    with open(path, "a", encoding="utf-8") as fh:  # Node split an emoji: "\\ud83d" with no pair
        fh.write(json.dumps(claude_user("ship it \ud83d now", ts="2026-11-22T11:00:00.000Z")) + "\n")
    state = tmp_path / "state"
    result = harvest(PROJECT, source="claude", claude_home=homes[0], codex_home=homes[1], state_dir=state)
    prompt = by_id(result)[CLAUDE_MAIN].user_prompts[-1]
    assert prompt == "ship it \ufffd now"
    prompt.encode("utf-8")
    result.commit()  # the digest cache is written as UTF-8 without an error
    again = harvest(PROJECT, source="claude", claude_home=homes[0], codex_home=homes[1], state_dir=state)
    assert by_id(again)[CLAUDE_MAIN].user_prompts[-1] == "ship it \ufffd now"


def test_two_files_with_one_session_id_are_both_kept(homes: tuple[Path, Path], tmp_path: Path) -> None:
    original = claude_file(homes[0], CLAUDE_MAIN)
    copy_in_other_project = homes[0] / "projects" / "-copy" / original.name
    copy_in_other_project.parent.mkdir()
    copy_in_other_project.write_bytes(original.read_bytes())
    append_records(copy_in_other_project, claude_user("only in the copy", ts="2026-11-22T12:00:00.000Z"))
    state = tmp_path / "state"
    first = harvest(PROJECT, source="claude", claude_home=homes[0], codex_home=homes[1], state_dir=state)
    sessions = [d for d in first.digests if d.session_id.startswith(CLAUDE_MAIN)]
    assert len(sessions) == 2, [d.session_id for d in first.digests]
    assert {d.path for d in sessions} == {str(original), str(copy_in_other_project)}
    assert sum("only in the copy" in d.user_prompts for d in sessions) == 1
    first.commit()
    # appending to either file later updates that file's session, and only it
    append_records(original, claude_user("later in the original", ts="2026-11-22T13:00:00.000Z"))
    second = harvest(PROJECT, source="claude", claude_home=homes[0], codex_home=homes[1], state_dir=state)
    again = {d.path: d for d in second.digests if d.session_id.startswith(CLAUDE_MAIN)}
    assert set(again) == {str(original), str(copy_in_other_project)}
    assert again[str(original)].user_prompts[-1] == "later in the original"
    assert "later in the original" not in again[str(copy_in_other_project)].user_prompts
