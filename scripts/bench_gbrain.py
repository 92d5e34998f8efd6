"""The four seed skills of gbrain-evals' ``skillopt-v1`` benchmark, converted from their published
files, learned night after night on the simulator; prints one JSON object.

Each seed is a skill with a flaw (``SKILL.md``), 15 benchmark tasks and 6 held-out tasks
(``benchmark.jsonl`` / ``held-out.jsonl``: ``task_id``, ``task``, ``judge``). Converted: the skill
goes to ``.claude/skills/<its name>/SKILL.md`` of a fresh project (the night's skill), the benchmark
tasks are the train split and the held-out tasks the val split, each task named by the skill
(``skill_hint``; no kind, so a rule serves the whole skill), its checks kept where the judges know
the op (others are listed as dropped). Then ``--nights`` nights each, adopting what is accepted.

Per seed and knob set, after each night: the held-out score (the mean of every check over
``--samples`` answers a task, the simulator answering under the documents on disk), the
substance the answers keep (the share of each task's points of substance, ``substance`` knob: what
no check measures), calls, and the rules adopted — each with its document, whether it quotes
regex syntax (``check_words.quoted_syntax``) and what it supersedes.

    python scripts/bench_gbrain.py --data path/to/gbrain-evals/eval/data/skillopt-v1
    python scripts/bench_gbrain.py --data DIR --knobs "follow=0.9,base=0.3" --nights 5
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from skillopt_sleep import night  # noqa: E402
from skillopt_sleep.staging.adoption import adopt  # noqa: E402
from skillopt_sleep.backends.sim import SimBackend  # noqa: E402
from skillopt_sleep.backends.sim.knobs import knobs_from_options  # noqa: E402
from skillopt_sleep.backends.sim.target import substance_points  # noqa: E402
from skillopt_sleep.checks.words import quoted_syntax  # noqa: E402
from skillopt_sleep.config import Config  # noqa: E402
from skillopt_sleep.documents.managed_block import load_documents  # noqa: E402
from skillopt_sleep.replay.dream import attempt_request  # noqa: E402
from skillopt_sleep.checks.judges import RULE_OPS, score_rule, validate_check  # noqa: E402
from skillopt_sleep.mining.taskfile import tasks_document  # noqa: E402
from skillopt_sleep.types import TaskRecord  # noqa: E402

SEEDS = ("seed-missing-structure", "seed-no-brain-first", "seed-no-verdict", "seed-verbose")
# the knob sets of the published comparison; every set also gives answers 4 points of substance
KNOB_SETS = ("follow=1.0,base=0.2", "follow=0.9,base=0.3", "follow=1.0,base=0.2,verbose=2000")
SUBSTANCE = 4


def skill_name(text: str) -> str:
    found = re.search(r"^name:\s*([a-z0-9][a-z0-9-]*)\s*$", text, re.M)
    if not found:
        raise ValueError("the seed's SKILL.md names no skill")
    return found.group(1)


def convert(path: Path, split: str, skill: str, dropped: list[str]) -> list[TaskRecord]:
    """One published tasks file as this engine's tasks."""
    tasks = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        checks = []
        for check in (item.get("judge") or {}).get("checks") or []:
            if check.get("op") in RULE_OPS:
                checks.append(validate_check(check))
            else:
                dropped.append(f"{path.parent.name}/{path.name}: {check.get('op')}")
        if checks:
            tasks.append(
                TaskRecord(
                    id=f"{split}-{item['task_id']}",
                    intent=item["task"],
                    skill_hint=skill,
                    judge={"kind": "rule", "checks": checks},
                    split=split,
                )
            )
    return tasks


def measure(spec: str, project: Path, skill: str, tasks: list[TaskRecord], samples: int) -> dict[str, float]:
    """The held-out score and the substance kept, the simulator answering under the documents on disk."""
    backend = SimBackend(knobs_from_options(dict(kv.split("=") for kv in spec.split(":", 1)[1].split(","))))
    docs = load_documents(project, "claude", skill)
    scores, kept = [], []
    for task in tasks:
        points = substance_points(task.id, SUBSTANCE)
        for sample in range(samples):
            reply = backend.complete(attempt_request(task, docs, 1000 + sample))
            scores.append(score_rule(task.judge["checks"], reply.text, reply.tools_called).soft)
            kept.append(sum(p in reply.text for p in points) / len(points))
    return {"score": round(sum(scores) / len(scores), 4), "substance": round(sum(kept) / len(kept), 4)}


