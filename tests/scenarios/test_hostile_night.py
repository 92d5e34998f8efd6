"""A hostile night: every place the engine reads replaced, one at a time, by a link to a file
outside the project (holding a marker), a FIFO, or a link to /dev/zero; then the verbs a person
runs (``run`` with the simulator, ``run --resume``, ``status``, ``review``, ``adopt``, ``notice``),
each as its own process with a time limit and a memory cap.

Every verb must end (a hang fails), without a traceback and never with exit 1 (a bug); a refusal is
one line on stderr; the marker reaches no file the engine writes and nothing it prints; and nothing
outside the project and the engine's own state changes (a snapshot of the bytes and mtimes of the
fake HOME, the transcripts and a sibling folder).

The readers themselves are covered one by one in test_special_files.py; this drives the whole CLI.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt_sleep.commands.demo import build_demo_home

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")

MARKER = "HOSTILE-OUTSIDE-MARKER-5d21c0"
KINDS = ("link", "fifo", "zero")
SECONDS = 60  # a verb takes seconds; this only catches a hang
INTERRUPTED = "20261101T000000Z-abcd"
SIM = "sim:correct=1,harmful=0,seed=1"


def _cap_memory() -> None:
    """Far above a night (whose worker threads reserve address space), far below an endless read."""
    limit = 4 * 1024 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _places(w: dict[str, Path], night: str) -> dict[str, Path]:
    """Every place the verbs read: documents, project state, user state, transcripts."""
    p, home, claude = w["project"], w["home"], w["claude"]
    pstate = p / ".skillopt-sleep"
    staged = pstate / "staging" / night
    transcripts = sorted((claude / "projects").rglob("*.jsonl"))
    return {
        "CLAUDE.md": p / "CLAUDE.md",
        "AGENTS.md": p / "AGENTS.md",
        ".claude": p / ".claude",
        ".agents": p / ".agents",
        "skill folder": p / ".claude" / "skills" / "skillopt-sleep-learned",
        "SKILL.md": p / ".claude" / "skills" / "skillopt-sleep-learned" / "SKILL.md",
        "project config": pstate / "config.toml",
        ".skillopt-sleep": pstate,
        "staging folder": pstate / "staging",
        "tasks file": w["root"] / "tasks.json",
        "calls.jsonl": pstate / "nights" / INTERRUPTED / "calls.jsonl",
        "report.json": staged / "report.json",
        "manifest.json": staged / "manifest.json",
        "adoptions ledger": pstate / "adoptions.jsonl",
        "adoption journal": pstate / "journal.json",
        "score cache": pstate / "scores.jsonl",
        "user config": home / "config" / "config.toml",
        "schedule file": home / "config" / "schedule.json",
        "history": home / "state" / "history.jsonl",
        "rejected ledger": home / "state" / "rejected-edits.jsonl",
        "edit evidence": home / "state" / "edit-evidence.json",
        "sessions seen": home / "state" / "sessions-seen.jsonl",
        "tasks archive": home / "state" / "tasks-archive.jsonl",
        "transcript": transcripts[0],
        "codex config": w["userhome"] / ".codex" / "config.toml",
    }


def _cli(w: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SKILLOPT_SLEEP_BACKEND", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEX_HOME", "CLAUDE_CONFIG_DIR")
    }
    env.update({"SKILLOPT_SLEEP_HOME": str(w["home"]), "HOME": str(w["userhome"]), "PATH": str(w["root"] / "bin")})
    try:
        return subprocess.run(
            [sys.executable, "-m", "skillopt_sleep", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=w["project"],
            timeout=SECONDS,
            preexec_fn=_cap_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"skillopt-sleep {' '.join(args)} still running after {SECONDS} s")


def _world(tmp_path: Path) -> tuple[dict[str, Path], str]:
    """A demo project with one staged night behind it, an interrupted night's journal, a tasks
    file, a fake HOME with a Codex config, and a sibling folder outside everything."""
    root = tmp_path / "w"
    home, claude, project = build_demo_home(root)
    w = {
        "root": root,
        "home": home,
        "claude": claude,
        "project": project,
        "userhome": root / "userhome",
        "outside": root / "outside",
    }
    (root / "bin").mkdir()
    (w["userhome"] / ".codex").mkdir(parents=True)
    (w["userhome"] / ".codex" / "config.toml").write_text('model = "gpt-5"\n', encoding="utf-8")
    (w["userhome"] / ".bashrc").write_text("# mine\n", encoding="utf-8")
    w["outside"].mkdir()
    (w["outside"] / "secret.md").write_text(f'{{"note": "{MARKER}"}}\n# {MARKER}\n', encoding="utf-8")
    first = _cli(w, "run", "--claude-home", str(claude), "--backend", SIM, "--agent", "claude", "--quiet")
    assert first.returncode == 0, first.stderr[-2000:]
    night = next(p.name for p in (project / ".skillopt-sleep" / "staging").iterdir() if not p.name.startswith("."))
    journal = project / ".skillopt-sleep" / "nights" / INTERRUPTED / "calls.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_text("", encoding="utf-8")
    from tests.support.tasks import make_tasks, write_tasks_file

    write_tasks_file(root / "tasks.json", make_tasks())
    return w, night


FOLDERS = {".claude", ".agents", "skill folder", ".skillopt-sleep", "staging folder"}


def _plant(path: Path, kind: str, outside: Path, folder: bool = False) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif folder:  # a folder elsewhere, holding the marker where a document would be
        tree = outside / "tree"
        (tree / "skills" / "skillopt-sleep-learned").mkdir(parents=True, exist_ok=True)
        for name in ("SKILL.md", "skills/skillopt-sleep-learned/SKILL.md", "config.toml"):
            (tree / name).write_text(f"# {MARKER}\n", encoding="utf-8")
        path.symlink_to(tree, target_is_directory=True)
    else:
        path.symlink_to(outside / "secret.md")


def _snapshot(*roots: Path) -> dict[str, tuple[bytes | str, int]]:
    seen: dict[str, tuple[bytes | str, int]] = {}
    for root in roots:
        for path in [root, *root.rglob("*")]:
            st = path.lstat()
            if path.is_symlink():
                seen[str(path)] = (os.readlink(path), st.st_mtime_ns)
            elif path.is_file():
                seen[str(path)] = (path.read_bytes(), st.st_mtime_ns)
            else:
                seen[str(path)] = ("", st.st_mtime_ns if not path.is_dir() else 0)
    return seen


def _written(w: dict[str, Path]) -> list[Path]:
    """The regular files the engine writes: project state and user state."""
    out = []
    for root in (w["project"] / ".skillopt-sleep", w["home"]):
        if root.is_symlink():  # planted: what it points to is the test's, not the engine's
            continue
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                out.append(path)
    return out


PLACE_NAMES = [
    "CLAUDE.md",
    "AGENTS.md",
    ".claude",
    ".agents",
    "skill folder",
    "SKILL.md",
    "project config",
    ".skillopt-sleep",
    "staging folder",
    "tasks file",
    "calls.jsonl",
    "report.json",
    "manifest.json",
    "adoptions ledger",
    "adoption journal",
    "score cache",
    "user config",
    "schedule file",
    "history",
    "rejected ledger",
    "edit evidence",
    "sessions seen",
    "tasks archive",
    "transcript",
    "codex config",
]


@pytest.fixture(scope="module")
def world_copy(tmp_path_factory: pytest.TempPathFactory):
    """The world is built once (its first night is the slow part) and copied afresh for each case.

    It holds absolute paths (the staged manifest, the transcripts), so each copy is made at the path
    the world was built at, after the previous case's copy is removed."""
    base = tmp_path_factory.mktemp("hostile")
    w, night = _world(base)
    template = base / "template"
    shutil.copytree(w["root"], template, symlinks=True)

    def fresh() -> tuple[dict[str, Path], str]:
        shutil.rmtree(w["root"])
        shutil.copytree(template, w["root"], symlinks=True)
        return w, night

    return fresh


