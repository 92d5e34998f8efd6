"""The reference engine's nights for ``bench_versus.py``: pip ``skillopt`` 0.2.0, in its own
virtualenv, driven through its ``claude`` backend by a stand-in ``claude`` on PATH that forwards
each prompt to the world's Anthropic Messages endpoint; it adopts what it accepts."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import versus_server as vs  # noqa: E402
import versus_world as vw  # noqa: E402
import versus_worlds_extra as extra  # noqa: E402
from versus_judging import classified, truths  # noqa: E402

REFERENCE_TIMEOUT = 900
LEARNED_START = "<!-- SKILLOPT-SLEEP:LEARNED START -->"  # the reference's managed block (a format fact)
LEARNED_END = "<!-- SKILLOPT-SLEEP:LEARNED END -->"


def learned_lines(text: str) -> list[str]:
    start, end = text.find(LEARNED_START), text.find(LEARNED_END)
    if start < 0 or end < start:
        return []
    block = text[start + len(LEARNED_START) : end]
    return [ln.strip()[2:].strip() for ln in block.splitlines() if ln.strip().startswith("- ")]


def reference_tasks(project: Path) -> dict[str, Any]:
    """The world's tasks in the reference's task-file format (``skillopt_sleep.tasks.v1``)."""
    return {
        "format": "skillopt_sleep.tasks.v1",
        "project": str(project),
        "reviewed": True,
        "tasks": [
            {
                "id": t.id,
                "project": str(project),
                "intent": t.intent,
                "reference_kind": "rule",
                "judge": {"kind": "rule", "checks": list(t.checks)},
                "tags": [t.kind],
                "split": t.split,
            }
            for t in vw.world_tasks()
        ],
    }


def run_reference(
    python: str, seed: int, nights: int, world: str, corr: float = 0.0, drift: float = 0.0
) -> dict[str, Any]:
    world = extra.logic(world)
    knobs = vw.knobs_for(seed, corr, drift)
    with tempfile.TemporaryDirectory(prefix="skillopt-bench-versus-ref-") as tmp:
        root = Path(tmp)
        project, claude_home, home, bin_dir = root / "proj", root / "claude", root / "home", root / "bin"
        skill = claude_home / "skills" / "skillopt-sleep-learned" / "SKILL.md"
        for d in (project, skill.parent, home, bin_dir):
            d.mkdir(parents=True, exist_ok=True)
        skill.write_text(vw.SKILL_TEXT, encoding="utf-8")
        memory = project / "CLAUDE.md"
        memory.write_text(vw.MEMORY_TEXT, encoding="utf-8")
        tasks_file = root / "tasks.json"
        tasks_file.write_text(json.dumps(reference_tasks(project)), encoding="utf-8")
        stand_in = bin_dir / "claude"
        stand_in.write_text(f"#!{sys.executable}\n{vs.STAND_IN}", encoding="utf-8")
        stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
        the_world = vs.World(seed, world, corr, drift)
        server = vs.serve(the_world)
        env = {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "VERSUS_WORLD_URL": f"http://127.0.0.1:{server.server_address[1]}",
            "SKILLOPT_SLEEP_WORKERS": "1",
        }

        def documents() -> str:
            return skill.read_text(encoding="utf-8") + "\n" + memory.read_text(encoding="utf-8")

        def rules() -> list[str]:
            return learned_lines(skill.read_text(encoding="utf-8")) + learned_lines(memory.read_text(encoding="utf-8"))

        rows: list[dict[str, Any]] = [{"night": 0, "calls": 0, "prompt_chars": 0, **truths(knobs, documents(), world)}]
        try:
            for n in range(1, nights + 1):
                before, (calls0, chars0) = rules(), the_world.snapshot()
                out = subprocess.run(
                    [
                        python,
                        "-I",
                        "-m",
                        "skillopt_sleep",
                        "run",
                        "--project",
                        str(project),
                        "--backend",
                        "claude",
                        "--claude-home",
                        str(claude_home),
                        "--tasks-file",
                        str(tasks_file),
                        "--auto-adopt",
                        "--json",
                    ],
                    cwd=project,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=REFERENCE_TIMEOUT,
                )
                if out.returncode != 0:
                    raise RuntimeError(f"reference night {n} exited {out.returncode}: {out.stderr.strip()[-300:]}")
                result = json.loads(out.stdout)
                calls1, chars1 = the_world.snapshot()
                by_purpose = dict(calls1 - calls0)
                after = rules()
                rows.append(
                    {
                        "night": n,
                        "status": result.get("gate_action"),
                        "accepted": result.get("accepted"),
                        "calls": sum(by_purpose.values()),
                        "calls_by_purpose": by_purpose,
                        "prompt_chars": chars1 - chars0,
                        "adopted": classified([r for r in after if r not in before], world),
                        **truths(knobs, documents(), world),
                    }
                )
            final = classified(rules(), world)
        finally:
            server.shutdown()
            server.server_close()
        return {
            "engine": "reference",
            "seed": seed,
            "nights": rows,
            "final_rules": final,
            "repeat_agreement": the_world.agreement.summary(),
        }