def run_seed(data: Path, seed: str, knobs: str, nights: int, samples: int, sim_seed: int) -> dict[str, Any]:
    folder = data / seed
    skill_text = (folder / "SKILL.md").read_text(encoding="utf-8")
    skill = skill_name(skill_text)
    dropped: list[str] = []
    train = convert(folder / "benchmark.jsonl", "train", skill, dropped)
    val = convert(folder / "held-out.jsonl", "val", skill, dropped)
    spec = f"sim:{knobs},substance={SUBSTANCE},seed={sim_seed}"
    with tempfile.TemporaryDirectory(prefix="skillopt-bench-gbrain-") as tmp:
        root = Path(tmp)
        os.environ["SKILLOPT_SLEEP_HOME"] = str(root / "home")
        project = root / "proj"
        (project / ".claude" / "skills" / skill).mkdir(parents=True)
        (project / ".claude" / "skills" / skill / "SKILL.md").write_text(skill_text, encoding="utf-8")
        (project / "CLAUDE.md").write_text("# Project\n", encoding="utf-8")
        tasks_file = root / "tasks.json"
        tasks_file.write_text(json.dumps(tasks_document(train + val, True)), encoding="utf-8")
        rows: list[dict[str, Any]] = [{"night": 0, **measure(spec, project, skill, val, samples)}]
        for n in range(1, nights + 1):
            config = Config(backend=spec, agent="claude", skill_name=skill)
            report = night.run_night(
                night.NightOptions(project=project, config=config, mode="run", tasks_file=tasks_file)
            )
            adopted = []
            if report.status == "staged" and report.accepted_edits:
                adopt(project, report.night_id, allow_simulated=True, config=config)
                adopted = [
                    {
                        "rule": e.content,
                        "document": "CLAUDE.md" if e.target == "memory" else "SKILL.md",
                        "supersedes": e.supersedes,
                        "quotes_syntax": quoted_syntax(e.content),
                    }
                    for e in report.accepted_edits
                ]
            rows.append(
                {
                    "night": n,
                    "status": report.status,
                    "calls": sum(report.calls.values()),
                    **measure(spec, project, skill, val, samples),
                    "adopted": adopted,
                    "refused": [
                        {"rule": r["edit"]["content"], "why": r["reasons"][0][:200]} for r in report.rejected_edits
                    ],
                }
            )
        docs = load_documents(project, "claude", skill)
    return {
        "seed": seed,
        "skill": skill,
        "knobs": spec,
        "train": len(train),
        "val": len(val),
        "dropped_checks": sorted(set(dropped)),
        "nights": rows,
        "memory_rules": docs.memory.rules(),
        "skill_rules": docs.skill.rules(),
        "rules_quoting_syntax": [r for r in docs.memory.rules() + docs.skill.rules() if quoted_syntax(r)],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    ap.add_argument(
        "--data",
        type=Path,
        required=True,
        help="the skillopt-v1 directory of a gbrain-evals checkout (eval/data/skillopt-v1)",
    )
    ap.add_argument("--seeds", default=",".join(SEEDS), help="comma-separated seed folders (default all four)")
    ap.add_argument("--knobs", action="append", help="a sim knob set, repeatable (default the three published)")
    ap.add_argument("--nights", type=int, default=3)
    ap.add_argument("--samples", type=int, default=8, help="answers a held-out task for the score (default 8)")
    ap.add_argument("--sim-seed", type=int, default=0)
    args = ap.parse_args(argv)
    missing = [s for s in args.seeds.split(",") if not (args.data / s / "SKILL.md").is_file()]
    if missing:
        ap.error(f"no seed skill under {args.data}: {', '.join(missing)}")
    started = time.monotonic()
    runs = [
        run_seed(args.data, seed, knobs, args.nights, args.samples, args.sim_seed)
        for knobs in (args.knobs or KNOB_SETS)
        for seed in args.seeds.split(",")
    ]
    print(
        json.dumps(
            {
                "benchmark": "gbrain",
                "data": str(args.data),
                "nights": args.nights,
                "samples": args.samples,
                "substance": SUBSTANCE,
                "runs": runs,
                "wall_s": round(time.monotonic() - started, 1),
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