# the default suite plants each kind in one document and one user store, a FIFO in the resume
# journal and an endless file as a transcript; every other case runs with the slow tests (each
# replays the verbs: seconds each)
QUICK = {("CLAUDE.md", k) for k in KINDS} | {("user config", k) for k in KINDS}
QUICK |= {("calls.jsonl", "fifo"), ("transcript", "zero")}
CASES = [
    pytest.param(place, kind, marks=() if (place, kind) in QUICK else pytest.mark.slow, id=f"{place}-{kind}")
    for place in PLACE_NAMES
    for kind in KINDS
]


@pytest.mark.parametrize("place, kind", CASES)
def test_a_hostile_place_ends_cleanly_and_writes_nothing_outside(world_copy, place: str, kind: str) -> None:
    w, night = world_copy()
    target = _places(w, night)[place]
    _plant(target, kind, w["outside"], folder=place in FOLDERS)
    watched = (w["outside"], w["userhome"], w["claude"])
    before = _snapshot(*watched)
    verbs = [
        ("run", "--claude-home", str(w["claude"]), "--backend", SIM, "--agent", "claude", "--quiet"),
        ("run", "--resume", "--claude-home", str(w["claude"]), "--backend", SIM, "--agent", "claude", "--quiet"),
        ("run", "--tasks-file", str(w["root"] / "tasks.json"), "--backend", SIM, "--agent", "claude", "--quiet"),
        ("status",),
        ("review",),
        ("adopt", "--allow-simulated"),
        ("notice", "--event", "session-end"),
        ("notice",),
    ]
    for verb in verbs:
        done = _cli(w, *verb)
        what = f"{' '.join(verb[:2])} with {place} as {kind}: rc {done.returncode}\n{done.stderr[-3000:]}"
        assert done.returncode != 1 and "Traceback" not in done.stderr, what
        if done.returncode != 0:
            assert len(done.stderr.strip().splitlines()) == 1, what
        assert MARKER not in done.stdout and MARKER not in done.stderr, what
    leaked = [str(p) for p in _written(w) if MARKER.encode() in p.read_bytes()]
    assert not leaked, f"the outside marker is in {leaked}"
    after = _snapshot(*watched)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"outside the project: {changed}"
