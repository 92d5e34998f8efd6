from __future__ import annotations

from skillopt_sleep.store.debris import clean_debris
from skillopt_sleep.files import temp_name
from skillopt_sleep.paths import project_dirs


def test_only_the_engines_own_debris_is_removed(tmp_path):
    project = tmp_path / "proj"
    dirs = project_dirs(project)
    skill = project / ".claude" / "skills" / "x" / "SKILL.md"
    debris = [
        dirs.staging / ".tmp-n1-abcd" / "manifest.json",
        dirs.tmp / "evidence-n1.jsonl",
        temp_name(dirs.root / "adoptions.jsonl"),
        temp_name(dirs.backups / "n1" / "memory" / "CLAUDE.md.undo.json"),
        temp_name(project / "CLAUDE.md"),
        temp_name(skill),
    ]
    kept = [
        dirs.staging / "n1" / "manifest.json",
        project / "CLAUDE.md",
        temp_name(project / "setup.py"),
        skill.parent / "notes.md",
    ]
    for path in debris + kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    assert clean_debris(project, [project / "CLAUDE.md", skill]) == len(debris)
    assert not any(p.exists() for p in debris)
    assert not (dirs.staging / ".tmp-n1-abcd").exists()
    assert all(p.exists() for p in kept)
